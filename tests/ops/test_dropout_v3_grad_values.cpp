// DropoutV3Grad results against the golden (written from the formula), bit for bit: every dtype pair, every tail
// length, the doc example, dropped Inf/NaN, -0, scale edge values, strided tensors, in place, the streaming path,
// any thread count; the SIMD kernel against the scalar one at every alignment.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "aclnnop/aclnn_dropout_v3_grad.h"
#include "core/parallel.h"
#include "golden/dropout_v3_grad.h"
#include "gradkit/float_convert.h"
#include "hwy/targets.h"
#include "ops/dropout/kernels/masked_elements.h"
#include "ops/dropout/kernels/v3_grad_kernel.h"
#include "ops/masked_dropout_test_util.h"
#include "ops/random_data.h"

namespace gradkit::test {
namespace {

const aclDataType kDtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};
constexpr double kInf = std::numeric_limits<double>::infinity();

void runV3Grad(const aclTensor* gradY, const aclTensor* mask, double scale, aclTensor* gradX) {
  const PlannedCall call = planAndRun(
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnDropoutV3GradGetWorkspaceSize(gradY, mask, scale, gradX, size, executor);
      },
      aclnnDropoutV3Grad);
  ASSERT_EQ(call.status, ACLNN_SUCCESS) << call.message;
}

std::vector<unsigned char> goldenOf(aclDataType gradDtype, aclDataType outDtype, const std::vector<unsigned char>& grad,
                                    const std::vector<uint8_t>& mask, double scale) {
  const int64_t n = static_cast<int64_t>(grad.size() / aclDataTypeSize(gradDtype));
  std::vector<unsigned char> out(static_cast<size_t>(n) * aclDataTypeSize(outDtype));
  golden::dropoutV3Grad(gradDtype, outDtype, grad.data(), mask.data(), scale, out.data(), n);
  return out;
}

TEST(DropoutV3GradValues, DocExampleMaskByte42) {
  // Byte 0 = 42 = 0b00101010 keeps elements 1, 3, 5; gradY = 0..7, scale 2 -> {0, 2, 0, 6, 0, 10, 0, 0}.
  std::vector<uint8_t> mask(16, 0);
  mask[0] = 42;
  const float want[8] = {0, 2, 0, 6, 0, 10, 0, 0};
  for (aclDataType dtype : kDtypes) {
    std::vector<unsigned char> grad(8 * aclDataTypeSize(dtype)), out(grad.size(), 0xEE);
    for (int i = 0; i < 8; ++i) kernels::masked::storeFloat(dtype, grad.data(), i, static_cast<float>(i));
    auto g = makeView(grad.data(), dtype, {8});
    auto m = makeView(mask.data(), ACL_UINT8, {16});
    auto o = makeView(out.data(), dtype, {8});
    runV3Grad(g.get(), m.get(), 2.0, o.get());
    for (int i = 0; i < 8; ++i) {
      const float got = kernels::masked::loadFloat(dtype, out.data(), i);
      EXPECT_EQ(floatBitsOf(got), floatBitsOf(want[i])) << "dtype " << dtype << " element " << i;
    }
  }
}

TEST(DropoutV3GradValues, EveryDtypePairEveryTailLengthIsBitExact) {
  const double scales[] = {2.0, 1.0 / (1.0 - 0.15), 1.0 / (1.0 - 0.021), 1.0 / 0.7, 10.0, 0.0, -1.5, kInf};
  for (aclDataType gradDtype : kDtypes) {
    for (aclDataType outDtype : kDtypes) {
      for (int64_t n = 1; n <= 300; ++n) {
        const double scale = scales[n % 8];
        auto grad = randomElements(gradDtype, n, static_cast<uint32_t>(1000 + n));
        auto mask = randomMask(maskBytesFor(n), static_cast<uint32_t>(n));
        std::vector<unsigned char> out(static_cast<size_t>(n) * aclDataTypeSize(outDtype), 0xAB);
        auto g = makeView(grad.data(), gradDtype, {n});
        auto m = makeView(mask.data(), ACL_UINT8, {maskBytesFor(n)});
        auto o = makeView(out.data(), outDtype, {n});
        runV3Grad(g.get(), m.get(), scale, o.get());
        ASSERT_EQ(out, goldenOf(gradDtype, outDtype, grad, mask, scale))
            << "gradY " << gradDtype << " gradX " << outDtype << " n " << n << " scale " << scale;
      }
    }
  }
}

TEST(DropoutV3GradValues, EveryCompiledSimdTargetMatchesTheScalarKernelAtEveryAlignment) {
  const int64_t total = 400;
  auto mask = randomMask(64, 5);
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {  // AVX2, SSE4, SSSE3, SCALAR here
    hwy::SetSupportedTargetsForTest(target);
    for (aclDataType gradDtype : kDtypes) {
      for (aclDataType outDtype : kDtypes) {
        const size_t inSize = aclDataTypeSize(gradDtype), outSize = aclDataTypeSize(outDtype);
        auto grad = randomElements(gradDtype, total, 6);
        for (int64_t start = 0; start < 17; ++start) {
          for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 127, 128, 129, 200, 383}) {
            // A positive finite scale takes the kernel's folded multiply, the others the two multiplies.
            for (float scale : {1.25f, 0.0f, -0.75f, -0.0f, INFINITY}) {
              const bool stream = (start + n) % 2 == 0;
              AlignedBytes simd(total * outSize, 0x11), scalar(total * outSize, 0x11);
              const unsigned char* from = grad.data() + start * inSize;
              kernels::dropoutV3GradSimd(gradDtype, outDtype, from, mask.data(), scale, simd.get() + start * outSize, n,
                                         stream);
              kernels::dropoutV3GradScalar(gradDtype, outDtype, from, mask.data(), scale,
                                           scalar.get() + start * outSize, n);
              ASSERT_EQ(std::memcmp(simd.get(), scalar.get(), total * outSize), 0)
                  << hwy::TargetName(target) << " gradY " << gradDtype << " gradX " << outDtype << " start " << start
                  << " n " << n << " scale " << scale << " stream " << stream;
            }
          }
        }
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

// Element i of an fp32 result, as bits.
uint32_t bitsAt(const std::vector<float>& values, int i) { return floatBitsOf(values[i]); }

TEST(DropoutV3GradValues, DroppedInfAndNanGiveNanAndDroppedNegativesGiveMinusZero) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> grad = {inf, -inf, nan, -3.0f, -0.0f, 5.0f, inf, 0.0f};
  std::vector<uint8_t> mask(16, 0);
  mask[0] = 0b01100000;  // keeps elements 5 and 6
  auto g = makeView(grad.data(), ACL_FLOAT, {8});
  auto m = makeView(mask.data(), ACL_UINT8, {16});

  std::vector<float> out(8, 1.0f);
  auto o = makeView(out.data(), ACL_FLOAT, {8});
  runV3Grad(g.get(), m.get(), 2.0, o.get());
  EXPECT_TRUE(std::isnan(out[0]) && std::isnan(out[1]) && std::isnan(out[2]));  // Inf * 0, NaN * 0
  EXPECT_EQ(bitsAt(out, 3), 0x80000000u);                                       // -3 * 0 = -0
  EXPECT_EQ(bitsAt(out, 4), 0x80000000u);                                       // -0 * 0 = -0
  EXPECT_EQ(out[5], 10.0f);
  EXPECT_EQ(out[6], inf);
  EXPECT_EQ(bitsAt(out, 7), 0u);  // +0

  runV3Grad(g.get(), m.get(), 0.0, o.get());  // scale 0: kept Inf -> NaN, kept 5 -> +0
  EXPECT_EQ(bitsAt(out, 5), 0u);
  EXPECT_TRUE(std::isnan(out[6]));
  EXPECT_EQ(bitsAt(out, 3), 0x80000000u);

  runV3Grad(g.get(), m.get(), kInf, o.get());  // scale +Inf: kept finite -> Inf, every dropped element -> NaN
  EXPECT_EQ(out[5], inf);
  EXPECT_EQ(out[6], inf);
  for (int i : {0, 1, 2, 3, 4, 7}) EXPECT_TRUE(std::isnan(out[i])) << i;

  runV3Grad(g.get(), m.get(), std::numeric_limits<double>::quiet_NaN(), o.get());
  for (int i = 0; i < 8; ++i) EXPECT_TRUE(std::isnan(out[i])) << i;

  runV3Grad(g.get(), m.get(), -2.0, o.get());  // a negative scale flips signs, dropped -0 becomes +0
  EXPECT_EQ(out[5], -10.0f);
  EXPECT_EQ(bitsAt(out, 3), 0u);
  EXPECT_EQ(bitsAt(out, 7), 0x80000000u);
}

TEST(DropoutV3GradValues, NanScaleKeepsItsPayloadThroughTheBf16Rounding) {
  // A NaN scale whose float payload has all low 16 bits set (0x7fc0ffff): rounding must not carry into the bf16
  // bits (that would give 0x7fc1); the result is the truncated, quiet 0x7fc0 in every element, as the golden says.
  double scale;
  const uint64_t scaleBits = 0x7ff81fffe0000000ull;
  std::memcpy(&scale, &scaleBits, sizeof scale);
  ASSERT_EQ(floatBitsOf(static_cast<float>(scale)), 0x7fc0ffffu);
  const int64_t n = 300;
  std::vector<unsigned char> grad(n * 2);
  for (int64_t i = 0; i < n; ++i) kernels::masked::storeFloat(ACL_BF16, grad.data(), i, 0.5f * static_cast<float>(i));
  auto mask = randomMask(maskBytesFor(n), 8);
  std::vector<unsigned char> out(grad.size());
  auto g = makeView(grad.data(), ACL_BF16, {n});
  auto m = makeView(mask.data(), ACL_UINT8, {maskBytesFor(n)});
  auto o = makeView(out.data(), ACL_BF16, {n});
  runV3Grad(g.get(), m.get(), scale, o.get());
  EXPECT_EQ(out, goldenOf(ACL_BF16, ACL_BF16, grad, mask, scale));
  uint16_t first;
  std::memcpy(&first, out.data(), 2);
  EXPECT_EQ(first, 0x7fc0);
}

TEST(DropoutV3GradValues, ScaleIsNarrowedToFloatOnce) {
  std::vector<float> grad(8, 1.0f), out(8);
  std::vector<uint8_t> mask(16, 0xFF);
  auto g = makeView(grad.data(), ACL_FLOAT, {8});
  auto m = makeView(mask.data(), ACL_UINT8, {16});
  auto o = makeView(out.data(), ACL_FLOAT, {8});
  runV3Grad(g.get(), m.get(), 1.0 / (1.0 - 0.15), o.get());
  EXPECT_EQ(bitsAt(out, 0), 0x3f969697u);  // RN32(1.1764705882352942), spec 1.8 (the legacy chain gives ...96)
  runV3Grad(g.get(), m.get(), 1.0 / (1.0 - 0.021), o.get());
  EXPECT_EQ(bitsAt(out, 0), 0x3f82bee3u);
  runV3Grad(g.get(), m.get(), 1e39, o.get());  // beyond float: Inf
  EXPECT_EQ(out[0], std::numeric_limits<float>::infinity());
  grad[0] = 1.5f;
  runV3Grad(g.get(), m.get(), 1.0000000000000002, o.get());  // narrows to 1.0f
  EXPECT_EQ(out[0], 1.5f);
}

TEST(DropoutV3GradValues, HalfResultsRoundTheFp32ProductToNearestEven) {
  // gradY fp16 1025, scale 2049/1025: the exact product is 2049 + 9.5e-7, RN32 gives 2049.0, a tie in fp16 that goes
  // to even 2048 (one rounding of the exact product would give 2050). 2051/1025: 2051 - 9.5e-7 -> 2051.0 -> 2052.
  std::vector<uint16_t> half = {floatToHalf(1025.0f)}, bf = {floatToBf16(1.0f)};
  std::vector<uint8_t> mask(16, 0xFF);
  auto m = makeView(mask.data(), ACL_UINT8, {16});
  std::vector<uint16_t> out(1);
  auto gh = makeView(half.data(), ACL_FLOAT16, {1});
  auto oh = makeView(out.data(), ACL_FLOAT16, {1});
  runV3Grad(gh.get(), m.get(), 2049.0 / 1025.0, oh.get());
  EXPECT_EQ(out[0], floatToHalf(2048.0f));
  runV3Grad(gh.get(), m.get(), 2051.0 / 1025.0, oh.get());
  EXPECT_EQ(out[0], floatToHalf(2052.0f));
  // bf16 1.0 times a scale on a bf16 tie: 1.00390625 lies between 1.0 (even) and 1.0078125; 1.01171875 between
  // 1.0078125 and 1.015625 (even).
  auto gb = makeView(bf.data(), ACL_BF16, {1});
  auto ob = makeView(out.data(), ACL_BF16, {1});
  runV3Grad(gb.get(), m.get(), 1.00390625, ob.get());
  EXPECT_EQ(out[0], 0x3f80);
  runV3Grad(gb.get(), m.get(), 1.01171875, ob.get());
  EXPECT_EQ(out[0], 0x3f82);
}

TEST(DropoutV3GradValues, StridedTensorsUseLogicalRowMajorOrder) {
  const std::vector<int64_t> shape = {6, 7, 5};
  const int64_t n = 6 * 7 * 5;
  for (aclDataType gradDtype : kDtypes) {
    for (aclDataType outDtype : {ACL_FLOAT, ACL_BF16}) {
      const size_t inSize = aclDataTypeSize(gradDtype), outSize = aclDataTypeSize(outDtype);
      auto dense = randomElements(gradDtype, n, 31);
      auto maskDense = randomMask(maskBytesFor(n), 32);
      auto want = goldenOf(gradDtype, outDtype, dense, maskDense, 1.75);
      // gradY: storage [5, 7, 6] (strides {1, 6, 42}); mask: every other byte of a buffer, offset 1;
      // gradX: storage [7, 6, 5] (strides {5, 30, 1}) with offset 2.
      const std::vector<int64_t> gStrides = {1, 6, 42}, oStrides = {5, 30, 1};
      std::vector<unsigned char> g(n * inSize), o((2 + n) * outSize, 0xCD);
      std::vector<uint8_t> m(1 + 2 * maskDense.size(), 0x5A);
      for (size_t b = 0; b < maskDense.size(); ++b) m[1 + 2 * b] = maskDense[b];
      for (int64_t i = 0; i < 6; ++i) {
        for (int64_t j = 0; j < 7; ++j) {
          for (int64_t k = 0; k < 5; ++k) {
            const int64_t logical = (i * 7 + j) * 5 + k;
            std::memcpy(&g[(i * gStrides[0] + j * gStrides[1] + k * gStrides[2]) * inSize], &dense[logical * inSize],
                        inSize);
          }
        }
      }
      const auto maskElements = static_cast<int64_t>(maskDense.size());
      auto gv = makeView(g.data(), gradDtype, shape, gStrides, 0, n);
      auto mv = makeView(m.data(), ACL_UINT8, {maskElements}, {2}, 1, static_cast<int64_t>(m.size()));
      auto ov = makeView(o.data(), outDtype, shape, oStrides, 2, 2 + n);
      runV3Grad(gv.get(), mv.get(), 1.75, ov.get());
      for (int64_t i = 0; i < 6; ++i) {
        for (int64_t j = 0; j < 7; ++j) {
          for (int64_t k = 0; k < 5; ++k) {
            const int64_t logical = (i * 7 + j) * 5 + k;
            const int64_t at = 2 + i * oStrides[0] + j * oStrides[1] + k * oStrides[2];
            ASSERT_EQ(std::memcmp(&o[at * outSize], &want[logical * outSize], outSize), 0)
                << "gradY " << gradDtype << " gradX " << outDtype << " element " << logical;
          }
        }
      }
      for (size_t b = 0; b < 2 * outSize; ++b) EXPECT_EQ(o[b], 0xCD) << "wrote before the view";
    }
  }
}

TEST(DropoutV3GradValues, ZeroDimEightDimAndInPlace) {
  for (aclDataType dtype : kDtypes) {
    auto grad = randomElements(dtype, 144, 9);
    auto mask = randomMask(32, 10);
    auto want = goldenOf(dtype, dtype, grad, mask, 1.5);
    std::vector<unsigned char> scalarOut(aclDataTypeSize(dtype));
    auto g0 = makeView(grad.data(), dtype, {});
    auto m = makeView(mask.data(), ACL_UINT8, {16});
    auto o0 = makeView(scalarOut.data(), dtype, {});
    runV3Grad(g0.get(), m.get(), 1.5, o0.get());
    EXPECT_EQ(std::memcmp(scalarOut.data(), want.data(), scalarOut.size()), 0) << dtype;

    const std::vector<int64_t> shape = {2, 1, 3, 2, 1, 2, 3, 2};
    auto g8 = makeView(grad.data(), dtype, shape);
    auto o8 = makeView(grad.data(), dtype, shape);  // in place
    auto m32 = makeView(mask.data(), ACL_UINT8, {32});
    runV3Grad(g8.get(), m32.get(), 1.5, o8.get());
    EXPECT_EQ(grad, want) << dtype;
  }
}

TEST(DropoutV3GradValues, PaddingBitsOfTheMaskAreIgnored) {
  auto grad = randomElements(ACL_FLOAT, 100, 3);
  auto mask = randomMask(16, 4);
  auto want = goldenOf(ACL_FLOAT, ACL_FLOAT, grad, mask, 2.0);
  for (int bit = 100; bit < 128; ++bit) mask[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
  std::vector<unsigned char> out(grad.size());
  auto g = makeView(grad.data(), ACL_FLOAT, {100});
  auto m = makeView(mask.data(), ACL_UINT8, {16});
  auto o = makeView(out.data(), ACL_FLOAT, {100});
  runV3Grad(g.get(), m.get(), 2.0, o.get());
  EXPECT_EQ(out, want);
}

TEST(DropoutV3GradValues, LargeOutputTakesStreamingPathAndStaysExactForAnyThreadCount) {
  // 4.5M fp32 elements = 18 MiB of output: above the streaming-store size, and many parallel chunks.
  const int64_t n = (int64_t{9} << 19) + 3;
  auto grad = randomElements(ACL_FLOAT, n, 91);
  auto mask = randomMask(maskBytesFor(n), 92);
  auto want = goldenOf(ACL_FLOAT, ACL_FLOAT, grad, mask, 1.0 / 0.9);
  auto g = makeView(grad.data(), ACL_FLOAT, {n});
  auto m = makeView(mask.data(), ACL_UINT8, {maskBytesFor(n)});
  for (int threads : {1, 2, 3}) {
    setThreadCount(threads);
    for (int64_t offset : {0, 1}) {  // an aligned output streams; a misaligned one falls back to plain stores
      AlignedBytes out((n + 1) * 4, 0x5A);
      auto o = makeView(out.get(), ACL_FLOAT, {n}, {1}, offset, n + 1);
      runV3Grad(g.get(), m.get(), 1.0 / 0.9, o.get());
      EXPECT_EQ(std::memcmp(out.get() + offset * 4, want.data(), want.size()), 0)
          << threads << " threads, offset " << offset;
    }
  }
  setThreadCount(0);
}

}  // namespace
}  // namespace gradkit::test
