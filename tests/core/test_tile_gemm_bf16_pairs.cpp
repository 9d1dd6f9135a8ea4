// TileGemm with Bf16Pairs sums (core/gemm_shape.h). The scalar emulation is checked against VDPBF16PS itself (random
// words with subnormals, Inf and cancellation) and against an fp64 product sum; the AVX512-BF16 kernel against the
// emulation, bit for bit, over every transpose combination, odd and padded sizes and alpha / beta, with the scratch
// guarded. The hardware checks are skipped, saying so, on a CPU without AVX512-BF16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include "core/tile_gemm.h"
#include "core/tile_path.h"
#include "gradkit/float_convert.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

using gradkit::GemmSums;
using gradkit::TileGemm;
using gradkit::TileGemmShape;

constexpr unsigned char kGuard = 0xA7;
constexpr size_t kGuardBytes = 192;

bool hasHardware() { return gradkit::cpuMatrixFeatures().avx512bf16; }

int64_t extent(int64_t rows, int64_t cols, int64_t ld) { return rows == 0 ? 0 : (rows - 1) * ld + cols; }

uint32_t bitsOf(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof(u));
  return u;
}

/** A bf16 word: mostly values in [-1, 1), some subnormal, some far apart in magnitude. */
uint16_t randomBf16(std::mt19937& rng) {
  const uint32_t kind = rng() % 16;
  if (kind == 0) return static_cast<uint16_t>((rng() & 0x8000u) | (rng() & 0x7Fu));  // subnormal or zero
  const uint32_t exponent = kind == 1 ? 1 + rng() % 4 : 110 + rng() % 20;
  return static_cast<uint16_t>((rng() & 0x8000u) | (exponent << 7) | (rng() & 0x7Fu));
}

#if defined(__x86_64__)
/** One VDPBF16PS over zero sums: out[lane] from a and b's words 2 lane, 2 lane + 1. */
__attribute__((target("avx512f,avx512bf16"))) void run16(const uint16_t* a, const uint16_t* b, float* out) {
  const __m512 r =
      _mm512_dpbf16_ps(_mm512_setzero_ps(), (__m512bh)_mm512_loadu_si512(a), (__m512bh)_mm512_loadu_si512(b));
  _mm512_storeu_ps(out, r);
}
#endif

struct Case {
  TileGemmShape shape;
  std::vector<uint16_t> a, b;
  std::vector<float> c;
};

Case makeCase(TileGemmShape given, uint32_t seed) {
  given.inputType = ACL_BF16;
  given.sums = GemmSums::Bf16Pairs;
  Case o;
  o.shape = TileGemm(given).shape();
  const TileGemmShape& s = o.shape;
  std::mt19937 rng(seed);
  o.a.resize(static_cast<size_t>(s.transA ? extent(s.k, s.m, s.lda) : extent(s.m, s.k, s.lda)));
  o.b.resize(static_cast<size_t>(s.transB ? extent(s.n, s.k, s.ldb) : extent(s.k, s.n, s.ldb)));
  o.c.resize(static_cast<size_t>(extent(s.m, s.n, s.ldc)));
  for (uint16_t& x : o.a) x = randomBf16(rng);
  for (uint16_t& x : o.b) x = randomBf16(rng);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& x : o.c) x = dist(rng);
  return o;
}

TEST(TileGemmBf16Pairs, EmulationIsTheInstruction) {
#if defined(__x86_64__)
  if (!hasHardware()) GTEST_SKIP() << "this CPU has no AVX512-BF16: the emulation is checked only against fp64 here";
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20000; ++trial) {
    alignas(64) uint16_t a[32], b[32];
    alignas(64) float hardware[16];
    for (int i = 0; i < 32; ++i) {
      a[i] = randomBf16(rng);
      b[i] = trial % 3 == 0 ? static_cast<uint16_t>(a[i] ^ 0x8000u) : randomBf16(rng);  // exact cancellations
    }
    run16(a, b, hardware);
    for (int lane = 0; lane < 16; ++lane) {
      const TileGemmShape s{1, 1, 2, false, false, 2, 1, 1, ACL_BF16, 1.0f, 0.0f, GemmSums::Bf16Pairs};
      const uint16_t bColumn[2] = {b[2 * lane], b[2 * lane + 1]};
      float emulated = 0.0f;
      gradkit::tile_gemm_detail::runScalarBf16Pairs(s, a + 2 * lane, bColumn, &emulated);
      ASSERT_EQ(bitsOf(emulated), bitsOf(hardware[lane])) << "trial " << trial << " lane " << lane;
    }
  }
#else
  GTEST_SKIP() << "not an x86-64 build";
#endif
}

TEST(TileGemmBf16Pairs, EmulationMatchesFp64) {
  for (const int64_t k : {1, 2, 7, 64, 129}) {
    const Case o = makeCase({5, 9, k, false, false, 0, 0, 0}, static_cast<uint32_t>(k));
    std::vector<float> c = o.c;
    gradkit::tile_gemm_detail::runScalarBf16Pairs(o.shape, o.a.data(), o.b.data(), c.data());
    for (int64_t i = 0; i < o.shape.m; ++i) {
      for (int64_t j = 0; j < o.shape.n; ++j) {
        double sum = 0.0, magnitude = 0.0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const double term = static_cast<double>(gradkit::bf16ToFloat(o.a[i * o.shape.lda + kk])) *
                              gradkit::bf16ToFloat(o.b[kk * o.shape.ldb + j]);
          sum += std::fabs(term) < 1e-36 ? 0.0 : term;
          magnitude += std::fabs(term);
        }
        // fp32 sums of k terms: each rounding is within 2^-24 of the magnitude so far.
        EXPECT_NEAR(c[i * o.shape.ldc + j], sum, static_cast<double>(k + 1) * 0x1p-24 * magnitude + 1e-30)
            << "k " << k << " at " << i << "," << j;
      }
    }
  }
}

TEST(TileGemmBf16Pairs, KernelMatchesEmulationBits) {
  if (!hasHardware()) GTEST_SKIP() << "this CPU has no AVX512-BF16: the kernel cannot run here";
  uint32_t seed = 1;
  for (const bool transA : {false, true}) {
    for (const bool transB : {false, true}) {
      for (const int64_t m : {1, 5, 12, 13, 16, 19, 40}) {  // 13..19: two balanced row blocks
        for (const int64_t n : {1, 16, 17, 33, 70}) {
          for (const int64_t k : {1, 2, 31, 32, 33, 66}) {
            for (const int64_t pad : {0, 3}) {
              TileGemmShape g{m, n, k, transA, transB};
              if (pad != 0) {
                g.lda = (transA ? m : k) + pad;
                g.ldb = (transB ? k : n) + pad;
                g.ldc = n + pad;
              }
              g.alpha = pad == 0 ? 1.0f : 0.37f;
              g.beta = pad == 0 ? 0.0f : -1.25f;
              Case o = makeCase(g, ++seed);
              const TileGemm gemm(o.shape);
              ASSERT_STREQ(gemm.kernelName(), "AVX512-BF16 pairs");
              std::vector<unsigned char> scratch(gemm.scratchBytes() + kGuardBytes, kGuard);
              std::vector<float> expected = o.c;
              gradkit::tile_gemm_detail::runScalarBf16Pairs(o.shape, o.a.data(), o.b.data(), expected.data());
              gemm.run(o.a.data(), o.b.data(), o.c.data(), scratch.data());
              for (size_t e = 0; e < expected.size(); ++e) {
                ASSERT_EQ(bitsOf(o.c[e]), bitsOf(expected[e]))
                    << "m " << m << " n " << n << " k " << k << " transA " << transA << " transB " << transB << " pad "
                    << pad << " element " << e;
              }
              for (size_t e = gemm.scratchBytes(); e < scratch.size(); ++e) ASSERT_EQ(scratch[e], kGuard);
            }
          }
        }
      }
    }
  }
}

TEST(TileGemmBf16Pairs, RejectsFloatOperands) {
  TileGemmShape g{4, 4, 4};
  g.sums = GemmSums::Bf16Pairs;
  EXPECT_THROW(TileGemm{g}, std::invalid_argument);
}

}  // namespace
