// DropoutGenMask / DropoutGenMaskV2 masks against the golden (its own Philox and double-precision uniform),
// byte for byte: the spec's self-consistency vector, every tail length, probabilities, seeds and offsets with
// high bits, the fills, strided outputs, the SIMD kernel against the scalar one at every byte position and
// across the 2^32-block boundary, and any thread count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

#include "aclnnop/aclnn_dropout_gen_mask.h"
#include "core/parallel.h"
#include "golden/dropout_gen_mask.h"
#include "hwy/targets.h"
#include "ops/dropout/gen_mask_stream.h"
#include "ops/dropout/kernels/gen_mask_kernel.h"
#include "ops/op_test_util.h"

namespace gradkit::test {
namespace {

int64_t maskBytes(int64_t n) { return (n + 127) / 128 * 16; }

// Runs GenMaskV2 (or V1) for a 1-D shape of n elements into a fresh buffer prefilled with 0x5C.
std::vector<uint8_t> genMask(int64_t n, double prob, int64_t seed, int64_t offset, bool v1 = false) {
  std::vector<uint8_t> mask(static_cast<size_t>(maskBytes(n)), 0x5C);
  const int64_t dims[1] = {n};
  aclIntArray* shape = aclCreateIntArray(dims, 1);
  auto out = makeView(mask.data(), ACL_UINT8, {maskBytes(n)});
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus status =
      v1 ? aclnnDropoutGenMaskGetWorkspaceSize(shape, prob, seed, offset, out.get(), &size, &executor)
         : aclnnDropoutGenMaskV2GetWorkspaceSize(shape, prob, seed, offset, ACL_FLOAT16, out.get(), &size, &executor);
  aclDestroyIntArray(shape);
  EXPECT_EQ(status, ACLNN_SUCCESS) << recentError();
  if (status != ACLNN_SUCCESS) return mask;
  std::vector<unsigned char> workspace(size);
  EXPECT_EQ(v1 ? aclnnDropoutGenMask(workspace.data(), size, executor, nullptr)
               : aclnnDropoutGenMaskV2(workspace.data(), size, executor, nullptr),
            ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << recentError();
  return mask;
}

TEST(DropoutGenMaskValues, SpecSelfConsistencyVector) {
  std::vector<uint8_t> offset0(16, 0), offset8(16, 0);
  offset0[0] = 0xae, offset0[1] = 0x80, offset0[2] = 0x0d;
  offset8[0] = 0x2a, offset8[1] = 0x2d, offset8[2] = 0x0d;
  EXPECT_EQ(genMask(20, 0.5, 42, 0), offset0);
  EXPECT_EQ(genMask(20, 0.5, 42, 8), offset8);
  EXPECT_EQ(golden::dropoutGenMask(20, 0.5, 42, 0), offset0);
  EXPECT_EQ(golden::dropoutGenMask(20, 0.5, 42, 8), offset8);
}

TEST(DropoutGenMaskValues, EveryTailLengthMatchesTheGolden) {
  for (int64_t n = 1; n <= 300; ++n) {
    const int64_t seed = 1000 + n;
    ASSERT_EQ(genMask(n, 0.3, seed, 4 * n), golden::dropoutGenMask(n, 0.3, seed, 4 * n)) << "n " << n;
  }
}

TEST(DropoutGenMaskValues, ProbabilitiesSeedsAndOffsetsMatchTheGolden) {
  const double probs[] = {0.021, 0.1, 0.15, 0.319, 0.5, 0.9, 0.999, 1e-6, 1.0 - 1e-9, 3 * DBL_EPSILON};
  const int64_t seeds[] = {0, 1, 42, -1, INT64_MIN, INT64_MAX, 0x123456789abcdef0, -0x7edcba9876543210};
  const int64_t offsets[] = {0, 4, 8, 1, -4, 0x100000000, INT64_MAX, INT64_MIN};
  int64_t n = 1000;
  for (double prob : probs) {
    for (int64_t seed : seeds) {
      for (int64_t offset : offsets) {
        n = n % 1500 + 37;  // varied lengths, most with a partial last byte
        ASSERT_EQ(genMask(n, prob, seed, offset), golden::dropoutGenMask(n, prob, seed, offset))
            << "prob " << prob << " seed " << seed << " offset " << offset << " n " << n;
      }
    }
  }
}

TEST(DropoutGenMaskValues, KeepRateFollowsTheProbability) {
  const int64_t n = 1 << 20;
  for (double prob : {0.1, 0.5, 0.9}) {
    const std::vector<uint8_t> mask = genMask(n, prob, 7, 0);
    int64_t kept = 0;
    for (uint8_t byte : mask) kept += __builtin_popcount(byte);
    // Binomial standard deviation at n = 2^20 is at most 512; allow 6 sigma.
    EXPECT_NEAR(static_cast<double>(kept), (1.0 - prob) * n, 3100.0) << prob;
  }
}

TEST(DropoutGenMaskValues, GenMaskV1EqualsV2) {
  for (int64_t n : {1, 20, 129, 5000}) {
    EXPECT_EQ(genMask(n, 0.25, 99, 12, /*v1=*/true), genMask(n, 0.25, 99, 12)) << n;
  }
}

TEST(DropoutGenMaskValues, ProbabilitiesWithinDblEpsilonOfZeroOrOneFillEveryByte) {
  for (int64_t n : {1, 20, 128, 129, 1000}) {
    for (double prob : {0.0, DBL_EPSILON, DBL_EPSILON / 2, 5e-324}) {
      EXPECT_EQ(genMask(n, prob, 3, 0), std::vector<uint8_t>(maskBytes(n), 0xFF)) << prob;
    }
    for (double prob : {1.0, 1.0 - DBL_EPSILON, std::nextafter(1.0, 0.0)}) {
      EXPECT_EQ(genMask(n, prob, 3, 0), std::vector<uint8_t>(maskBytes(n), 0x00)) << prob;
    }
    // Just outside the window the Philox stream decides (and bits past n are 0, unlike the 0xFF fill).
    const double nearZero = 2 * DBL_EPSILON;
    EXPECT_EQ(genMask(n, nearZero, 3, 0), golden::dropoutGenMask(n, nearZero, 3, 0));
    if (n % 128 != 0) {
      EXPECT_NE(genMask(n, nearZero, 3, 0), std::vector<uint8_t>(maskBytes(n), 0xFF));
    }
  }
}

TEST(DropoutGenMaskValues, ZeroDimShapeIsOneElement) {
  std::vector<uint8_t> mask(16, 0x5C);
  aclIntArray* shape = aclCreateIntArray(nullptr, 0);
  auto out = makeView(mask.data(), ACL_UINT8, {16});
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(aclnnDropoutGenMaskV2GetWorkspaceSize(shape, 0.5, 5, 0, ACL_FLOAT, out.get(), &size, &executor), 0);
  aclDestroyIntArray(shape);
  ASSERT_EQ(aclnnDropoutGenMaskV2(nullptr, size, executor, nullptr), 0);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  EXPECT_EQ(mask, golden::dropoutGenMask(1, 0.5, 5, 0));
}

TEST(DropoutGenMaskValues, StridedOutWritesTheMaskThroughTheView) {
  // 200 elements -> 32 mask bytes, written to every third byte of a buffer starting at byte 2.
  const int64_t n = 200, bytes = maskBytes(n);
  std::vector<uint8_t> storage(2 + 3 * bytes, 0x5C);
  const int64_t dims[2] = {8, 25};
  aclIntArray* shape = aclCreateIntArray(dims, 2);
  auto out = makeView(storage.data(), ACL_UINT8, {bytes}, {3}, 2, 2 + 3 * bytes);
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(aclnnDropoutGenMaskV2GetWorkspaceSize(shape, 0.4, 11, 16, ACL_BF16, out.get(), &size, &executor), 0);
  aclDestroyIntArray(shape);
  EXPECT_GE(size, static_cast<uint64_t>(bytes));
  std::vector<unsigned char> workspace(size);
  ASSERT_EQ(aclnnDropoutGenMaskV2(workspace.data(), size, executor, nullptr), 0);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  const std::vector<uint8_t> want = golden::dropoutGenMask(n, 0.4, 11, 16);
  for (int64_t i = 0; i < static_cast<int64_t>(storage.size()); ++i) {
    const bool inView = i >= 2 && (i - 2) % 3 == 0;
    EXPECT_EQ(storage[i], inView ? want[(i - 2) / 3] : 0x5C) << i;
  }
}

TEST(DropoutGenMaskValues, SimdKernelMatchesScalarKernelAtEveryByteRange) {
  const kernels::MaskStream stream = ops::makeMaskStream(0.37, -77, 0x1234567800000004);
  const int64_t n = 3000;
  const int64_t bytes = maskBytes(n);
  for (int64_t first = 0; first < 40; ++first) {
    for (int64_t count : {int64_t{1}, int64_t{7}, int64_t{8}, int64_t{15}, int64_t{16}, int64_t{17}, int64_t{33},
                          int64_t{64}, int64_t{100}, bytes - first}) {
      if (first + count > bytes) continue;
      std::vector<uint8_t> simd(count + 2, 0x5C), scalar(count + 2, 0x5C);
      kernels::genMaskBytesSimd(stream, n, first, count, simd.data() + 1);
      kernels::genMaskBytesScalar(stream, n, first, count, scalar.data() + 1);
      ASSERT_EQ(simd, scalar) << "first " << first << " count " << count;
      EXPECT_EQ(simd.front(), 0x5C);
      EXPECT_EQ(simd.back(), 0x5C);
    }
  }
  // The whole mask by kernel equals the golden, tail bytes past n included.
  std::vector<uint8_t> whole(bytes);
  kernels::genMaskBytesSimd(stream, n, 0, bytes, whole.data());
  EXPECT_EQ(whole, golden::dropoutGenMask(n, 0.37, -77, 0x1234567800000004));
}

TEST(DropoutGenMaskValues, EveryCompiledSimdTargetMatchesTheScalarKernel) {
  const kernels::MaskStream stream = ops::makeMaskStream(0.7, 31337, 96);
  const int64_t n = 20000 + 5, bytes = maskBytes(n);
  std::vector<uint8_t> scalar(bytes);
  kernels::genMaskBytesScalar(stream, n, 0, bytes, scalar.data());
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    for (int64_t first : {int64_t{0}, int64_t{3}, int64_t{64}}) {
      std::vector<uint8_t> simd(bytes - first);
      kernels::genMaskBytesSimd(stream, n, first, bytes - first, simd.data());
      EXPECT_TRUE(std::equal(simd.begin(), simd.end(), scalar.begin() + first))
          << hwy::TargetName(target) << " first byte " << first;
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

TEST(DropoutGenMaskValues, KeepTestIsStrictlyBelowTheThresholdInBothKernels) {
  // Put the threshold exactly on the word of one element: that element must be dropped, and kept one higher.
  kernels::MaskStream stream = ops::makeMaskStream(0.5, 2024, 0);
  const uint32_t key[2] = {stream.key[0], stream.key[1]};
  const int64_t n = 4096;
  for (int64_t element : {int64_t{0}, int64_t{5}, int64_t{1234}, int64_t{4095}}) {
    const uint32_t counter[4] = {static_cast<uint32_t>(element / 4), 0, 0, 0};
    uint32_t words[4];
    golden::philox4x32x10(counter, key, words);
    const uint32_t word = words[element % 4];
    for (uint64_t below : {uint64_t{word}, uint64_t{word} + 1}) {
      stream.keepBelow = below;
      std::vector<uint8_t> simd(512), scalar(512);
      kernels::genMaskBytesSimd(stream, n, 0, 512, simd.data());
      kernels::genMaskBytesScalar(stream, n, 0, 512, scalar.data());
      const int want = below > word ? 1 : 0;
      EXPECT_EQ((simd[element / 8] >> (element % 8)) & 1, want) << element;
      EXPECT_EQ((scalar[element / 8] >> (element % 8)) & 1, want) << element;
    }
  }
}

TEST(DropoutGenMaskValues, BlockCounterCarriesIntoItsHighWordAt2To32Blocks) {
  // Bytes around block 2^32 (byte 2^31) of a mask of 2^40 elements: only the kernel range is computed. Each
  // bit is checked against the golden Philox with counter [low32(block), high32(block), offset words].
  const int64_t n = int64_t{1} << 40;
  const int64_t seed = 0x0badc0ffee, offset = 0x7700000010;
  const kernels::MaskStream stream = ops::makeMaskStream(0.5, seed, offset);
  const int64_t first = (int64_t{1} << 31) - 24, count = 64;
  std::vector<uint8_t> simd(count), scalar(count);
  kernels::genMaskBytesSimd(stream, n, first, count, simd.data());
  kernels::genMaskBytesScalar(stream, n, first, count, scalar.data());
  EXPECT_EQ(simd, scalar);
  const uint32_t key[2] = {static_cast<uint32_t>(seed), static_cast<uint32_t>(static_cast<uint64_t>(seed) >> 32)};
  for (int64_t k = 0; k < count; ++k) {
    for (int bit = 0; bit < 8; ++bit) {
      const int64_t element = (first + k) * 8 + bit;
      const auto block = static_cast<uint64_t>(element / 4);
      const uint32_t counter[4] = {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                                   static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32)};
      uint32_t words[4];
      golden::philox4x32x10(counter, key, words);
      const double x = static_cast<float>(words[element % 4]);
      const bool keep = static_cast<float>(std::ldexp(x, -32) + std::ldexp(1.0, -33)) < 0.5f;
      ASSERT_EQ((simd[k] >> bit) & 1, keep ? 1 : 0) << "element " << element;
    }
  }
}

TEST(DropoutGenMaskValues, SameMaskForAnyThreadCountAndTheScalarPath) {
  const int64_t n = (int64_t{1} << 21) + 77;  // several parallel chunks and a partial tail
  const std::vector<uint8_t> want = golden::dropoutGenMask(n, 0.319, 123456789, 40);
  for (int threads : {1, 2, 3, 5}) {
    setThreadCount(threads);
    EXPECT_EQ(genMask(n, 0.319, 123456789, 40), want) << threads << " threads";
  }
  setThreadCount(0);
  std::vector<uint8_t> scalar(static_cast<size_t>(maskBytes(n)));
  kernels::genMaskBytesScalar(ops::makeMaskStream(0.319, 123456789, 40), n, 0, maskBytes(n), scalar.data());
  EXPECT_EQ(scalar, want);
}

}  // namespace
}  // namespace gradkit::test
