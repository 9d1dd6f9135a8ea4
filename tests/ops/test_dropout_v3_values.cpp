// DropoutV3 output and mask against the golden (written from the formulas, its own Philox), bit for bit: every
// dtype and tail length, probabilities (including the p == 0 / p == 1 short-cuts and the DBL_EPSILON mask fills),
// seeds and offsets, specials (a dropped Inf/NaN gives NaN), the mask equal to GenMaskV2's, strided input, out and
// mask, 0-d and 8-d, in place, and a large input on the streaming-store path for any thread count.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <vector>

#include "aclnnop/aclnn_dropout_gen_mask.h"
#include "aclnnop/aclnn_dropout_v3.h"
#include "core/parallel.h"
#include "golden/dropout_v3.h"
#include "ops/op_test_util.h"
#include "ops/random_data.h"

namespace gradkit::test {
namespace {

const aclDataType kDtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};

int64_t maskBytes(int64_t n) { return (n + 127) / 128 * 16; }

// Runs the public API on views and waits for the result.
void runDropoutV3(const aclTensor* input, double p, int64_t seed, int64_t offset, aclTensor* out, aclTensor* mask) {
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(aclnnDropoutV3GetWorkspaceSize(input, nullptr, p, seed, offset, out, mask, &size, &executor), ACLNN_SUCCESS)
      << recentError();
  std::vector<unsigned char> workspace(size);
  ASSERT_EQ(aclnnDropoutV3(workspace.data(), size, executor, nullptr), ACLNN_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << recentError();
}

struct Result {
  std::vector<unsigned char> out;
  std::vector<uint8_t> mask;
};

// Dense 1-D call on `input` (raw bytes of dtype).
Result dropoutDense(aclDataType dtype, const std::vector<unsigned char>& input, double p, int64_t seed,
                    int64_t offset) {
  const int64_t n = static_cast<int64_t>(input.size() / aclDataTypeSize(dtype));
  Result result{std::vector<unsigned char>(input.size(), 0xAB), std::vector<uint8_t>(maskBytes(n), 0x5C)};
  auto x = makeView(const_cast<unsigned char*>(input.data()), dtype, {n});
  auto y = makeView(result.out.data(), dtype, {n});
  auto m = makeView(result.mask.data(), ACL_UINT8, {maskBytes(n)});
  runDropoutV3(x.get(), p, seed, offset, y.get(), m.get());
  return result;
}

Result goldenOf(aclDataType dtype, const std::vector<unsigned char>& input, double p, int64_t seed, int64_t offset) {
  const int64_t n = static_cast<int64_t>(input.size() / aclDataTypeSize(dtype));
  Result result{std::vector<unsigned char>(input.size()), {}};
  result.mask = golden::dropoutV3(dtype, input.data(), n, p, seed, offset, result.out.data());
  return result;
}

void expectSame(const Result& ours, const Result& want, const std::string& what) {
  EXPECT_EQ(ours.mask, want.mask) << what;
  EXPECT_EQ(ours.out, want.out) << what;
}

TEST(DropoutV3Values, EveryDtypeEveryTailLength) {
  for (aclDataType dtype : kDtypes) {
    for (int64_t n = 1; n <= 300; ++n) {
      const auto x = randomElements(dtype, n, static_cast<uint32_t>(100 + n));
      const Result ours = dropoutDense(dtype, x, 0.3, n * 31, 4 * n);
      const Result want = goldenOf(dtype, x, 0.3, n * 31, 4 * n);
      ASSERT_EQ(ours.mask, want.mask) << "dtype " << dtype << " n " << n;
      ASSERT_EQ(ours.out, want.out) << "dtype " << dtype << " n " << n;
    }
  }
}

TEST(DropoutV3Values, ProbabilitiesSeedsAndOffsets) {
  const double probs[] = {
      0.021, 0.1, 0.15, 0.319, 0.5, 0.9, 0.999, 1e-300, DBL_EPSILON, 4 * DBL_EPSILON, std::nextafter(1.0, 0.0)};
  const int64_t seeds[] = {0, 42, -1, INT64_MIN, 0x123456789abcdef0};
  const int64_t offsets[] = {0, 8, -4, int64_t{1} << 36, INT64_MIN};
  for (aclDataType dtype : kDtypes) {
    const auto x = randomElements(dtype, 1000, 5);
    for (double p : probs) {
      for (int64_t seed : seeds) {
        for (int64_t offset : offsets) {
          expectSame(dropoutDense(dtype, x, p, seed, offset), goldenOf(dtype, x, p, seed, offset),
                     "dtype " + std::to_string(dtype) + " p " + std::to_string(p) + " seed " + std::to_string(seed) +
                         " offset " + std::to_string(offset));
        }
      }
    }
  }
}

TEST(DropoutV3Values, ZeroProbabilityCopiesTheInputBitsAndKeepsEverything) {
  for (aclDataType dtype : kDtypes) {
    auto x = randomElements(dtype, 333, 8);  // NaN, Inf, -0 included: copied bit for bit
    // A signalling NaN too: a copy keeps it, a multiply would make it quiet.
    const uint32_t signalling = dtype == ACL_FLOAT ? 0x7f800001u : dtype == ACL_FLOAT16 ? 0x7c01u : 0x7f81u;
    std::memcpy(x.data(), &signalling, aclDataTypeSize(dtype));
    const Result ours = dropoutDense(dtype, x, 0.0, 1, 0);
    EXPECT_EQ(ours.out, x);
    EXPECT_EQ(ours.mask, std::vector<uint8_t>(maskBytes(333), 0xFF));
  }
}

TEST(DropoutV3Values, ProbabilityOneGivesPositiveZerosEvenForNanAndInf) {
  for (aclDataType dtype : kDtypes) {
    const auto x = randomElements(dtype, 333, 9);
    const Result ours = dropoutDense(dtype, x, 1.0, 1, 0);
    EXPECT_EQ(ours.out, std::vector<unsigned char>(x.size(), 0));
    EXPECT_EQ(ours.mask, std::vector<uint8_t>(maskBytes(333), 0x00));
  }
}

TEST(DropoutV3Values, DroppedSpecialsAndKeptValuesFollowTheFormula) {
  // p = 0.5: scale 2. Elements whose bit is 0 give x * 0 (NaN for Inf/NaN, -0 for negatives); kept ones 2x.
  const int64_t n = 512;
  std::vector<float> x(n);
  const float specials[] = {INFINITY, -INFINITY, NAN, -3.0f, 5.0f, -0.0f, 0.0f, 1e38f};
  for (int64_t i = 0; i < n; ++i) x[i] = specials[i % 8];
  std::vector<unsigned char> bytes(n * 4);
  std::memcpy(bytes.data(), x.data(), bytes.size());
  const Result ours = dropoutDense(ACL_FLOAT, bytes, 0.5, 77, 0);
  int dropped = 0, kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    float y;
    std::memcpy(&y, ours.out.data() + 4 * i, 4);
    const bool keep = (ours.mask[i / 8] >> (i % 8)) & 1;
    (keep ? kept : dropped)++;
    const float want = x[i] * (keep ? 1.0f : 0.0f) * 2.0f;
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(y)) << i;
    } else {
      EXPECT_EQ(y, want) << i;
      EXPECT_EQ(std::signbit(y), std::signbit(want)) << i;
    }
  }
  EXPECT_GT(dropped, 100);
  EXPECT_GT(kept, 100);
  expectSame(ours, goldenOf(ACL_FLOAT, bytes, 0.5, 77, 0), "specials");
}

TEST(DropoutV3Values, MaskIsTheMaskOfGenMaskV2) {
  const int64_t n = 5000;
  const auto x = randomElements(ACL_BF16, n, 3);
  for (double p : {0.0, 0.2, 1e-20, 1.0 - 1e-16, 1.0}) {
    const Result ours = dropoutDense(ACL_BF16, x, p, -99, 64);
    std::vector<uint8_t> genMask(maskBytes(n), 0x11);
    const int64_t dims[1] = {n};
    aclIntArray* shape = aclCreateIntArray(dims, 1);
    auto maskView = makeView(genMask.data(), ACL_UINT8, {maskBytes(n)});
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    ASSERT_EQ(aclnnDropoutGenMaskV2GetWorkspaceSize(shape, p, -99, 64, ACL_BF16, maskView.get(), &size, &executor), 0);
    aclDestroyIntArray(shape);
    ASSERT_EQ(aclnnDropoutGenMaskV2(nullptr, size, executor, nullptr), 0);
    ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
    EXPECT_EQ(ours.mask, genMask) << p;
  }
}

TEST(DropoutV3Values, StridedInputOutAndMaskUseTheLogicalOrder) {
  // A [6, 7, 5] view: input transposed in storage, out with gaps and an offset, mask every other byte.
  const std::vector<int64_t> shape = {6, 7, 5};
  const int64_t n = 210, bytes = maskBytes(n);
  for (aclDataType dtype : kDtypes) {
    const size_t size = aclDataTypeSize(dtype);
    const auto dense = randomElements(dtype, n, 21);
    const Result want = goldenOf(dtype, dense, 0.4, 5, 12);
    const std::vector<int64_t> xStrides = {1, 6, 42}, yStrides = {80, 10, 2};
    std::vector<unsigned char> x(n * size), y((3 + 6 * 80) * size, 0xCD);
    std::vector<uint8_t> m(1 + 2 * bytes, 0x5C);
    for (int64_t i = 0; i < 6; ++i) {
      for (int64_t j = 0; j < 7; ++j) {
        for (int64_t k = 0; k < 5; ++k) {
          const int64_t logical = (i * 7 + j) * 5 + k;
          std::memcpy(&x[(i * xStrides[0] + j * xStrides[1] + k * xStrides[2]) * size], &dense[logical * size], size);
        }
      }
    }
    auto xv = makeView(x.data(), dtype, shape, xStrides, 0, n);
    auto yv = makeView(y.data(), dtype, shape, yStrides, 3, 3 + 6 * 80);
    auto mv = makeView(m.data(), ACL_UINT8, {bytes}, {2}, 1, 1 + 2 * bytes);
    runDropoutV3(xv.get(), 0.4, 5, 12, yv.get(), mv.get());
    std::vector<bool> covered(y.size() / size, false);
    for (int64_t i = 0; i < 6; ++i) {
      for (int64_t j = 0; j < 7; ++j) {
        for (int64_t k = 0; k < 5; ++k) {
          const int64_t logical = (i * 7 + j) * 5 + k;
          const int64_t at = 3 + i * yStrides[0] + j * yStrides[1] + k * yStrides[2];
          covered[at] = true;
          ASSERT_EQ(std::memcmp(&y[at * size], &want.out[logical * size], size), 0) << "element " << logical;
        }
      }
    }
    for (size_t e = 0; e < covered.size(); ++e) {
      if (!covered[e]) {
        ASSERT_EQ(y[e * size], 0xCD) << "wrote outside the view at " << e;
      }
    }
    for (int64_t b = 0; b < static_cast<int64_t>(m.size()); ++b) {
      const bool inView = b % 2 == 1;
      EXPECT_EQ(m[b], inView ? want.mask[b / 2] : 0x5C) << b;
    }
  }
}

TEST(DropoutV3Values, StridedOutForTheShortCuts) {
  // p == 0 into a transposed out (input strided too) and p == 1 into a transposed out.
  const int64_t rows = 9, cols = 13, n = rows * cols;
  const auto dense = randomElements(ACL_FLOAT, n, 4);
  std::vector<unsigned char> xT(n * 4);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) std::memcpy(&xT[(c * rows + r) * 4], &dense[(r * cols + c) * 4], 4);
  }
  for (double p : {0.0, 1.0}) {
    for (bool stridedInput : {false, true}) {
      std::vector<unsigned char> y(n * 4, 0xCD);
      std::vector<uint8_t> m(maskBytes(n), 0x5C);
      auto xv = stridedInput ? makeView(xT.data(), ACL_FLOAT, {rows, cols}, {1, rows})
                             : makeView(const_cast<unsigned char*>(dense.data()), ACL_FLOAT, {rows, cols});
      auto yv = makeView(y.data(), ACL_FLOAT, {rows, cols}, {1, rows});
      auto mv = makeView(m.data(), ACL_UINT8, {maskBytes(n)});
      runDropoutV3(xv.get(), p, 1, 0, yv.get(), mv.get());
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = 0; c < cols; ++c) {
          uint32_t got, want = 0;
          std::memcpy(&got, &y[(c * rows + r) * 4], 4);
          if (p == 0.0) std::memcpy(&want, &dense[(r * cols + c) * 4], 4);
          ASSERT_EQ(got, want) << "p " << p << " strided input " << stridedInput << " at " << r << "," << c;
        }
      }
      EXPECT_EQ(m, std::vector<uint8_t>(maskBytes(n), p == 0.0 ? 0xFF : 0x00));
    }
  }
}

TEST(DropoutV3Values, ZeroDimAndEightDim) {
  for (aclDataType dtype : kDtypes) {
    const auto x = randomElements(dtype, 1, 6);
    std::vector<unsigned char> y(x.size());
    std::vector<uint8_t> m(16, 0x5C);
    auto xv = makeView(const_cast<unsigned char*>(x.data()), dtype, {});
    auto yv = makeView(y.data(), dtype, {});
    auto mv = makeView(m.data(), ACL_UINT8, {16});
    runDropoutV3(xv.get(), 0.5, 3, 0, yv.get(), mv.get());
    expectSame({y, m}, goldenOf(dtype, x, 0.5, 3, 0), "0-d");

    const std::vector<int64_t> shape = {2, 1, 3, 2, 1, 2, 3, 2};
    const auto x8 = randomElements(dtype, 144, 10);
    std::vector<unsigned char> y8(x8.size());
    std::vector<uint8_t> m8(32);
    auto x8v = makeView(const_cast<unsigned char*>(x8.data()), dtype, shape);
    auto y8v = makeView(y8.data(), dtype, shape);
    auto m8v = makeView(m8.data(), ACL_UINT8, {4, 8});
    runDropoutV3(x8v.get(), 0.7, 3, 4, y8v.get(), m8v.get());
    expectSame({y8, m8}, goldenOf(dtype, x8, 0.7, 3, 4), "8-d");
  }
}

TEST(DropoutV3Values, InPlaceOnTheInput) {
  for (aclDataType dtype : kDtypes) {
    auto x = randomElements(dtype, 1000, 12);
    const Result want = goldenOf(dtype, x, 0.25, 8, 16);
    std::vector<uint8_t> m(maskBytes(1000));
    auto xv = makeView(x.data(), dtype, {1000});
    auto yv = makeView(x.data(), dtype, {1000});
    auto mv = makeView(m.data(), ACL_UINT8, {maskBytes(1000)});
    runDropoutV3(xv.get(), 0.25, 8, 16, yv.get(), mv.get());
    EXPECT_EQ(x, want.out);
    EXPECT_EQ(m, want.mask);
  }
}

TEST(DropoutV3Values, LargeInputTakesTheStreamingPathAndIsTheSameForAnyThreadCount) {
  // 4.5M fp32 elements = 18 MiB of output, above the streaming-store size; several mask chunks and a tail.
  const int64_t n = (int64_t{9} << 19) + 3;
  const auto x = randomElements(ACL_FLOAT, n, 13);
  const Result want = goldenOf(ACL_FLOAT, x, 0.319, 2024, 40);
  for (int threads : {1, 2, 3}) {
    setThreadCount(threads);
    expectSame(dropoutDense(ACL_FLOAT, x, 0.319, 2024, 40), want, std::to_string(threads) + " threads");
  }
  setThreadCount(0);
}

}  // namespace
}  // namespace gradkit::test
