// Strided <-> dense copies against sequential walkers (forEachOffset from strided.h, and an
// independent recursive walker for ranks beyond its 16 dims), for random shapes and strides,
// transposes, padded rows, zero strides, size-1 dims, offsets, element sizes 1/2/4/8, ranks 0..25,
// empty tensors, and thread counts 1..4.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#include "base/dtype.h"
#include "core/parallel.h"
#include "opapi/tensor.h"
#include "opapi/tensor_copy.h"

namespace {

struct ThreadCountGuard {
  ~ThreadCountGuard() { gradkit::setThreadCount(0); }
};

/** Element offsets of a view in row-major order, by recursion over dims (any rank). */
void walk(const aclTensor& view, size_t dim, int64_t at, std::vector<int64_t>& out) {
  if (dim == view.viewDims.size()) {
    out.push_back(at);
    return;
  }
  for (int64_t i = 0; i < view.viewDims[dim]; ++i) walk(view, dim + 1, at + i * view.strides[dim], out);
}

std::vector<int64_t> offsetsOf(const aclTensor& view) {
  std::vector<int64_t> out;
  walk(view, 0, view.offset, out);
  return out;
}

/** Storage elements needed to hold every element of the view. */
int64_t storageNeeded(const aclTensor& view) {
  int64_t last = view.offset;
  for (size_t d = 0; d < view.viewDims.size(); ++d) {
    if (view.viewDims[d] == 0) return view.offset;
    last += (view.viewDims[d] - 1) * view.strides[d];
  }
  return last + 1;
}

/** A random view: dims, a random dim order for the strides, padding, zero strides, an offset. */
aclTensor randomView(std::mt19937& rng, int rank, aclDataType dtype, bool allowZeroStrides) {
  aclTensor view;
  view.dtype = dtype;
  std::uniform_int_distribution<int64_t> size(1, rank > 10 ? 2 : 5);
  std::uniform_int_distribution<int> coin(0, 3);
  for (int d = 0; d < rank; ++d) view.viewDims.push_back(coin(rng) == 0 ? 1 : size(rng));
  // Strides: dense in a random dim order (a generalized transpose), with random padding.
  std::vector<int> order(static_cast<size_t>(rank));
  std::iota(order.begin(), order.end(), 0);
  if (coin(rng) != 0) std::shuffle(order.begin(), order.end(), rng);
  view.strides.assign(static_cast<size_t>(rank), 0);
  int64_t step = 1 + (coin(rng) == 0 ? 1 : 0);  // sometimes an innermost stride of 2
  for (int i = rank - 1; i >= 0; --i) {
    const int d = order[static_cast<size_t>(i)];
    view.strides[static_cast<size_t>(d)] = step;
    step *= view.viewDims[static_cast<size_t>(d)] + (coin(rng) == 0 ? 1 : 0);
  }
  for (int d = 0; d < rank; ++d) {
    if (view.viewDims[static_cast<size_t>(d)] == 1 && coin(rng) == 0) view.strides[static_cast<size_t>(d)] = 12345;
    if (allowZeroStrides && coin(rng) == 0) view.strides[static_cast<size_t>(d)] = 0;
  }
  view.offset = coin(rng);
  return view;
}

/** Runs both directions on `view` and compares with the walkers. */
void checkView(aclTensor view, uint32_t seed, bool checkWrite) {
  const int64_t elementSize = static_cast<int64_t>(gradkit::dtypeSize(view.dtype));
  const int64_t storageElements = storageNeeded(view) + 3;
  std::vector<unsigned char> storage(static_cast<size_t>(storageElements * elementSize));
  std::mt19937 rng(seed);
  for (auto& byte : storage) byte = static_cast<unsigned char>(rng());
  view.data = storage.data();
  const std::vector<int64_t> offsets = offsetsOf(view);
  ASSERT_EQ(static_cast<int64_t>(offsets.size()), view.numel());
  if (view.dim() <= 16) {  // forEachOffset keeps 16 indices
    std::vector<int64_t> walked;
    gradkit::forEachOffset(view, [&](int64_t at) { walked.push_back(at); });
    ASSERT_EQ(walked, offsets);
  }

  // Read side: dense[i] = storage[offsets[i]].
  std::vector<unsigned char> dense(offsets.size() * static_cast<size_t>(elementSize) + 16, 0xA5);
  gradkit::copyToContiguous(view, dense.data());
  for (size_t i = 0; i < offsets.size(); ++i) {
    ASSERT_EQ(std::memcmp(dense.data() + i * elementSize, storage.data() + offsets[i] * elementSize,
                          static_cast<size_t>(elementSize)),
              0)
        << "element " << i;
  }
  for (size_t i = offsets.size() * static_cast<size_t>(elementSize); i < dense.size(); ++i) {
    ASSERT_EQ(dense[i], 0xA5) << "wrote past the dense buffer";
  }

  if (!checkWrite) return;
  // Write side: storage[offsets[i]] = source[i]; every other byte untouched.
  std::vector<unsigned char> source(offsets.size() * static_cast<size_t>(elementSize));
  for (auto& byte : source) byte = static_cast<unsigned char>(rng());
  std::vector<unsigned char> expected = storage;
  for (size_t i = 0; i < offsets.size(); ++i) {
    std::memcpy(expected.data() + offsets[i] * elementSize, source.data() + i * elementSize,
                static_cast<size_t>(elementSize));
  }
  gradkit::copyFromContiguous(source.data(), view);
  ASSERT_EQ(storage, expected);
}

constexpr aclDataType kTypes[] = {ACL_INT8, ACL_FLOAT16, ACL_FLOAT, ACL_INT64};

TEST(Strided, RandomViewsAllRanksAndElementSizes) {
  ThreadCountGuard guard;
  std::mt19937 rng(1);
  uint32_t seed = 0;
  for (int threads : {1, 2, 3}) {
    gradkit::setThreadCount(threads);
    for (int rank = 0; rank <= 25; ++rank) {
      for (const aclDataType type : kTypes) {
        for (int trial = 0; trial < 6; ++trial) {
          const bool zeroStrides = trial % 3 == 2;
          const aclTensor view = randomView(rng, rank, type, zeroStrides);
          SCOPED_TRACE(::testing::Message()
                       << "rank " << rank << " dtype " << type << " dims " << gradkit::dimsString(view.viewDims)
                       << " strides " << gradkit::dimsString(view.strides) << " offset " << view.offset);
          // Zero strides alias elements: only the read side is defined for them.
          checkView(view, ++seed, !zeroStrides);
        }
      }
    }
  }
}

TEST(Strided, LargeViewsTakeEveryParallelPath) {
  ThreadCountGuard guard;
  struct Case {
    std::vector<int64_t> dims, strides;
    int64_t offset;
  };
  const Case cases[] = {
      {{300, 1000}, {1000, 1}, 0},          // contiguous: chunked memcpy
      {{300, 1000}, {1000, 1}, 7},          // contiguous with an offset
      {{2000, 300}, {304, 1}, 3},           // padded rows: memcpy per row
      {{1000, 500}, {1, 1000}, 0},          // transpose: element loop
      {{40, 50, 60}, {1, 40 * 60, 40}, 5},  // 3-d permutation
      {{64, 1, 4096}, {4096, 9, 1}, 0},     // size-1 dim with an arbitrary stride: contiguous
  };
  uint32_t seed = 1000;
  for (int threads = 1; threads <= 4; ++threads) {
    gradkit::setThreadCount(threads);
    for (const Case& c : cases) {
      for (const aclDataType type : {ACL_INT8, ACL_FLOAT}) {
        aclTensor view;
        view.viewDims = c.dims;
        view.strides = c.strides;
        view.offset = c.offset;
        view.dtype = type;
        SCOPED_TRACE(::testing::Message() << "threads " << threads << " dims " << gradkit::dimsString(c.dims));
        checkView(view, ++seed, true);
      }
    }
  }
}

TEST(Strided, BroadcastReadsRepeatElements) {
  std::vector<float> storage = {1.0f, 2.0f, 3.0f};
  aclTensor view;
  view.viewDims = {4, 3};
  view.strides = {0, 1};
  view.dtype = ACL_FLOAT;
  view.data = storage.data();
  std::vector<float> dense(12);
  gradkit::copyToContiguous(view, dense.data());
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 3; ++j) EXPECT_EQ(dense[static_cast<size_t>(i * 3 + j)], storage[static_cast<size_t>(j)]);
  }
}

TEST(Strided, BroadcastWriteKeepsTheLastValueInRowMajorOrder) {
  ThreadCountGuard guard;
  gradkit::setThreadCount(4);
  std::vector<float> storage(1000, -1.0f);
  aclTensor view;
  view.viewDims = {2000, 1000};
  view.strides = {0, 1};
  view.dtype = ACL_FLOAT;
  view.data = storage.data();
  std::vector<float> source(2000 * 1000);
  std::iota(source.begin(), source.end(), 0.0f);
  gradkit::copyFromContiguous(source.data(), view);
  for (int j = 0; j < 1000; ++j)
    EXPECT_EQ(storage[static_cast<size_t>(j)], source[static_cast<size_t>(1999 * 1000 + j)]);
}

TEST(Strided, EmptyAndZeroDimViews) {
  aclTensor empty;
  empty.viewDims = {3, 0, 2};
  empty.strides = {2, 2, 1};
  empty.dtype = ACL_FLOAT;
  empty.data = nullptr;
  gradkit::copyToContiguous(empty, nullptr);  // nothing to read or write
  gradkit::copyFromContiguous(nullptr, empty);

  double value = 2.5, out = 0.0;
  aclTensor scalar;
  scalar.dtype = ACL_DOUBLE;
  scalar.data = &value;
  gradkit::copyToContiguous(scalar, &out);
  EXPECT_EQ(out, 2.5);
  const double written = -7.0;
  gradkit::copyFromContiguous(&written, scalar);
  EXPECT_EQ(value, -7.0);
}

TEST(Strided, TypesWithoutByteSizeAreRejected) {
  unsigned char storage[4] = {};
  aclTensor view;
  view.viewDims = {4};
  view.strides = {1};
  view.dtype = ACL_INT4;
  view.data = storage;
  EXPECT_THROW(gradkit::copyToContiguous(view, storage), std::invalid_argument);
}

}  // namespace
