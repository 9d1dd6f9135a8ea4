// ThresholdBackward results against the fp64 golden (written from the formula), bit for bit: every dtype,
// every tail length, non-zero / NaN / out-of-range thresholds, broadcasting, specials, strided inputs and
// output, the streaming-store path, any thread count; the SIMD kernel against the scalar one.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "aclnnop/aclnn_threshold_backward.h"
#include "core/parallel.h"
#include "golden/threshold_backward.h"
#include "opapi/tensor.h"
#include "ops/op_test_util.h"
#include "ops/random_data.h"
#include "ops/threshold_backward/kernels/threshold_backward_kernel.h"

namespace gradkit::test {
namespace {

const aclDataType kDtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT8, ACL_UINT8, ACL_INT32, ACL_INT64};

// A threshold scalar and the value the golden gets for it.
struct Threshold {
  aclDataType dtype;
  double value;
  ScalarPtr make() const {
    switch (dtype) {
      case ACL_DOUBLE:
        return makeScalar<double>(value, dtype);
      case ACL_FLOAT:
        return makeScalar<float>(static_cast<float>(value), dtype);
      case ACL_INT64:
        return makeScalar<int64_t>(static_cast<int64_t>(value), dtype);
      default:
        return makeScalar<int32_t>(static_cast<int32_t>(value), ACL_INT32);
    }
  }
};

// Thresholds for values in [-20, 20]: zero, non-zero, fractions, negative, NaN, infinite, out of every range.
const Threshold kThresholds[] = {{ACL_INT32, 0},     {ACL_DOUBLE, 1.0}, {ACL_DOUBLE, -1.5},  {ACL_FLOAT, 0.3},
                                 {ACL_INT32, 7},     {ACL_INT32, -3},   {ACL_DOUBLE, NAN},   {ACL_DOUBLE, INFINITY},
                                 {ACL_DOUBLE, -1e9}, {ACL_INT64, 300},  {ACL_DOUBLE, 19.99}, {ACL_INT32, -1}};

bool allowed(aclDataType dtype, const Threshold& threshold) {
  return dtype != ACL_INT64 || (threshold.value == 0.0);  // INT64 runs with threshold 0 only
}

// Runs the public API on views and waits for the result.
void runThresholdBackward(const aclTensor* grad, const aclTensor* self, aclTensor* out,
                          const Threshold& threshold = {ACL_INT32, 0}) {
  auto scalar = threshold.make();
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(aclnnThresholdBackwardGetWorkspaceSize(grad, self, scalar.get(), out, &size, &executor), ACLNN_SUCCESS)
      << recentError();
  std::vector<unsigned char> workspace(size);
  ASSERT_EQ(aclnnThresholdBackward(workspace.data(), size, executor, nullptr), ACLNN_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << recentError();
}

std::vector<unsigned char> goldenOf(aclDataType dtype, const std::vector<unsigned char>& grad,
                                    const std::vector<int64_t>& gradShape, const std::vector<unsigned char>& self,
                                    const std::vector<int64_t>& selfShape, const std::vector<int64_t>& outShape,
                                    const Threshold& threshold = {ACL_INT32, 0}) {
  std::vector<unsigned char> out(static_cast<size_t>(product(outShape)) * aclDataTypeSize(dtype));
  golden::thresholdBackward(dtype, grad.data(), gradShape, self.data(), selfShape, threshold.dtype, threshold.value,
                            out.data(), outShape);
  return out;
}

std::vector<unsigned char> goldenOf(aclDataType dtype, const std::vector<unsigned char>& grad,
                                    const std::vector<unsigned char>& self) {
  const std::vector<int64_t> shape = {static_cast<int64_t>(grad.size() / aclDataTypeSize(dtype))};
  return goldenOf(dtype, grad, shape, self, shape, shape);
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

TEST(ThresholdBackwardValues, SimdKernelMatchesScalarKernelAtEveryAlignmentStrideAndThreshold) {
  const kernels::ThresholdValue values[] = {{0.0f, 0, false},     {1.0f, 1, false},       {-1.5f, -2, false},
                                            {0.3f, 5, false},     {NAN, -128, true},      {INFINITY, 127, false},
                                            {-INFINITY, 0, true}, {65504.0f, -20, false}, {-1e-40f, 19, false}};
  for (aclDataType dtype : kDtypes) {
    const size_t size = aclDataTypeSize(dtype);
    auto g = randomElements(dtype, 300, 7);
    auto s = randomElements(dtype, 300, 8);
    for (const kernels::ThresholdValue& threshold : values) {
      for (int64_t gradStride : {0, 1}) {
        for (int64_t selfStride : {0, 1}) {
          for (int64_t start = 0; start < 17; ++start) {
            for (int64_t n : {1, 15, 16, 17, 63, 64, 65, 200}) {
              for (bool stream : {false, true}) {
                std::vector<unsigned char> simd(g.size(), 0x11), scalar(g.size(), 0x11);
                const size_t at = static_cast<size_t>(start) * size;
                kernels::thresholdBackwardSimd(dtype, g.data() + at, gradStride, s.data() + at, selfStride,
                                               simd.data() + at, n, threshold, stream);
                kernels::thresholdBackwardScalar(dtype, g.data() + at, gradStride, s.data() + at, selfStride,
                                                 scalar.data() + at, n, threshold);
                ASSERT_EQ(simd, scalar) << "dtype " << dtype << " threshold " << threshold.asFloat << "/"
                                        << threshold.asInt << " strides " << gradStride << selfStride << " start "
                                        << start << " n " << n << " stream " << stream;
              }
            }
          }
        }
      }
    }
  }
}

TEST(ThresholdBackwardValues, SimdHalfKernelsCompareEveryBitPatternAgainstNeighbouringThresholds) {
  // All 65536 fp16 / bf16 patterns as self, thresholds on and between representable values.
  std::vector<uint16_t> self(65536), grad(65536, 0x3c00);
  for (uint32_t b = 0; b < 65536; ++b) self[b] = static_cast<uint16_t>(b);
  for (aclDataType dtype : {ACL_FLOAT16, ACL_BF16}) {
    for (float t : {0.0f, -0.0f, 1.0f, 1.0f + 0x1.0p-12f, 1.0f + 0x1.0p-7f - 0x1.0p-9f, -2.75f, 1e-7f, -1e-7f, 65504.0f,
                    65520.0f, 1e5f, -1e5f, 3.39e38f, -3.4e38f, INFINITY, -INFINITY, NAN, 1e-42f}) {
      const kernels::ThresholdValue threshold{t, 0, false};
      std::vector<uint16_t> simd(65536), scalar(65536);
      kernels::thresholdBackwardSimd(dtype, grad.data(), 1, self.data(), 1, simd.data(), 65536, threshold, false);
      kernels::thresholdBackwardScalar(dtype, grad.data(), 1, self.data(), 1, scalar.data(), 65536, threshold);
      ASSERT_EQ(simd, scalar) << "dtype " << dtype << " threshold " << t;
      for (uint32_t b = 0; b < 65536; ++b) {  // independent of both kernels: the rule itself
        const float x = dtype == ACL_FLOAT16 ? halfToFloat(self[b]) : bf16ToFloat(self[b]);
        ASSERT_EQ(simd[b], !(x <= t) ? 0x3c00 : 0) << "dtype " << dtype << " t " << t << " bits " << b;
      }
    }
  }
}

TEST(ThresholdBackwardValues, EveryDtypeEveryThresholdMatchesTheGolden) {
  for (aclDataType dtype : kDtypes) {
    for (const Threshold& threshold : kThresholds) {
      if (!allowed(dtype, threshold)) continue;
      const int64_t n = 1000;
      auto g = randomElements(dtype, n, 301), s = randomElements(dtype, n, 302);
      std::vector<unsigned char> o(g.size(), 0xAB);
      auto gv = makeView(g.data(), dtype, {n}), sv = makeView(s.data(), dtype, {n}),
           ov = makeView(o.data(), dtype, {n});
      runThresholdBackward(gv.get(), sv.get(), ov.get(), threshold);
      ASSERT_EQ(o, goldenOf(dtype, g, {n}, s, {n}, {n}, threshold))
          << "dtype " << dtype << " threshold " << threshold.value;
    }
  }
}

TEST(ThresholdBackwardValues, IntegerThresholdsTruncateTowardZeroAndUint8WrapsNegativeIntegers) {
  // Hand-computed: int8 self {-2, -1, 0, 1, 2}; threshold -1.5 reads as -1, 1.5 as 1.
  std::vector<int8_t> s8 = {-2, -1, 0, 1, 2}, g8 = {10, 20, 30, 40, 50}, o8(5);
  auto gv = makeView(g8.data(), ACL_INT8, {5}), sv = makeView(s8.data(), ACL_INT8, {5});
  auto ov = makeView(o8.data(), ACL_INT8, {5});
  runThresholdBackward(gv.get(), sv.get(), ov.get(), {ACL_DOUBLE, -1.5});
  EXPECT_EQ(o8, (std::vector<int8_t>{0, 0, 30, 40, 50}));
  runThresholdBackward(gv.get(), sv.get(), ov.get(), {ACL_DOUBLE, 1.5});
  EXPECT_EQ(o8, (std::vector<int8_t>{0, 0, 0, 0, 50}));
  runThresholdBackward(gv.get(), sv.get(), ov.get(), {ACL_INT32, 200});  // above int8: nothing kept
  EXPECT_EQ(o8, (std::vector<int8_t>{0, 0, 0, 0, 0}));
  runThresholdBackward(gv.get(), sv.get(), ov.get(), {ACL_INT32, -200});  // below int8: everything kept
  EXPECT_EQ(o8, g8);
  runThresholdBackward(gv.get(), sv.get(), ov.get(), {ACL_DOUBLE, NAN});
  EXPECT_EQ(o8, g8);

  std::vector<uint8_t> su = {0, 1, 2, 254, 255}, gu = {1, 2, 3, 4, 5}, ou(5);
  auto guv = makeView(gu.data(), ACL_UINT8, {5}), suv = makeView(su.data(), ACL_UINT8, {5});
  auto ouv = makeView(ou.data(), ACL_UINT8, {5});
  runThresholdBackward(guv.get(), suv.get(), ouv.get(), {ACL_INT32, -1});  // reads as 255, as PyTorch does
  EXPECT_EQ(ou, (std::vector<uint8_t>{0, 0, 0, 0, 0}));
  runThresholdBackward(guv.get(), suv.get(), ouv.get(), {ACL_INT32, -255});  // reads as 1
  EXPECT_EQ(ou, (std::vector<uint8_t>{0, 0, 3, 4, 5}));
  runThresholdBackward(guv.get(), suv.get(), ouv.get(), {ACL_DOUBLE, -1.0});  // a float threshold does not wrap
  EXPECT_EQ(ou, gu);
  runThresholdBackward(guv.get(), suv.get(), ouv.get(), {ACL_INT32, -256});  // beyond the wrap: below the type
  EXPECT_EQ(ou, gu);
}

TEST(ThresholdBackwardValues, FloatThresholdsRoundToFp32) {
  // 1 + 2^-24 + 2^-40 rounds to 1 + 2^-23 in fp32, so a self of exactly 1 + 2^-23 is dropped (PyTorch too).
  std::vector<float> s = {1.0f, 1.0f + 0x1.0p-23f, 1.0f + 0x1.0p-22f}, g = {1, 2, 3}, o(3);
  auto gv = makeView(g.data(), ACL_FLOAT, {3}), sv = makeView(s.data(), ACL_FLOAT, {3});
  auto ov = makeView(o.data(), ACL_FLOAT, {3});
  runThresholdBackward(gv.get(), sv.get(), ov.get(), {ACL_DOUBLE, 1.0 + 0x1.0p-24 + 0x1.0p-40});
  EXPECT_EQ(o, (std::vector<float>{0, 0, 3}));
  // bf16: 1 + 2^-7 - 2^-9 is exact in fp32 and lies below the bf16 value 1 + 2^-7, which is kept.
  std::vector<uint16_t> sb = {floatToBf16(1.0f), floatToBf16(1.0f + 0x1.0p-7f)}, gb = {0x3f80, 0x4000}, ob(2);
  auto gbv = makeView(gb.data(), ACL_BF16, {2}), sbv = makeView(sb.data(), ACL_BF16, {2});
  auto obv = makeView(ob.data(), ACL_BF16, {2});
  runThresholdBackward(gbv.get(), sbv.get(), obv.get(), {ACL_DOUBLE, 1.0 + 0x1.0p-7 - 0x1.0p-9});
  EXPECT_EQ(ob, (std::vector<uint16_t>{0, 0x4000}));
}

TEST(ThresholdBackwardValues, BroadcastPatternsMatchTheGoldenForAnyThreadCount) {
  struct Pattern {
    std::vector<int64_t> grad, self, out;
  } patterns[] = {
      {{33, 40}, {33, 1}, {33, 40}},
      {{33, 40}, {40}, {33, 40}},
      {{7, 9}, {}, {7, 9}},
      {{}, {65}, {65}},
      {{17, 1}, {17, 64}, {17, 64}},
      {{1, 64}, {17, 1}, {17, 64}},
      {{3, 1}, {4, 1, 5}, {4, 3, 5}},
      {{6, 5, 7}, {6, 1, 7}, {6, 5, 7}},
      {{2, 1, 3, 1, 1, 2, 1, 2}, {1, 2, 1, 2, 3, 1}, {2, 1, 3, 2, 1, 2, 3, 2}},
      {{301, 257}, {301, 1}, {301, 257}},
      {{1}, {1}, {1}},
      {{5, 1, 1}, {1, 1, 130}, {5, 1, 130}},
      {{700, 301}, {700, 1}, {700, 301}},
      {{1, 301}, {700, 1}, {700, 301}},
  };
  for (aclDataType dtype : kDtypes) {
    for (const Pattern& p : patterns) {
      auto g = randomElements(dtype, product(p.grad), 11), s = randomElements(dtype, product(p.self), 12);
      for (const Threshold& threshold : {Threshold{ACL_INT32, 0}, Threshold{ACL_DOUBLE, 2.5}}) {
        if (!allowed(dtype, threshold)) continue;
        const auto want = goldenOf(dtype, g, p.grad, s, p.self, p.out, threshold);
        for (int threads : {1, 2, 3}) {
          setThreadCount(threads);
          std::vector<unsigned char> o(want.size(), 0xEE);
          auto gv = makeView(g.data(), dtype, p.grad), sv = makeView(s.data(), dtype, p.self);
          auto ov = makeView(o.data(), dtype, p.out);
          runThresholdBackward(gv.get(), sv.get(), ov.get(), threshold);
          ASSERT_EQ(o, want) << "dtype " << dtype << " out " << gradkit::dimsString(p.out) << " threads " << threads;
        }
      }
    }
  }
  setThreadCount(0);
}

TEST(ThresholdBackwardValues, BroadcastStrideZeroAndStridedInputsNeedNoWorkspace) {
  // self expanded with stride 0 along the rows, grad with padded rows: read in place, so no workspace.
  const int64_t rows = 9, cols = 70;
  auto g = randomElements(ACL_FLOAT, rows * 80, 41), s = randomElements(ACL_FLOAT, rows, 42);
  auto scalar = makeScalar<float>(0.5f, ACL_FLOAT);
  std::vector<unsigned char> o(rows * cols * 4);
  auto gv = makeView(g.data(), ACL_FLOAT, {rows, cols}, {80, 1}, 0, rows * 80);
  auto sv = makeView(s.data(), ACL_FLOAT, {rows, cols}, {1, 0}, 0, rows);
  auto ov = makeView(o.data(), ACL_FLOAT, {rows, cols});
  uint64_t size = 1;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(aclnnThresholdBackwardGetWorkspaceSize(gv.get(), sv.get(), scalar.get(), ov.get(), &size, &executor),
            ACLNN_SUCCESS);
  EXPECT_EQ(size, 0u);
  ASSERT_EQ(aclnnThresholdBackward(nullptr, 0, executor, nullptr), ACLNN_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  std::vector<unsigned char> gDense(rows * cols * 4);
  for (int64_t r = 0; r < rows; ++r) std::memcpy(&gDense[r * cols * 4], &g[r * 80 * 4], cols * 4);
  EXPECT_EQ(o, goldenOf(ACL_FLOAT, gDense, {rows, cols}, s, {rows, 1}, {rows, cols}, {ACL_FLOAT, 0.5}));
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
