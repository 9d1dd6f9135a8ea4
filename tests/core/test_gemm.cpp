// The GEMM wrapper against a naive fp64 triple loop: shapes, transposes, padded leading dims,
// alpha/beta, bf16 operands; bitwise determinism across runs; rejected shapes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstring>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "core/gemm.h"
#include "core/parallel.h"
#include "gradkit/float_convert.h"

namespace {

/** Runs `gemm` with freshly allocated scratch of the size it asks for (64-byte aligned). */
void runWithScratch(const gradkit::Gemm& gemm, const void* a, const void* b, float* c) {
  std::vector<std::max_align_t> unaligned(gemm.scratchBytes() / sizeof(std::max_align_t) +
                                          64 / sizeof(std::max_align_t) + 1);
  void* base = unaligned.data();
  size_t room = unaligned.size() * sizeof(std::max_align_t);
  gemm.run(a, b, c, std::align(64, gemm.scratchBytes(), base, room));
}

}  // namespace

namespace {

using gradkit::Gemm;
using gradkit::GemmShape;

struct Operands {
  std::vector<float> a, b, c;          // fp32 values (bf16 cases: the exact bf16 values)
  std::vector<uint16_t> aBf16, bBf16;  // bf16 bits when inputType == ACL_BF16
};

int64_t extent(int64_t rows, int64_t cols, int64_t ld) { return rows == 0 ? 0 : (rows - 1) * ld + cols; }

Operands makeOperands(const GemmShape& s, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  Operands o;
  const int64_t lda = s.lda ? s.lda : (s.transA ? s.m : s.k);
  const int64_t ldb = s.ldb ? s.ldb : (s.transB ? s.k : s.n);
  const int64_t ldc = s.ldc ? s.ldc : s.n;
  o.a.resize(static_cast<size_t>(s.transA ? extent(s.k, s.m, lda) : extent(s.m, s.k, lda)));
  o.b.resize(static_cast<size_t>(s.transB ? extent(s.n, s.k, ldb) : extent(s.k, s.n, ldb)));
  o.c.resize(static_cast<size_t>(extent(s.m, s.n, ldc)));
  for (float& x : o.a) x = dist(rng);
  for (float& x : o.b) x = dist(rng);
  for (float& x : o.c) x = dist(rng);
  if (s.inputType == ACL_BF16) {
    for (float& x : o.a) {
      o.aBf16.push_back(gradkit::floatToBf16(x));
      x = gradkit::bf16ToFloat(o.aBf16.back());
    }
    for (float& x : o.b) {
      o.bBf16.push_back(gradkit::floatToBf16(x));
      x = gradkit::bf16ToFloat(o.bBf16.back());
    }
  }
  return o;
}

/** Checks C = alpha*op(A)*op(B) + beta*C0 against fp64 with the fp32-accumulation bound; padding untouched. */
void checkAgainstFp64(const GemmShape& s, uint32_t seed) {
  SCOPED_TRACE(::testing::Message() << "m=" << s.m << " n=" << s.n << " k=" << s.k << " transA=" << s.transA
                                    << " transB=" << s.transB << " lda=" << s.lda << " ldb=" << s.ldb
                                    << " ldc=" << s.ldc << " bf16=" << (s.inputType == ACL_BF16) << " alpha=" << s.alpha
                                    << " beta=" << s.beta);
  Operands o = makeOperands(s, seed);
  const std::vector<float> c0 = o.c;
  const Gemm gemm(s);
  const int64_t lda = gemm.shape().lda, ldb = gemm.shape().ldb, ldc = gemm.shape().ldc;
  const void* a = s.inputType == ACL_BF16 ? static_cast<const void*>(o.aBf16.data()) : o.a.data();
  const void* b = s.inputType == ACL_BF16 ? static_cast<const void*>(o.bBf16.data()) : o.b.data();
  runWithScratch(gemm, a, b, o.c.data());

  const auto opA = [&](int64_t i, int64_t p) {
    return static_cast<double>(s.transA ? o.a[p * lda + i] : o.a[i * lda + p]);
  };
  const auto opB = [&](int64_t p, int64_t j) {
    return static_cast<double>(s.transB ? o.b[j * ldb + p] : o.b[p * ldb + j]);
  };
  const double u = std::ldexp(1.0, -24);
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      double dot = 0.0, dotAbs = 0.0;
      for (int64_t p = 0; p < s.k; ++p) {
        dot += opA(i, p) * opB(p, j);
        dotAbs += std::fabs(opA(i, p) * opB(p, j));
      }
      const double old = c0[static_cast<size_t>(i * ldc + j)];
      const double want = s.alpha * dot + (s.beta == 0.0f ? 0.0 : s.beta * old);
      // fp32 accumulation of K products (each rounded at most once), then scale and sum.
      const double bound = (s.k + 2) * u * std::fabs(s.alpha) * dotAbs + 2 * u * std::fabs(s.beta * old) + 1e-30;
      const double got = o.c[static_cast<size_t>(i * ldc + j)];
      ASSERT_LE(std::fabs(got - want), bound) << "at (" << i << ", " << j << ") got " << got << " want " << want;
    }
    for (int64_t j = s.n; j < ldc && i * ldc + j < static_cast<int64_t>(o.c.size()); ++j) {
      ASSERT_EQ(o.c[static_cast<size_t>(i * ldc + j)], c0[static_cast<size_t>(i * ldc + j)]) << "padding written";
    }
  }
}

TEST(Gemm, Fp32ShapesAndTransposes) {
  uint32_t seed = 1;
  for (const int64_t m : {1, 7, 33, 129}) {
    for (const int64_t n : {1, 7, 33, 129}) {
      for (const int64_t k : {1, 7, 33, 129}) {
        for (const int t : {0, 1, 2, 3}) {
          GemmShape s;
          s.m = m;
          s.n = n;
          s.k = k;
          s.transA = t & 1;
          s.transB = t & 2;
          checkAgainstFp64(s, seed++);
        }
      }
    }
  }
}

TEST(Gemm, PaddedLeadingDimsAlphaBeta) {
  uint32_t seed = 100;
  for (const int t : {0, 1, 2, 3}) {
    for (const auto& [alpha, beta] :
         {std::pair{1.0f, 0.0f}, {0.5f, 0.0f}, {1.0f, 1.0f}, {-2.0f, 0.25f}, {0.0f, 1.0f}}) {
      GemmShape s;
      s.m = 37;
      s.n = 21;
      s.k = 50;
      s.transA = t & 1;
      s.transB = t & 2;
      s.lda = (s.transA ? s.m : s.k) + 5;
      s.ldb = (s.transB ? s.k : s.n) + 3;
      s.ldc = s.n + 11;
      s.alpha = alpha;
      s.beta = beta;
      checkAgainstFp64(s, seed++);
    }
  }
}

TEST(Gemm, Bf16Operands) {
  uint32_t seed = 200;
  for (const int64_t size : {1, 7, 33, 129}) {
    for (const int t : {0, 1, 2, 3}) {
      GemmShape s;
      s.m = size;
      s.n = size + 2;
      s.k = 2 * size + 1;
      s.transA = t & 1;
      s.transB = t & 2;
      s.inputType = ACL_BF16;
      checkAgainstFp64(s, seed++);
      s.lda = (s.transA ? s.m : s.k) + 4;
      s.ldc = s.n + 1;
      s.alpha = 0.75f;
      s.beta = -1.5f;
      checkAgainstFp64(s, seed++);
    }
  }
}

TEST(Gemm, SeveralOutputTilesWithTails) {
  // Large enough in M and N that C is cut into several tiles: with a separate tail tile
  // (1300 x 2600) and with the remainder absorbed by the last tile (1100 x 2100).
  uint32_t seed = 300;
  for (const auto& [m, n] : {std::pair<int64_t, int64_t>{1300, 2600}, {1100, 2100}}) {
    for (const int t : {0, 1, 2, 3}) {
      for (const auto type : {ACL_FLOAT, ACL_BF16}) {
        GemmShape s;
        s.m = m;
        s.n = n;
        s.k = 5;
        s.transA = t & 1;
        s.transB = t & 2;
        s.lda = (s.transA ? s.m : s.k) + 2;
        s.ldc = s.n + 3;
        s.inputType = type;
        s.beta = t == 3 ? 1.0f : 0.0f;
        checkAgainstFp64(s, seed++);
      }
    }
  }
}

TEST(Gemm, BetaZeroIgnoresNaNInOutput) {
  GemmShape s;
  s.m = s.n = s.k = 16;
  Operands o = makeOperands(s, 7);
  std::fill(o.c.begin(), o.c.end(), std::nanf(""));
  runWithScratch(Gemm(s), o.a.data(), o.b.data(), o.c.data());
  for (const float x : o.c) ASSERT_FALSE(std::isnan(x));
}

TEST(Gemm, DeterministicAcrossRuns) {
  for (const auto type : {ACL_FLOAT, ACL_BF16}) {
    GemmShape s;
    s.m = 300;
    s.n = 257;
    s.k = 1031;
    s.inputType = type;
    s.beta = 0.5f;
    const Operands o = makeOperands(s, 11);
    const Gemm gemm(s);
    const void* a = type == ACL_BF16 ? static_cast<const void*>(o.aBf16.data()) : o.a.data();
    const void* b = type == ACL_BF16 ? static_cast<const void*>(o.bBf16.data()) : o.b.data();
    std::vector<float> first = o.c, second = o.c;
    runWithScratch(gemm, a, b, first.data());
    runWithScratch(gemm, a, b, second.data());
    EXPECT_EQ(std::memcmp(first.data(), second.data(), first.size() * sizeof(float)), 0);
    // Another Gemm object with the same shape gives the same bits too.
    std::vector<float> third = o.c;
    runWithScratch(Gemm(s), a, b, third.data());
    EXPECT_EQ(std::memcmp(first.data(), third.data(), first.size() * sizeof(float)), 0);
  }
}

TEST(Gemm, EmptyDimensions) {
  GemmShape s;
  s.m = 3;
  s.n = 4;
  s.k = 0;
  s.beta = 2.0f;
  std::vector<float> c(12, 1.5f);
  runWithScratch(Gemm(s), nullptr, nullptr, c.data());
  for (const float x : c) EXPECT_EQ(x, 3.0f);  // empty sum: C = beta * C
  s.beta = 0.0f;
  runWithScratch(Gemm(s), nullptr, nullptr, c.data());
  for (const float x : c) EXPECT_EQ(x, 0.0f);
  s.m = 0;
  runWithScratch(Gemm(s), nullptr, nullptr, nullptr);  // nothing to touch
}

TEST(Gemm, RejectsBadShapes) {
  GemmShape s;
  s.m = 4;
  s.n = 4;
  s.k = 4;
  s.lda = 3;  // rows of A hold k = 4 elements
  EXPECT_THROW(Gemm{s}, std::runtime_error);
  s.lda = 0;
  s.transB = true;
  s.ldb = 2;
  EXPECT_THROW(Gemm{s}, std::runtime_error);
  s.ldb = 0;
  s.ldc = 1;
  EXPECT_THROW(Gemm{s}, std::runtime_error);
  s.ldc = 0;
  s.m = -1;
  EXPECT_THROW(Gemm{s}, std::runtime_error);
  s.m = 4;
  s.inputType = ACL_FLOAT16;
  try {
    Gemm{s};
    ADD_FAILURE() << "FLOAT16 accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("inputType"), std::string::npos) << e.what();
  }
}

}  // namespace

namespace {

TEST(Gemm, SameBitsForAnyThreadCount) {
  // DECISIONS.md: results are bitwise identical for any thread count. Shapes include a small
  // M x N with a long K, where a library could split the reduction over threads.
  const GemmShape shapes[] = {{300, 257, 1031}, {8, 8, 20000}, {1, 64, 4096}, {513, 1, 777}, {1300, 2600, 64}};
  for (GemmShape s : shapes) {
    for (const auto type : {ACL_FLOAT, ACL_BF16}) {
      s.inputType = type;
      const Operands o = makeOperands(s, 21);
      const void* a = type == ACL_BF16 ? static_cast<const void*>(o.aBf16.data()) : o.a.data();
      const void* b = type == ACL_BF16 ? static_cast<const void*>(o.bBf16.data()) : o.b.data();
      std::vector<float> reference;
      for (int threads = 1; threads <= 4; ++threads) {
        gradkit::setThreadCount(threads);
        std::vector<float> c = o.c;
        // The scratch slots of the plan need not match the pool that runs it.
        runWithScratch(Gemm(s, threads == 4 ? 2 : threads), a, b, c.data());
        if (threads == 1) {
          reference = c;
        } else {
          EXPECT_EQ(std::memcmp(reference.data(), c.data(), c.size() * sizeof(float)), 0)
              << "m=" << s.m << " n=" << s.n << " k=" << s.k << " threads=" << threads;
        }
      }
      gradkit::setThreadCount(0);
    }
  }
}

}  // namespace
