// TileGemmRowsAdd (core/tile_gemm_rows_add.h): the rows of C gain the sum of two products, repeated rows in row
// order. Checked against the composition it is defined by (two TileGemm runs into a tile, then the rows added by a
// plain loop), bit for bit, and against an fp64 sum; the fused AVX512-BF16 kernel (where the CPU has it; skipped,
// saying so, elsewhere) with its scratch guarded, over transposes, odd k, partial blocks and panels, repeated and
// reordered rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/tile_gemm.h"
#include "core/tile_gemm_rows_add.h"
#include "core/tile_path.h"
#include "gradkit/float_convert.h"

namespace {

using gradkit::GemmShape;
using gradkit::GemmSums;
using gradkit::TileGemm;
using gradkit::TileGemmRowsAdd;

constexpr unsigned char kGuard = 0x5C;
constexpr size_t kGuardBytes = 256;

int64_t extent(int64_t rows, int64_t cols, int64_t ld) { return rows == 0 ? 0 : (rows - 1) * ld + cols; }

/** One product's operands (bf16 bits or fp32, as stored) with values in [-1, 1) on the bf16 grid. */
struct Operands {
  std::vector<uint16_t> a16, b16;
  std::vector<float> a32, b32;
  const void* a() const { return a16.empty() ? static_cast<const void*>(a32.data()) : a16.data(); }
  const void* b() const { return b16.empty() ? static_cast<const void*>(b32.data()) : b16.data(); }
  double at(bool isA, int64_t index) const {
    const auto& bits = isA ? a16 : b16;
    if (!bits.empty()) return gradkit::bf16ToFloat(bits[static_cast<size_t>(index)]);
    return (isA ? a32 : b32)[static_cast<size_t>(index)];
  }
};

Operands makeOperands(const GemmShape& s, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const auto sizeA = static_cast<size_t>(s.transA ? extent(s.k, s.m, s.lda) : extent(s.m, s.k, s.lda));
  const auto sizeB = static_cast<size_t>(s.transB ? extent(s.n, s.k, s.ldb) : extent(s.k, s.n, s.ldb));
  Operands o;
  if (s.inputType == ACL_BF16) {
    for (size_t i = 0; i < sizeA; ++i) o.a16.push_back(gradkit::floatToBf16(dist(rng)));
    for (size_t i = 0; i < sizeB; ++i) o.b16.push_back(gradkit::floatToBf16(dist(rng)));
  } else {
    for (size_t i = 0; i < sizeA; ++i) o.a32.push_back(dist(rng));
    for (size_t i = 0; i < sizeB; ++i) o.b32.push_back(dist(rng));
  }
  return o;
}

/** op(A) op(B) (i, j) in fp64. */
double productAt(const GemmShape& s, const Operands& o, int64_t i, int64_t j) {
  double sum = 0.0;
  for (int64_t k = 0; k < s.k; ++k) {
    const int64_t ai = s.transA ? k * s.lda + i : i * s.lda + k;
    const int64_t bi = s.transB ? j * s.ldb + k : k * s.ldb + j;
    sum += o.at(true, ai) * o.at(false, bi);
  }
  return sum;
}

struct Spec {
  int64_t m, n, k1, k2;
  bool transA, transB;
  GemmSums sums;
};

GemmShape shapeOf(const Spec& x, int64_t k, float alpha) {
  GemmShape s;
  s.m = x.m, s.n = x.n, s.k = k, s.transA = x.transA, s.transB = x.transB;
  s.inputType = x.sums == GemmSums::Bf16Pairs ? ACL_BF16 : ACL_FLOAT;
  s.sums = x.sums;
  s.alpha = alpha;
  s.lda = (x.transA ? x.m : k) + 3;  // padded leading dims
  s.ldb = (x.transB ? k : x.n) + 5;
  return TileGemm(s).shape();
}

/** Row r of the sum goes to target row targetOf(r): some targets repeat, the order is shuffled. */
std::vector<int64_t> targetsOf(int64_t m, std::mt19937& rng) {
  std::vector<int64_t> targets(static_cast<size_t>(m));
  const int64_t distinct = std::max<int64_t>(1, m * 2 / 3);
  for (auto& t : targets) t = static_cast<int64_t>(rng() % static_cast<uint32_t>(distinct));
  return targets;
}

void checkSpec(const Spec& x, uint32_t seed) {
  std::mt19937 rng(seed);
  const GemmShape first = shapeOf(x, x.k1, 1.0f), second = shapeOf(x, x.k2, 0.0442f);
  const Operands o1 = makeOperands(first, rng), o2 = makeOperands(second, rng);
  const std::vector<int64_t> targets = targetsOf(x.m, rng);
  std::vector<float> start(static_cast<size_t>(x.m * x.n));
  std::uniform_real_distribution<float> dist(-4.0f, 4.0f);
  for (float& v : start) v = dist(rng);

  // The definition: the two products into a tile, then its rows added in order by a plain loop.
  std::vector<float> expected = start, tile(static_cast<size_t>(x.m * x.n));
  {
    GemmShape a = first, b = second;
    a.beta = 0.0f, b.beta = 1.0f, a.ldc = b.ldc = x.n;
    const TileGemm ta(a), tb(b);
    std::vector<unsigned char> scratch(std::max(ta.scratchBytes(), tb.scratchBytes()) + 64);
    ta.run(o1.a(), o1.b(), tile.data(), scratch.data());
    tb.run(o2.a(), o2.b(), tile.data(), scratch.data());
    for (int64_t r = 0; r < x.m; ++r) {
      for (int64_t j = 0; j < x.n; ++j) expected[targets[r] * x.n + j] += tile[r * x.n + j];
    }
  }

  const TileGemmRowsAdd gemm(first, second);
  std::vector<float> got = start, workTile(static_cast<size_t>(x.m * x.n));
  std::vector<float*> rows(static_cast<size_t>(x.m));
  for (int64_t r = 0; r < x.m; ++r) rows[r] = got.data() + targets[r] * x.n;
  std::vector<unsigned char> scratch(gemm.scratchBytes() + kGuardBytes, kGuard);
  gemm.run(o1.a(), o1.b(), o2.a(), o2.b(), rows.data(), workTile.data(), scratch.data());
  const std::string name = "m " + std::to_string(x.m) + " n " + std::to_string(x.n) + " k " + std::to_string(x.k1) +
                           "/" + std::to_string(x.k2) + (x.transA ? " tA" : "") + (x.transB ? " tB" : "") +
                           (gemm.fused() ? " fused" : " composed");
  EXPECT_EQ(std::memcmp(got.data(), expected.data(), got.size() * sizeof(float)), 0) << name;
  for (size_t i = gemm.scratchBytes(); i < scratch.size(); ++i) {
    ASSERT_EQ(scratch[i], kGuard) << name << ": scratch overrun at byte " << i;
  }
  // Against fp64: every target row is its start plus the exact sums of the rows sent to it.
  std::vector<double> exact(start.begin(), start.end());
  for (int64_t r = 0; r < x.m; ++r) {
    for (int64_t j = 0; j < x.n; ++j) {
      exact[targets[r] * x.n + j] += productAt(first, o1, r, j) + 0.0442 * productAt(second, o2, r, j);
    }
  }
  for (size_t i = 0; i < exact.size(); ++i) {
    ASSERT_NEAR(got[i], exact[i], 1e-4 * (1.0 + static_cast<double>(x.k1 + x.k2))) << name << " at " << i;
  }
}

std::vector<Spec> specs(GemmSums sums) {
  return {{256, 512, 16, 16, true, false, sums}, {37, 45, 16, 16, true, false, sums}, {13, 33, 7, 9, false, true, sums},
          {12, 32, 1, 2, true, true, sums},      {25, 70, 33, 5, false, false, sums}, {1, 1, 1, 1, false, false, sums}};
}

TEST(TileGemmRowsAdd, Bf16PairsEqualTheirDefinition) {
  for (const Spec& x : specs(GemmSums::Bf16Pairs)) checkSpec(x, 7);
}

TEST(TileGemmRowsAdd, Fp32EqualsItsDefinition) {
  for (const Spec& x : specs(GemmSums::Sequential)) checkSpec(x, 11);
}

TEST(TileGemmRowsAdd, FusedWhereTheCpuHasAvx512Bf16) {
  GemmShape s;
  s.m = 8, s.n = 8, s.k = 4, s.inputType = ACL_BF16, s.sums = GemmSums::Bf16Pairs;
  const TileGemmRowsAdd gemm(s, s);
  if (!gradkit::cpuMatrixFeatures().avx512bf16)
    GTEST_SKIP() << "this CPU has no AVX512-BF16: the fused kernel is not run";
  EXPECT_TRUE(gemm.fused() || std::getenv("GRADKIT_FORCE_SCALAR") != nullptr);
}

TEST(TileGemmRowsAdd, RejectsProductsOfDifferentShapes) {
  GemmShape a, b;
  a.m = 4, a.n = 8, a.k = 2;
  b.m = 4, b.n = 9, b.k = 2;
  EXPECT_THROW(TileGemmRowsAdd(a, b), std::invalid_argument);
}

}  // namespace
