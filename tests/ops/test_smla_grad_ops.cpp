// The sparse MLA backward's steps (smla_grad_ops.h): the Highway table gives the scalar table's bits for every step,
// on every Highway target with FMA this CPU runs (AVX2 and AVX-512 here), over lengths with and without a tail of fewer
// than 8, subnormal, NaN and infinite values, both io dtypes; the scalar steps against their formulas (fp64 where a sum
// is involved).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gradkit/float_convert.h"
#include "hwy/targets.h"
#include "ops/op_test_util.h"
#include "ops/sparse_attention/kernels/smla_grad_ops.h"

namespace gradkit::kernels {
namespace {

const SmlaGradOps& simd = kSmlaGradSimdOps;
const SmlaGradOps& scalar = kSmlaGradScalarOps;

bool sameBits(const void* x, const void* y, size_t bytes) { return bytes == 0 || std::memcmp(x, y, bytes) == 0; }

/** Values of every kind: ordinary, tiny (subnormal products), subnormal, zero of both signs, and rarely Inf / NaN. */
std::vector<float> randomFloats(size_t count, std::mt19937& rng, bool specials) {
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> v(count);
  for (float& x : v) {
    const uint32_t kind = rng() % 32;
    x = dist(rng);
    if (kind == 0) x *= 1e-20f;
    if (kind == 1) x = FLT_MIN * 0.25f * dist(rng);
    if (kind == 2) x = -0.0f;
    if (specials && kind == 3) x = std::numeric_limits<float>::infinity();
    if (specials && kind == 4) x = std::numeric_limits<float>::quiet_NaN();
  }
  return v;
}

std::vector<uint16_t> ioOf(aclDataType type, const std::vector<float>& v) {
  std::vector<uint16_t> out;
  for (float x : v) out.push_back(type == ACL_BF16 ? floatToBf16(x) : floatToHalf(x));
  return out;
}

const int64_t kLengths[] = {0, 1, 7, 8, 9, 31, 256, 509, 512};

TEST(SmlaGradOps, ScoreGradientsSimdEqualsScalar) {
  test::forEachFmaTarget([](int64_t target) {
    SCOPED_TRACE(hwy::TargetName(target));
    std::mt19937 rng(3);
    for (const int64_t keys : kLengths) {
      for (const bool specials : {false, true}) {
        const std::vector<float> p = randomFloats(static_cast<size_t>(keys), rng, specials);
        const std::vector<float> dp = randomFloats(static_cast<size_t>(keys), rng, specials);
        std::vector<float> a = dp, b = dp;
        const float sa = simd.scoreGradients(p.data(), a.data(), keys, 0.375f);
        const float sb = scalar.scoreGradients(p.data(), b.data(), keys, 0.375f);
        EXPECT_TRUE(sameBits(&sa, &sb, sizeof(float))) << keys << " keys: " << sa << " vs " << sb;
        EXPECT_TRUE(sameBits(a.data(), b.data(), a.size() * sizeof(float))) << keys << " keys";
        if (specials) continue;
        double exact = 0.0;
        for (int64_t j = 0; j < keys; ++j) {
          exact += static_cast<double>(p[j]) * dp[j];
          const double ds = static_cast<double>(p[j]) * (static_cast<double>(dp[j]) - 0.375);
          EXPECT_NEAR(b[j], std::fabs(ds) < FLT_MIN ? 0.0 : ds, 1e-6 * (1.0 + std::fabs(ds))) << j;
        }
        EXPECT_NEAR(sb, exact, 1e-5 * (1.0 + static_cast<double>(keys))) << keys << " keys";
      }
    }
  });
}

TEST(SmlaGradOps, IoDotAndRoundingSimdEqualScalar) {
  test::forEachFmaTarget([](int64_t target) {
    SCOPED_TRACE(hwy::TargetName(target));
    std::mt19937 rng(5);
    for (const aclDataType type : {ACL_BF16, ACL_FLOAT16}) {
      for (const int64_t count : kLengths) {
        const auto n = static_cast<size_t>(count);
        const std::vector<float> xs = randomFloats(n, rng, true), ys = randomFloats(n, rng, true);
        const std::vector<uint16_t> x = ioOf(type, xs), y = ioOf(type, ys);
        const float da = simd.ioDot(type, x.data(), y.data(), count),
                    db = scalar.ioDot(type, x.data(), y.data(), count);
        EXPECT_TRUE(sameBits(&da, &db, sizeof(float)) || (std::isnan(da) && std::isnan(db))) << count;
        std::vector<float> values = randomFloats(n, rng, true);
        for (size_t i = 0; i + 1 < n; i += 5) values[i] = 1.0f + std::ldexp(1.0f, -8);  // a bf16 tie
        std::vector<uint16_t> ra(n), rb(n);
        simd.roundToIo(type, values.data(), count, ra.data());
        scalar.roundToIo(type, values.data(), count, rb.data());
        EXPECT_EQ(ra, rb) << count;
        for (size_t i = 0; i < n; ++i)
          EXPECT_EQ(rb[i], type == ACL_BF16 ? floatToBf16(values[i]) : floatToHalf(values[i]));
      }
    }
    std::vector<float> tile = randomFloats(3 * 40, rng, true);
    std::vector<uint16_t> a(3 * 48, 7), b(3 * 48, 7);
    simd.roundRowsToBf16(tile.data(), 40, 3, 37, a.data(), 48);
    scalar.roundRowsToBf16(tile.data(), 40, 3, 37, b.data(), 48);
    EXPECT_EQ(a, b);
  });
}

TEST(SmlaGradOps, KeyGradientsSimdEqualsScalarWithRepeatedRows) {
  test::forEachFmaTarget([](int64_t target) {
    SCOPED_TRACE(hwy::TargetName(target));
    std::mt19937 rng(9);
    for (const aclDataType type : {ACL_BF16, ACL_FLOAT}) {
      for (const GemmSums sums : {GemmSums::Sequential, GemmSums::Bf16Pairs}) {
        if (type == ACL_FLOAT && sums == GemmSums::Bf16Pairs) continue;
        const int64_t keys = 29, d = 40, m = 6;
        GemmShape first{keys, d, m, true, false, 32, d, d, type, 1.0f, 0.0f, sums};
        GemmShape second = first;
        second.alpha = 0.125f;
        const std::vector<float> xs = randomFloats(static_cast<size_t>(m * 32), rng, false);
        const std::vector<float> ys = randomFloats(static_cast<size_t>(m * d), rng, false);
        std::vector<uint16_t> x16 = ioOf(ACL_BF16, xs), y16 = ioOf(ACL_BF16, ys);
        const void* x = type == ACL_BF16 ? static_cast<const void*>(x16.data()) : xs.data();
        const void* y = type == ACL_BF16 ? static_cast<const void*>(y16.data()) : ys.data();
        std::vector<float> start = randomFloats(static_cast<size_t>(10 * d), rng, false);
        std::vector<float> a = start, b = start, tile(static_cast<size_t>(keys * d));
        std::vector<float*> rowsA, rowsB;
        for (int64_t r = 0; r < keys; ++r) {
          const int64_t into = (r * 7) % 10;  // every target row repeats
          rowsA.push_back(a.data() + into * d);
          rowsB.push_back(b.data() + into * d);
        }
        std::vector<unsigned char> scratch(smlaKeyGradientsScratchBytes(first, second) + 64);
        simd.keyGradients(first, x, y, second, x, y, rowsA.data(), tile.data(), scratch.data());
        scalar.keyGradients(first, x, y, second, x, y, rowsB.data(), tile.data(), scratch.data());
        EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
            << (type == ACL_BF16 ? "bf16" : "fp32") << (sums == GemmSums::Bf16Pairs ? " pairs" : "");
        EXPECT_NE(std::memcmp(a.data(), start.data(), a.size() * sizeof(float)), 0);
      }
    }
  });
}

}  // namespace
}  // namespace gradkit::kernels
