// DropoutDoMask results against the golden of the legacy arithmetic (keep stored in the input dtype, reciprocal,
// select), bit for bit: every dtype pair and tail length, the p edge values and short-cuts, dropped Inf/NaN (+0),
// -0, the spec 1.8 factors, strided tensors, the streaming path, any thread count; and the SIMD kernel against the
// scalar one at every alignment.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "aclnnop/aclnn_dropout_do_mask.h"
#include "core/parallel.h"
#include "golden/dropout_do_mask.h"
#include "gradkit/float_convert.h"
#include "hwy/targets.h"
#include "ops/dropout/kernels/do_mask_kernel.h"
#include "ops/dropout/kernels/masked_elements.h"
#include "ops/masked_dropout_test_util.h"
#include "ops/random_data.h"

namespace gradkit::test {
namespace {

const aclDataType kDtypes[] = {ACL_FLOAT, ACL_FLOAT16, ACL_BF16};

void runDoMask(const aclTensor* self, const aclTensor* mask, double prob, aclTensor* out) {
  const PlannedCall call = planAndRun(
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnDropoutDoMaskGetWorkspaceSize(self, mask, prob, out, size, executor);
      },
      aclnnDropoutDoMask);
  ASSERT_EQ(call.status, ACLNN_SUCCESS) << call.message;
}

std::vector<unsigned char> goldenOf(aclDataType xDtype, aclDataType outDtype, const std::vector<unsigned char>& x,
                                    const std::vector<uint8_t>& mask, double prob) {
  const int64_t n = static_cast<int64_t>(x.size() / aclDataTypeSize(xDtype));
  std::vector<unsigned char> out(static_cast<size_t>(n) * aclDataTypeSize(outDtype));
  golden::dropoutDoMask(xDtype, outDtype, x.data(), mask.data(), prob, out.data(), n);
  return out;
}

TEST(DropoutDoMaskValues, EveryDtypePairEveryTailLengthIsBitExact) {
  const double probs[] = {0.5, 0.15, 0.021, 0.1, 0.3, 0.9, 0.999, 1e-9};
  for (aclDataType xDtype : kDtypes) {
    for (aclDataType outDtype : kDtypes) {
      for (int64_t n = 1; n <= 300; ++n) {
        const double prob = probs[n % 8];
        auto x = randomElements(xDtype, n, static_cast<uint32_t>(3000 + n));
        auto mask = randomMask(maskBytesFor(n), static_cast<uint32_t>(n + 7));
        std::vector<unsigned char> out(static_cast<size_t>(n) * aclDataTypeSize(outDtype), 0xAB);
        auto xv = makeView(x.data(), xDtype, {n});
        auto mv = makeView(mask.data(), ACL_UINT8, {maskBytesFor(n)});
        auto ov = makeView(out.data(), outDtype, {n});
        runDoMask(xv.get(), mv.get(), prob, ov.get());
        ASSERT_EQ(out, goldenOf(xDtype, outDtype, x, mask, prob))
            << "self " << xDtype << " out " << outDtype << " n " << n << " prob " << prob;
      }
    }
  }
}

TEST(DropoutDoMaskValues, EveryCompiledSimdTargetMatchesTheScalarKernelAtEveryAlignment) {
  const int64_t total = 400;
  auto mask = randomMask(64, 15);
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {  // AVX2, SSE4, SSSE3, SCALAR here
    hwy::SetSupportedTargetsForTest(target);
    for (aclDataType xDtype : kDtypes) {
      for (aclDataType outDtype : kDtypes) {
        const size_t inSize = aclDataTypeSize(xDtype), outSize = aclDataTypeSize(outDtype);
        auto x = randomElements(xDtype, total, 16);
        for (int64_t start = 0; start < 17; ++start) {
          for (int64_t n : {1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 127, 128, 129, 200, 383}) {
            for (bool stream : {false, true}) {
              AlignedBytes simd(total * outSize, 0x11), scalar(total * outSize, 0x11);
              const unsigned char* from = x.data() + start * inSize;
              kernels::dropoutDoMaskSimd(xDtype, outDtype, from, mask.data(), 1.17647052f, simd.get() + start * outSize,
                                         n, stream);
              kernels::dropoutDoMaskScalar(xDtype, outDtype, from, mask.data(), 1.17647052f,
                                           scalar.get() + start * outSize, n);
              ASSERT_EQ(std::memcmp(simd.get(), scalar.get(), total * outSize), 0)
                  << hwy::TargetName(target) << " self " << xDtype << " out " << outDtype << " start " << start << " n "
                  << n << " stream " << stream;
            }
          }
        }
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

TEST(DropoutDoMaskValues, DroppedInfAndNanGivePlusZeroAndKeptMinusZeroStays) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> x = {inf, -inf, nan, -3.0f, -0.0f, 5.0f, inf, nan};
  std::vector<uint8_t> mask(16, 0);
  mask[0] = 0b11110000;  // keeps elements 4..7
  std::vector<float> out(8, 1.0f);
  auto xv = makeView(x.data(), ACL_FLOAT, {8});
  auto mv = makeView(mask.data(), ACL_UINT8, {16});
  auto ov = makeView(out.data(), ACL_FLOAT, {8});
  runDoMask(xv.get(), mv.get(), 0.5, ov.get());
  for (int i = 0; i < 4; ++i) EXPECT_EQ(floatBitsOf(out[i]), 0u) << i;  // select: +0, never NaN or -0
  EXPECT_EQ(floatBitsOf(out[4]), 0x80000000u);                          // kept -0 * 2 = -0
  EXPECT_EQ(out[5], 10.0f);
  EXPECT_EQ(out[6], inf);
  EXPECT_TRUE(std::isnan(out[7]));
}

// One element of value 1 through DoMask with `prob`, the result as fp32 bits.
uint32_t factorBits(aclDataType dtype, double prob) {
  std::vector<unsigned char> x(aclDataTypeSize(dtype));
  kernels::masked::storeFloat(dtype, x.data(), 0, 1.0f);
  std::vector<uint8_t> mask(16, 0xFF);
  std::vector<float> out(1);
  auto xv = makeView(x.data(), dtype, {1});
  auto mv = makeView(mask.data(), ACL_UINT8, {16});
  auto ov = makeView(out.data(), ACL_FLOAT, {1});
  runDoMask(xv.get(), mv.get(), prob, ov.get());
  return floatBitsOf(out[0]);
}

TEST(DropoutDoMaskValues, LegacyFactorsOfSpecSection18) {
  EXPECT_EQ(factorBits(ACL_FLOAT, 0.15), 0x3f969696u);  // V3Grad's RN32(1/(1-0.15)) is 0x3f969697
  EXPECT_EQ(factorBits(ACL_FLOAT, 0.021), 0x3f82bee4u);
  EXPECT_EQ(factorBits(ACL_FLOAT, 0.1), floatBitsOf(1.11111116f));
  // keep stored in fp16 (0.89990234) and bf16 (0.8984375): factors 1.1112317 and 1.1130434.
  EXPECT_EQ(factorBits(ACL_FLOAT16, 0.1), 0x3f8e3cd7u);
  EXPECT_EQ(factorBits(ACL_BF16, 0.1), 0x3f8e7835u);
}

TEST(DropoutDoMaskValues, ProbEdgeValuesAndShortCuts) {
  std::vector<float> x = {1.5f, -2.0f, std::numeric_limits<float>::quiet_NaN(), -0.0f, 3.0f, 1e30f, -7.0f, 0.25f};
  std::vector<uint8_t> mask(16, 0);
  mask[0] = 0b01010101;
  auto xv = makeView(x.data(), ACL_FLOAT, {8});
  auto mv = makeView(mask.data(), ACL_UINT8, {16});
  const std::vector<unsigned char> xBytes(reinterpret_cast<unsigned char*>(x.data()),
                                          reinterpret_cast<unsigned char*>(x.data() + 8));
  auto outBytes = [](const std::vector<float>& v) {
    return std::vector<unsigned char>(reinterpret_cast<const unsigned char*>(v.data()),
                                      reinterpret_cast<const unsigned char*>(v.data() + v.size()));
  };
  // Copies, mask ignored: p within DBL_EPSILON of 0, and p = 2 * DBL_EPSILON (keep rounds to 1.0f in fp32).
  for (double prob : {0.0, -0.0, DBL_EPSILON, 2 * DBL_EPSILON, 1e-9}) {
    std::vector<float> out(8, 9.0f);
    auto ov = makeView(out.data(), ACL_FLOAT, {8});
    runDoMask(xv.get(), mv.get(), prob, ov.get());
    EXPECT_EQ(outBytes(out), xBytes) << prob;
  }
  // Zeros: p within DBL_EPSILON of 1; the NaN becomes +0 too.
  for (double prob : {1.0, 1.0 - DBL_EPSILON, 1.0 - 0x1p-53}) {
    std::vector<float> out(8, 9.0f);
    auto ov = makeView(out.data(), ACL_FLOAT, {8});
    runDoMask(xv.get(), mv.get(), prob, ov.get());
    EXPECT_EQ(outBytes(out), std::vector<unsigned char>(32, 0)) << prob;
  }
  // Just outside: p = 1 - 3 * 2^-53 applies the mask with a factor of about 3e15 (keep 3.3e-16 > float(DBL_EPSILON)).
  std::vector<float> out(8, 9.0f);
  auto ov = makeView(out.data(), ACL_FLOAT, {8});
  runDoMask(xv.get(), mv.get(), 1.0 - 3 * 0x1p-53, ov.get());
  EXPECT_EQ(outBytes(out), goldenOf(ACL_FLOAT, ACL_FLOAT, xBytes, mask, 1.0 - 3 * 0x1p-53));
  EXPECT_EQ(out[0], 1.5f * (1.0f / static_cast<float>(3 * 0x1p-53)));
  EXPECT_EQ(floatBitsOf(out[1]), 0u);
  EXPECT_EQ(out[4], 3.0f * (1.0f / static_cast<float>(3 * 0x1p-53)));
  // fp16 keep of 1 - (1 - 1e-9) is 0 in fp16: zeros from the kernel's check.
  std::vector<uint16_t> half(8, floatToHalf(2.0f)), halfOut(8, 0x1234);
  auto hv = makeView(half.data(), ACL_FLOAT16, {8});
  auto hov = makeView(halfOut.data(), ACL_FLOAT16, {8});
  runDoMask(hv.get(), mv.get(), 1.0 - 1e-9, hov.get());
  EXPECT_EQ(halfOut, std::vector<uint16_t>(8, 0));
  // fp16 keep of p = 1e-4 rounds to 1.0 in fp16: a copy, mask ignored.
  runDoMask(hv.get(), mv.get(), 1e-4, hov.get());
  EXPECT_EQ(halfOut, half);
}

TEST(DropoutDoMaskValues, StridedTensorsAndALargerMaskUseLogicalRowMajorOrder) {
  const std::vector<int64_t> shape = {6, 7, 5};
  const int64_t n = 6 * 7 * 5;
  for (aclDataType xDtype : kDtypes) {
    for (double prob : {0.0, 0.3, 1.0}) {  // copy, apply, zeros through staged tensors
      const size_t size = aclDataTypeSize(xDtype);
      auto dense = randomElements(xDtype, n, 41);
      auto maskDense = randomMask(maskBytesFor(n) + 16, 42);  // DoMask accepts a larger mask
      auto want = goldenOf(xDtype, xDtype, dense, maskDense, prob);
      const std::vector<int64_t> xStrides = {1, 6, 42}, oStrides = {5, 30, 1};
      std::vector<unsigned char> x(n * size), o((2 + n) * size, 0xCD);
      std::vector<uint8_t> m(1 + 2 * maskDense.size(), 0x5A);
      for (size_t b = 0; b < maskDense.size(); ++b) m[1 + 2 * b] = maskDense[b];
      for (int64_t i = 0; i < 6; ++i) {
        for (int64_t j = 0; j < 7; ++j) {
          for (int64_t k = 0; k < 5; ++k) {
            const int64_t logical = (i * 7 + j) * 5 + k;
            std::memcpy(&x[(i * xStrides[0] + j * xStrides[1] + k * xStrides[2]) * size], &dense[logical * size], size);
          }
        }
      }
      const auto maskElements = static_cast<int64_t>(maskDense.size());
      auto xv = makeView(x.data(), xDtype, shape, xStrides, 0, n);
      auto mv = makeView(m.data(), ACL_UINT8, {maskElements}, {2}, 1, static_cast<int64_t>(m.size()));
      auto ov = makeView(o.data(), xDtype, shape, oStrides, 2, 2 + n);
      runDoMask(xv.get(), mv.get(), prob, ov.get());
      for (int64_t i = 0; i < 6; ++i) {
        for (int64_t j = 0; j < 7; ++j) {
          for (int64_t k = 0; k < 5; ++k) {
            const int64_t logical = (i * 7 + j) * 5 + k;
            const int64_t at = 2 + i * oStrides[0] + j * oStrides[1] + k * oStrides[2];
            ASSERT_EQ(std::memcmp(&o[at * size], &want[logical * size], size), 0)
                << "dtype " << xDtype << " prob " << prob << " element " << logical;
          }
        }
      }
      for (size_t b = 0; b < 2 * size; ++b) EXPECT_EQ(o[b], 0xCD) << "wrote before the view";
    }
  }
}

TEST(DropoutDoMaskValues, InPlaceAndZeroDim) {
  for (aclDataType dtype : kDtypes) {
    auto x = randomElements(dtype, 300, 51);
    auto mask = randomMask(48, 52);
    auto want = goldenOf(dtype, dtype, x, mask, 0.25);
    auto xv = makeView(x.data(), dtype, {3, 100});
    auto mv = makeView(mask.data(), ACL_UINT8, {48});
    runDoMask(xv.get(), mv.get(), 0.25, xv.get());
    EXPECT_EQ(x, want) << dtype;

    auto one = randomElements(dtype, 1, 53);
    std::vector<unsigned char> out(one.size());
    auto x0 = makeView(one.data(), dtype, {});
    auto o0 = makeView(out.data(), dtype, {});
    runDoMask(x0.get(), mv.get(), 0.25, o0.get());
    EXPECT_EQ(out, goldenOf(dtype, dtype, one, mask, 0.25)) << dtype;
  }
}

TEST(DropoutDoMaskValues, LargeOutputTakesStreamingPathAndStaysExactForAnyThreadCount) {
  const int64_t n = (int64_t{9} << 19) + 5;  // 18 MiB of fp32 output
  auto x = randomElements(ACL_FLOAT, n, 61);
  auto mask = randomMask(maskBytesFor(n), 62);
  auto want = goldenOf(ACL_FLOAT, ACL_FLOAT, x, mask, 0.1);
  auto xv = makeView(x.data(), ACL_FLOAT, {n});
  auto mv = makeView(mask.data(), ACL_UINT8, {maskBytesFor(n)});
  for (int threads : {1, 2, 3}) {
    setThreadCount(threads);
    for (int64_t offset : {0, 1}) {
      AlignedBytes out((n + 1) * 4, 0x5A);
      auto ov = makeView(out.get(), ACL_FLOAT, {n}, {1}, offset, n + 1);
      runDoMask(xv.get(), mv.get(), 0.1, ov.get());
      EXPECT_EQ(std::memcmp(out.get() + offset * 4, want.data(), want.size()), 0)
          << threads << " threads, offset " << offset;
    }
  }
  setThreadCount(0);
}

}  // namespace
}  // namespace gradkit::test
