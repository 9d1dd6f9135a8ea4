// The tile GEMM (core/tile_gemm.h) against an fp64 triple loop written here: every transpose combination,
// odd sizes, padded leading dims, alpha/beta (beta = 0 over NaN), fp32 and bf16. Every compiled Highway
// target must give the same bits as the scalar reference (the kernels share one summation order: one fp32
// fma per k, k ascending), and the same bits on any thread. The scratch is guarded against overruns.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/kernel_select.h"
#include "core/tile_gemm.h"
#include "gradkit/float_convert.h"
#include "hwy/targets.h"

namespace {

using gradkit::TileGemm;
using gradkit::TileGemmShape;

constexpr unsigned char kGuard = 0x5C;
constexpr size_t kGuardBytes = 256;

int64_t extent(int64_t rows, int64_t cols, int64_t ld) { return rows == 0 ? 0 : (rows - 1) * ld + cols; }

struct Operands {
  TileGemmShape shape;         // leading dims filled in
  std::vector<float> a, b, c;  // values (bf16 cases: the exact bf16 values)
  std::vector<uint16_t> aBits, bBits;

  const void* aData() const { return shape.inputType == ACL_BF16 ? static_cast<const void*>(aBits.data()) : a.data(); }
  const void* bData() const { return shape.inputType == ACL_BF16 ? static_cast<const void*>(bBits.data()) : b.data(); }
};

Operands makeOperands(const TileGemmShape& given, uint32_t seed) {
  Operands o;
  o.shape = TileGemm(given).shape();
  const TileGemmShape& s = o.shape;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  o.a.resize(static_cast<size_t>(s.transA ? extent(s.k, s.m, s.lda) : extent(s.m, s.k, s.lda)));
  o.b.resize(static_cast<size_t>(s.transB ? extent(s.n, s.k, s.ldb) : extent(s.k, s.n, s.ldb)));
  o.c.resize(static_cast<size_t>(extent(s.m, s.n, s.ldc)));
  for (float& x : o.a) x = dist(rng);
  for (float& x : o.b) x = dist(rng);
  for (float& x : o.c) x = dist(rng);
  if (s.inputType == ACL_BF16) {
    for (float& x : o.a) {
      o.aBits.push_back(gradkit::floatToBf16(x));
      x = gradkit::bf16ToFloat(o.aBits.back());
    }
    for (float& x : o.b) {
      o.bBits.push_back(gradkit::floatToBf16(x));
      x = gradkit::bf16ToFloat(o.bBits.back());
    }
  }
  return o;
}

/** Runs the TileGemm on a copy of o.c with a guarded scratch of exactly scratchBytes(); checks the guards. */
std::vector<float> runTile(const TileGemm& gemm, const Operands& o, std::vector<float> c) {
  std::vector<unsigned char> scratch(gemm.scratchBytes() + 2 * kGuardBytes + 64, kGuard);
  // 64-byte aligned start after the front guard.
  const size_t misalign = reinterpret_cast<uintptr_t>(scratch.data() + kGuardBytes) % 64;
  unsigned char* start = scratch.data() + kGuardBytes + (misalign ? 64 - misalign : 0);
  gemm.run(o.aData(), o.bData(), c.data(), gemm.scratchBytes() ? start : nullptr);
  for (unsigned char* p = scratch.data(); p < start; ++p) EXPECT_EQ(*p, kGuard) << "scratch underrun";
  for (unsigned char* p = start + gemm.scratchBytes(); p < scratch.data() + scratch.size(); ++p) {
    EXPECT_EQ(*p, kGuard) << "scratch overrun";
  }
  return c;
}

/** The scalar reference on a copy of o.c. */
std::vector<float> runReference(const Operands& o) {
  std::vector<float> c = o.c;
  gradkit::tile_gemm_detail::runScalar(o.shape, o.aData(), o.bData(), c.data());
  return c;
}

/** fp64 check of every C element (and untouched padding between rows of C). */
void expectNearFp64(const Operands& o, const std::vector<float>& got, const std::string& what) {
  const TileGemmShape& s = o.shape;
  const double u = std::ldexp(1.0, -24);
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      double sum = 0.0, sumAbs = 0.0;
      for (int64_t k = 0; k < s.k; ++k) {
        const double av = o.a[static_cast<size_t>(s.transA ? k * s.lda + i : i * s.lda + k)];
        const double bv = o.b[static_cast<size_t>(s.transB ? j * s.ldb + k : k * s.ldb + j)];
        sum += av * bv;
        sumAbs += std::fabs(av * bv);
      }
      const size_t at = static_cast<size_t>(i * s.ldc + j);
      const double cOld = s.beta == 0.0f ? 0.0 : static_cast<double>(o.c[at]);
      const double expected = s.alpha * sum + s.beta * cOld;
      // K fma roundings, the alpha product and the beta fma: (K + 2) u relative to the magnitudes involved.
      const double bound = (s.k + 3) * u * (std::fabs(s.alpha) * sumAbs + std::fabs(s.beta * cOld)) + 1e-30;
      ASSERT_TRUE(std::isfinite(got[at])) << what << " (" << i << ", " << j << ")";
      ASSERT_LE(std::fabs(got[at] - expected), bound) << what << " (" << i << ", " << j << ")";
    }
    for (int64_t j = s.n; j < s.ldc && i + 1 < s.m; ++j) {  // padding between rows stays as it was
      const size_t at = static_cast<size_t>(i * s.ldc + j);
      ASSERT_EQ(std::memcmp(&got[at], &o.c[at], sizeof(float)), 0) << what << " wrote padding";
    }
  }
}

void expectSameBits(const std::vector<float>& x, const std::vector<float>& y, const std::string& what) {
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(std::memcmp(&x[i], &y[i], sizeof(float)), 0)
        << what << " element " << i << ": " << x[i] << " vs " << y[i];
  }
}

std::string describe(const TileGemmShape& s) {
  return std::string(s.inputType == ACL_BF16 ? "bf16" : "fp32") + " m" + std::to_string(s.m) + " n" +
         std::to_string(s.n) + " k" + std::to_string(s.k) + (s.transA ? " At" : " A") + (s.transB ? " Bt" : " B") +
         " lda" + std::to_string(s.lda) + " ldb" + std::to_string(s.ldb) + " ldc" + std::to_string(s.ldc) + " alpha" +
         std::to_string(s.alpha) + " beta" + std::to_string(s.beta);
}

/** Runs `s` on every compiled target the CPU supports; checks fp64 bounds and identical bits with scalar. */
void checkAllTargets(const TileGemmShape& given, uint32_t seed) {
  const Operands o = makeOperands(given, seed);
  const std::string what = describe(o.shape);
  const std::vector<float> reference = runReference(o);
  expectNearFp64(o, reference, what + " scalar");
  for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    const TileGemm gemm(given);
    const std::vector<float> got = runTile(gemm, o, o.c);
    expectSameBits(got, reference, what + " target " + hwy::TargetName(target) + " kernel " + gemm.kernelName());
    // The target's SIMD kernel itself, also when GRADKIT_FORCE_SCALAR makes TileGemm use the scalar one.
    const size_t bytes = gradkit::tile_gemm_detail::simdScratchBytes(o.shape);
    std::vector<float> scratch(bytes / sizeof(float) + 1);
    std::vector<float> simd = o.c;
    if (gradkit::tile_gemm_detail::runSimd(o.shape, o.aData(), o.bData(), simd.data(), scratch.data(), bytes)) {
      expectSameBits(simd, reference, what + " SIMD kernel of " + hwy::TargetName(target));
    } else {
      EXPECT_EQ(bytes, 0u) << hwy::TargetName(target) << " refused its own scratch size";
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

struct Size {
  int64_t m, n, k;
};

const Size kSizes[] = {{1, 1, 1},  {3, 17, 5},   {17, 3, 63}, {63, 65, 17}, {65, 63, 128}, {64, 64, 128},
                       {7, 33, 1}, {128, 31, 3}, {1, 65, 65}, {65, 1, 7},   {13, 97, 33},  {40, 16, 256}};

TEST(TileGemm, EveryTransposeSizeDtypeAndTargetMatchesFp64AndScalarBits) {
  uint32_t seed = 1;
  for (aclDataType type : {ACL_FLOAT, ACL_BF16}) {
    for (int trans = 0; trans < 4; ++trans) {
      for (const Size& size : kSizes) {
        TileGemmShape s;
        s.m = size.m;
        s.n = size.n;
        s.k = size.k;
        s.transA = (trans & 1) != 0;
        s.transB = (trans & 2) != 0;
        s.inputType = type;
        checkAllTargets(s, seed++);
      }
    }
  }
}

TEST(TileGemm, PaddedLeadingDimsAndAlphaBeta) {
  const float alphaBeta[][2] = {{1.0f, 0.0f}, {0.5f, -1.25f}, {-2.0f, 1.0f}, {0.0f, 0.75f}};
  uint32_t seed = 1000;
  for (aclDataType type : {ACL_FLOAT, ACL_BF16}) {
    for (int trans = 0; trans < 4; ++trans) {
      for (const Size& size : {Size{17, 33, 63}, Size{65, 17, 9}, Size{6, 16, 128}}) {
        for (const auto& ab : alphaBeta) {
          TileGemmShape s;
          s.m = size.m;
          s.n = size.n;
          s.k = size.k;
          s.transA = (trans & 1) != 0;
          s.transB = (trans & 2) != 0;
          s.lda = (s.transA ? s.m : s.k) + 5;
          s.ldb = (s.transB ? s.k : s.n) + 64;  // power-of-two-ish strides too
          s.ldc = s.n + 3;
          s.inputType = type;
          s.alpha = ab[0];
          s.beta = ab[1];
          checkAllTargets(s, seed++);
        }
      }
    }
  }
}

TEST(TileGemm, BetaZeroIgnoresNanInC) {
  for (aclDataType type : {ACL_FLOAT, ACL_BF16}) {
    for (int trans = 0; trans < 4; ++trans) {
      TileGemmShape s;
      s.m = 19;
      s.n = 37;
      s.k = 24;
      s.ldc = 40;
      s.transA = (trans & 1) != 0;
      s.transB = (trans & 2) != 0;
      s.inputType = type;
      s.alpha = 1.5f;
      const Operands o = makeOperands(s, 77 + trans);
      std::vector<float> nanC(o.c.size(), std::numeric_limits<float>::quiet_NaN());
      Operands withNan = o;
      withNan.c = nanC;
      const TileGemm gemm(s);
      const std::vector<float> got = runTile(gemm, withNan, nanC);
      for (int64_t i = 0; i < s.m; ++i) {
        for (int64_t j = 0; j < s.n; ++j) ASSERT_FALSE(std::isnan(got[static_cast<size_t>(i * s.ldc + j)]));
      }
      expectSameBits(got, runReference(withNan), describe(o.shape) + " NaN C");
      // And the values are those of any other C.
      std::vector<float> zeroC(o.c.size(), 0.0f);
      Operands withZero = o;
      withZero.c = zeroC;
      const std::vector<float> fromZero = runTile(gemm, withZero, zeroC);
      for (int64_t i = 0; i < s.m; ++i) {
        for (int64_t j = 0; j < s.n; ++j) {
          const size_t at = static_cast<size_t>(i * s.ldc + j);
          ASSERT_EQ(std::memcmp(&got[at], &fromZero[at], sizeof(float)), 0);
        }
      }
    }
  }
}

TEST(TileGemm, EmptySumWritesAlphaTimesZeroPlusBetaC) {
  TileGemmShape s;
  s.m = 3;
  s.n = 5;
  s.k = 0;
  s.beta = 2.0f;
  const TileGemm gemm(s);
  EXPECT_EQ(gemm.scratchBytes(), 0u);
  std::vector<float> c(15, 1.5f);
  gemm.run(nullptr, nullptr, c.data(), nullptr);
  for (float x : c) EXPECT_EQ(x, 3.0f);
  s.beta = 0.0f;
  std::vector<float> nanC(15, std::numeric_limits<float>::quiet_NaN());
  TileGemm(s).run(nullptr, nullptr, nanC.data(), nullptr);
  for (float x : nanC) EXPECT_EQ(x, 0.0f);
}

TEST(TileGemm, SameBitsOnEveryThread) {
  for (aclDataType type : {ACL_FLOAT, ACL_BF16}) {
    TileGemmShape s;
    s.m = 128;
    s.n = 96;
    s.k = 128;
    s.transB = true;
    s.inputType = type;
    s.beta = 0.5f;
    const Operands o = makeOperands(s, 4242);
    const TileGemm gemm(s);
    const std::vector<float> here = runTile(gemm, o, o.c);
    constexpr int kThreads = 4;
    std::vector<std::vector<float>> results(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int repeat = 0; repeat < 3; ++repeat) results[t] = runTile(gemm, o, o.c);
      });
    }
    for (std::thread& thread : threads) thread.join();
    for (int t = 0; t < kThreads; ++t) expectSameBits(results[t], here, "thread " + std::to_string(t));
    expectSameBits(here, runReference(o), "scalar");
  }
}

TEST(TileGemm, KernelNameAndScratch) {
  TileGemmShape s;
  s.m = 64;
  s.n = 64;
  s.k = 128;
  const TileGemm gemm(s);
  const std::string name = gemm.kernelName();
  if (gradkit::scalarKernelsForced()) {  // GRADKIT_FORCE_SCALAR: the scalar reference, no scratch
    EXPECT_EQ(name, "scalar");
    EXPECT_EQ(gemm.scratchBytes(), 0u);
    return;
  }
  EXPECT_GE(gemm.scratchBytes(), gradkit::tile_gemm_detail::simdScratchBytes(gemm.shape()));
  EXPECT_GE(gemm.scratchBytes(), size_t{64 * 128 * 4});  // B packed as fp32
  if ((hwy::SupportedTargets() & HWY_AVX2) != 0) {       // FMA: the best target's own kernel
    const int64_t usable = hwy::SupportedTargets() & HWY_TARGETS;
    EXPECT_EQ(name, hwy::TargetName(usable & -usable));
  }
  EXPECT_FALSE(name.empty());
}

TEST(TileGemm, RejectsBadShapes) {
  TileGemmShape s;
  s.m = 4;
  s.n = 4;
  s.k = 4;
  s.lda = 3;
  EXPECT_THROW(TileGemm{s}, std::invalid_argument);
  s.lda = 0;
  s.transB = true;
  s.ldb = 2;
  EXPECT_THROW(TileGemm{s}, std::invalid_argument);
  s.ldb = 0;
  s.ldc = 3;
  EXPECT_THROW(TileGemm{s}, std::invalid_argument);
  s.ldc = 0;
  s.inputType = ACL_FLOAT16;
  EXPECT_THROW(TileGemm{s}, std::invalid_argument);
  s.inputType = ACL_FLOAT;
  s.m = -1;
  EXPECT_THROW(TileGemm{s}, std::invalid_argument);
  s.m = 4;
  s.beta = std::numeric_limits<float>::quiet_NaN();
  EXPECT_THROW(TileGemm{s}, std::invalid_argument);
}

// A scale from the data (FP8 de-quantisation) may be NaN or infinite: it propagates as t = alpha * acc, in the
// scalar kernel and in every target's SIMD kernel, instead of stopping the call.
TEST(TileGemm, NonFiniteAlphaPropagates) {
  TileGemmShape s;
  s.m = 5, s.n = 37, s.k = 9;
  s.lda = s.k, s.ldb = s.n, s.ldc = s.n;
  std::vector<float> a(static_cast<size_t>(s.m * s.k)), b(static_cast<size_t>(s.k * s.n));
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i % 7) - 3.0f;
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(i % 5) - 2.0f;
  const auto check = [&](const std::vector<float>& c, float alpha, const std::string& what) {
    for (int64_t i = 0; i < s.m; ++i) {
      for (int64_t j = 0; j < s.n; ++j) {
        float acc = 0.0f;
        for (int64_t k = 0; k < s.k; ++k) acc = std::fma(a[i * s.k + k], b[k * s.n + j], acc);
        const float expected = alpha * acc, got = c[static_cast<size_t>(i * s.n + j)];
        if (std::isnan(expected)) {
          EXPECT_TRUE(std::isnan(got)) << what << " (" << i << ", " << j << ")";
        } else {
          EXPECT_EQ(got, expected) << what << " (" << i << ", " << j << ")";
        }
      }
    }
  };
  for (float alpha : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    s.alpha = alpha;
    const std::string what = "alpha " + std::to_string(alpha);
    std::vector<float> c(static_cast<size_t>(s.m * s.n), 0.0f);
    gradkit::tile_gemm_detail::runScalar(s, a.data(), b.data(), c.data());
    check(c, alpha, what + " scalar");
    for (int64_t target : hwy::SupportedAndGeneratedTargets()) {
      hwy::SetSupportedTargetsForTest(target);
      const TileGemm gemm(s);
      std::vector<float> scratch(gemm.scratchBytes() / sizeof(float) + 1);
      std::fill(c.begin(), c.end(), 0.0f);
      gemm.run(a.data(), b.data(), c.data(), scratch.data());
      check(c, alpha, what + " target " + hwy::TargetName(target) + " kernel " + gemm.kernelName());
    }
    hwy::SetSupportedTargetsForTest(0);
  }
}

}  // namespace
