// ThresholdBackward results against the fp64 golden (written from the formula), bit for bit: every dtype,
// every tail length, specials, strided inputs and output, the streaming-store path, any thread count.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "aclnnop/aclnn_threshold_backward.h"
#include "core/parallel.h"
#include "golden/threshold_backward.h"
#include "ops/op_test_util.h"
#include "ops/random_data.h"
#include "ops/threshold_backward/kernels/threshold_backward_kernel.h"

namespace gradkit::test {
namespace {

const aclDataType kDtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT8, ACL_UINT8, ACL_INT32, ACL_INT64};

// Runs the public API on views and waits for the result.
void runThresholdBackward(const aclTensor* grad, const aclTensor* self, aclTensor* out) {
  auto zero = makeScalar<int32_t>(0, ACL_INT32);
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(aclnnThresholdBackwardGetWorkspaceSize(grad, self, zero.get(), out, &size, &executor), ACLNN_SUCCESS)
      << recentError();
  std::vector<unsigned char> workspace(size);
  ASSERT_EQ(aclnnThresholdBackward(workspace.data(), size, executor, nullptr), ACLNN_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << recentError();
}

std::vector<unsigned char> goldenOf(aclDataType dtype, const std::vector<unsigned char>& grad,
                                    const std::vector<unsigned char>& self) {
  std::vector<unsigned char> out(grad.size());
  golden::thresholdBackward(dtype, grad.data(), self.data(), out.data(),
                            static_cast<int64_t>(grad.size() / aclDataTypeSize(dtype)));
  return out;
}

TEST(ThresholdBackwardValues, EveryDtypeEveryTailLengthIsBitExact) {
  for (aclDataType dtype : kDtypes) {
    for (int64_t n = 1; n <= 200; ++n) {
      auto g = randomElements(dtype, n, 1000 + n);
      auto s = randomElements(dtype, n, 2000 + n);
      std::vector<unsigned char> o(g.size(), 0xAB);
      auto grad = makeView(g.data(), dtype, {n});
      auto self = makeView(s.data(), dtype, {n});
      auto out = makeView(o.data(), dtype, {n});
      runThresholdBackward(grad.get(), self.get(), out.get());
      ASSERT_EQ(o, goldenOf(dtype, g, s)) << "dtype " << dtype << " n " << n;
    }
  }
}

TEST(ThresholdBackwardValues, SimdKernelMatchesScalarKernelAtEveryAlignment) {
  for (aclDataType dtype : kDtypes) {
    const size_t size = aclDataTypeSize(dtype);
    auto g = randomElements(dtype, 300, 7);
    auto s = randomElements(dtype, 300, 8);
    for (int64_t start = 0; start < 17; ++start) {
      for (int64_t n : {1, 15, 16, 17, 63, 64, 65, 200}) {
        for (bool stream : {false, true}) {
          std::vector<unsigned char> simd(g.size(), 0x11), scalar(g.size(), 0x11);
          const size_t at = static_cast<size_t>(start) * size;
          kernels::thresholdBackwardSimd(dtype, g.data() + at, s.data() + at, simd.data() + at, n, stream);
          kernels::thresholdBackwardScalar(dtype, g.data() + at, s.data() + at, scalar.data() + at, n);
          ASSERT_EQ(simd, scalar) << "dtype " << dtype << " start " << start << " n " << n << " stream " << stream;
        }
      }
    }
  }
}

TEST(ThresholdBackwardValues, SpecialValuesFollowTheSpec) {
  const float self[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, 1e-45f, -1e-45f, 3.0f};
  const float grad[] = {-0.0f, NAN, INFINITY, NAN, -INFINITY, -0.0f, 5.0f, -INFINITY};
  const float expected[] = {-0.0f, NAN, 0.0f, 0.0f, 0.0f, -0.0f, 0.0f, -INFINITY};
  std::vector<float> g(grad, grad + 8), s(self, self + 8), o(8, 1.0f);
  auto gv = makeView(g.data(), ACL_FLOAT, {8});
  auto sv = makeView(s.data(), ACL_FLOAT, {8});
  auto ov = makeView(o.data(), ACL_FLOAT, {8});
  runThresholdBackward(gv.get(), sv.get(), ov.get());
  for (int i = 0; i < 8; ++i) {
    uint32_t got, want;
    std::memcpy(&got, &o[i], 4);
    std::memcpy(&want, &expected[i], 4);
    if (std::isnan(expected[i])) {
      EXPECT_TRUE(std::isnan(o[i])) << i;
    } else {
      EXPECT_EQ(got, want) << i;  // bits: a kept -0 stays -0, a dropped value is +0
    }
  }
}

TEST(ThresholdBackwardValues, StridedInputsAndOutputUseLogicalOrder) {
  // A [6, 7, 5] logical view, each tensor laid out with a different permutation and gaps.
  const std::vector<int64_t> shape = {6, 7, 5};
  for (aclDataType dtype : kDtypes) {
    const size_t size = aclDataTypeSize(dtype);
    const int64_t n = 6 * 7 * 5;
    auto gDense = randomElements(dtype, n, 31);
    auto sDense = randomElements(dtype, n, 32);
    auto want = goldenOf(dtype, gDense, sDense);
    // grad: transposed storage [5, 7, 6] -> strides {1, 6, 42}; self: padded rows (stride 6 on the last dim
    // group) with offset 3; out: storage [7, 6, 5] -> strides {5, 30, 1} with offset 2.
    const std::vector<int64_t> gStrides = {1, 6, 42}, sStrides = {70, 10, 2}, oStrides = {5, 30, 1};
    std::vector<unsigned char> g(n * size), s((3 + 6 * 70) * size), o((2 + n) * size, 0xCD);
    for (int64_t i = 0; i < 6; ++i) {
      for (int64_t j = 0; j < 7; ++j) {
        for (int64_t k = 0; k < 5; ++k) {
          const int64_t logical = (i * 7 + j) * 5 + k;
          std::memcpy(&g[(i * gStrides[0] + j * gStrides[1] + k * gStrides[2]) * size], &gDense[logical * size], size);
          std::memcpy(&s[(3 + i * sStrides[0] + j * sStrides[1] + k * sStrides[2]) * size], &sDense[logical * size],
                      size);
        }
      }
    }
    auto gv = makeView(g.data(), dtype, shape, gStrides, 0, n);
    auto sv = makeView(s.data(), dtype, shape, sStrides, 3, 3 + 6 * 70);
    auto ov = makeView(o.data(), dtype, shape, oStrides, 2, 2 + n);
    runThresholdBackward(gv.get(), sv.get(), ov.get());
    for (int64_t i = 0; i < 6; ++i) {
      for (int64_t j = 0; j < 7; ++j) {
        for (int64_t k = 0; k < 5; ++k) {
          const int64_t logical = (i * 7 + j) * 5 + k;
          const int64_t at = 2 + i * oStrides[0] + j * oStrides[1] + k * oStrides[2];
          ASSERT_EQ(std::memcmp(&o[at * size], &want[logical * size], size), 0)
              << "dtype " << dtype << " element " << logical;
        }
      }
    }
    for (size_t b = 0; b < 2 * size; ++b) EXPECT_EQ(o[b], 0xCD) << "wrote before the view";
  }
}

TEST(ThresholdBackwardValues, ZeroDimAndEightDimTensors) {
  for (aclDataType dtype : kDtypes) {
    auto g = randomElements(dtype, 1, 5), s = randomElements(dtype, 1, 6);
    std::vector<unsigned char> o(g.size());
    auto gv = makeView(g.data(), dtype, {}), sv = makeView(s.data(), dtype, {}), ov = makeView(o.data(), dtype, {});
    runThresholdBackward(gv.get(), sv.get(), ov.get());
    EXPECT_EQ(o, goldenOf(dtype, g, s));

    const std::vector<int64_t> shape = {2, 1, 3, 2, 1, 2, 3, 2};
    auto g8 = randomElements(dtype, 144, 9), s8 = randomElements(dtype, 144, 10);
    std::vector<unsigned char> o8(g8.size());
    auto g8v = makeView(g8.data(), dtype, shape), s8v = makeView(s8.data(), dtype, shape);
    auto o8v = makeView(o8.data(), dtype, shape);
    runThresholdBackward(g8v.get(), s8v.get(), o8v.get());
    EXPECT_EQ(o8, goldenOf(dtype, g8, s8));
  }
}

TEST(ThresholdBackwardValues, InPlaceOnGradOutput) {
  auto g = randomElements(ACL_FLOAT, 1000, 77), s = randomElements(ACL_FLOAT, 1000, 78);
  auto want = goldenOf(ACL_FLOAT, g, s);
  auto gv = makeView(g.data(), ACL_FLOAT, {1000}), sv = makeView(s.data(), ACL_FLOAT, {1000});
  auto ov = makeView(g.data(), ACL_FLOAT, {1000});
  runThresholdBackward(gv.get(), sv.get(), ov.get());
  EXPECT_EQ(g, want);
}

TEST(ThresholdBackwardValues, LargeOutputTakesStreamingPathAndStaysExactForAnyThreadCount) {
  // 4.5M fp32 elements = 18 MiB of output: above the streaming-store size. Offset by one element so the
  // output starts misaligned.
  const int64_t n = (int64_t{9} << 19) + 3;
  auto g = randomElements(ACL_FLOAT, n + 1, 91), s = randomElements(ACL_FLOAT, n + 1, 92);
  std::vector<unsigned char> gOnly(g.begin() + 4, g.end()), sOnly(s.begin() + 4, s.end());
  auto want = goldenOf(ACL_FLOAT, gOnly, sOnly);
  for (int threads : {1, 2, 3}) {
    setThreadCount(threads);
    std::vector<unsigned char> o((n + 1) * 4, 0x5A);
    auto gv = makeView(g.data(), ACL_FLOAT, {n}, {1}, 1, n + 1);
    auto sv = makeView(s.data(), ACL_FLOAT, {n}, {1}, 1, n + 1);
    auto ov = makeView(o.data(), ACL_FLOAT, {n}, {1}, 1, n + 1);
    runThresholdBackward(gv.get(), sv.get(), ov.get());
    EXPECT_TRUE(std::equal(want.begin(), want.end(), o.begin() + 4)) << threads << " threads";
    EXPECT_EQ(o[0], 0x5A);
  }
  setThreadCount(0);
}

}  // namespace
}  // namespace gradkit::test
