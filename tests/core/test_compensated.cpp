// Error-free transformations checked for exactness in wider arithmetic (double for float inputs,
// __float128 for double inputs); compensated sums checked against a sum in wider precision.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/compensated.h"

namespace {

__extension__ typedef __float128 Quad;

using gradkit::fastTwoSum;
using gradkit::KahanSum;
using gradkit::NeumaierSum;
using gradkit::twoProd;
using gradkit::twoProdDekker;
using gradkit::twoSum;

/** Random values sign * [1, 2) * 2^e with e in [-range, range]: sums of two are exact in double. */
template <class T>
std::vector<T> randomValues(size_t count, int range, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-range, range);
  std::vector<T> out(count);
  for (size_t i = 0; i < count; ++i) {
    const double v = std::ldexp(mantissa(rng), exponent(rng));
    out[i] = static_cast<T>(i % 3 == 0 ? -v : v);
  }
  return out;
}

TEST(Compensated, TwoSumIsExactFloat) {
  const std::vector<float> v = randomValues<float>(200000, 12, 1);
  for (size_t i = 0; i + 1 < v.size(); i += 2) {
    const auto r = twoSum(v[i], v[i + 1]);
    ASSERT_EQ(r.sum, v[i] + v[i + 1]);
    ASSERT_EQ(static_cast<double>(r.sum) + r.error, static_cast<double>(v[i]) + v[i + 1]);
    const float big = std::fabs(v[i]) >= std::fabs(v[i + 1]) ? v[i] : v[i + 1];
    const float small = big == v[i] ? v[i + 1] : v[i];
    const auto f = fastTwoSum(big, small);
    ASSERT_EQ(f.sum, r.sum);
    ASSERT_EQ(f.error, r.error);
  }
}

TEST(Compensated, TwoSumIsExactDouble) {
  const std::vector<double> v = randomValues<double>(200000, 20, 2);
  for (size_t i = 0; i + 1 < v.size(); i += 2) {
    const auto r = twoSum(v[i], v[i + 1]);
    ASSERT_TRUE(static_cast<Quad>(r.sum) + r.error == static_cast<Quad>(v[i]) + v[i + 1]);
  }
}

TEST(Compensated, TwoProdIsExactAndDekkerAgrees) {
  const std::vector<float> v = randomValues<float>(200000, 30, 3);
  for (size_t i = 0; i + 1 < v.size(); i += 2) {
    const auto r = twoProd(v[i], v[i + 1]);
    const double exact = static_cast<double>(v[i]) * v[i + 1];  // 48 bits: exact
    ASSERT_EQ(static_cast<double>(r.sum) + r.error, exact);
    const auto d = twoProdDekker(v[i], v[i + 1]);
    ASSERT_EQ(d.sum, r.sum);
    ASSERT_EQ(d.error, r.error);  // the error term is unique, however it is computed
  }
  const std::vector<double> w = randomValues<double>(200000, 100, 4);
  for (size_t i = 0; i + 1 < w.size(); i += 2) {
    const auto r = twoProd(w[i], w[i + 1]);
    ASSERT_TRUE(static_cast<Quad>(r.sum) + r.error == static_cast<Quad>(w[i]) * w[i + 1]);
    const auto d = twoProdDekker(w[i], w[i + 1]);
    ASSERT_EQ(d.error, r.error);
  }
}

TEST(Compensated, KahanAndNeumaierBeatNaiveSummation) {
  // 1e6 terms around 1 with a large offset: naive float summation loses several digits.
  std::vector<float> terms = randomValues<float>(1000000, 3, 5);
  terms[0] = 3.0e4f;
  double reference = 0.0;  // error <= n * 2^-53 * sum|x|: far below a float ulp here
  float naive = 0.0f;
  KahanSum<float> kahan;
  NeumaierSum<float> neumaier;
  double sumAbs = 0.0;
  for (const float x : terms) {
    reference += x;
    sumAbs += std::fabs(x);
    naive += x;
    kahan.add(x);
    neumaier.add(x);
  }
  const double ulp = std::ldexp(1.0, std::ilogb(reference) - 23);
  // Compensated: ~1 ulp of the result plus O(n u^2) * sum|x|.
  const double bound = 2.0 * ulp + terms.size() * std::ldexp(1.0, -48) * sumAbs;
  EXPECT_LE(std::fabs(kahan.value() - reference), bound);
  EXPECT_LE(std::fabs(neumaier.value() - reference), bound);
  EXPECT_GT(std::fabs(naive - reference), 8 * bound) << "the data must be hard for naive summation";
}

TEST(Compensated, NeumaierHandlesTermsLargerThanTheSum) {
  NeumaierSum<double> n;
  KahanSum<double> k;
  for (const double x : {1.0, 1e100, 1.0, -1e100}) {
    n.add(x);
    k.add(x);
  }
  EXPECT_EQ(n.value(), 2.0);
  EXPECT_NE(k.value(), 2.0);  // plain Kahan loses it: why Neumaier exists
}

TEST(Compensated, NeumaierRecoversProductErrorsUnderCancellation) {
  // Terms a_i*b_i (as TwoProd pairs) and -fl(a_i*b_i): the exact total is the sum of the product
  // rounding errors alone. Folding the errors in with the wrong sign would give its negative, and
  // dropping them would give zero.
  const std::vector<float> a = randomValues<float>(100000, 4, 6);
  const std::vector<float> b = randomValues<float>(100000, 4, 7);
  Quad exact = 0;
  NeumaierSum<float> neumaier;
  for (size_t i = 0; i < a.size(); ++i) {
    const float rounded = a[i] * b[i];
    exact += static_cast<Quad>(static_cast<double>(a[i]) * b[i]) - rounded;
    neumaier.add(twoProd(a[i], b[i]));
    neumaier.add(-rounded);
  }
  const double reference = static_cast<double>(exact);
  ASSERT_GT(std::fabs(reference), 1e-6);
  EXPECT_NEAR(neumaier.value(), reference, 1e-3 * std::fabs(reference));
}

TEST(Compensated, KahanFoldsTheLowPartWithTheCorrectSign) {
  // 1 + (2^-24 + 2^-25): the exact value is 1 + 0.75 ulp, which rounds to 1 + 2^-23. Folding the
  // low part with the wrong sign, or dropping it, ends at 1.0.
  KahanSum<float> sum;
  sum.add(1.0f);
  sum.add(gradkit::SumAndError<float>{std::ldexp(1.0f, -24), std::ldexp(1.0f, -25)});
  EXPECT_EQ(sum.value(), 1.0f + std::ldexp(1.0f, -23));
  KahanSum<float> dropped;
  dropped.add(1.0f);
  dropped.add(std::ldexp(1.0f, -24));
  EXPECT_EQ(dropped.value(), 1.0f);
}

TEST(Compensated, KahanDotProductWithinItsBound) {
  // A positive dot product (the running sum dominates every term, Kahan's regime).
  std::vector<float> a = randomValues<float>(200000, 4, 8);
  std::vector<float> b = randomValues<float>(200000, 4, 9);
  Quad exact = 0;
  double sumAbs = 0;
  KahanSum<float> kahan;
  float naive = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = std::fabs(a[i]);
    b[i] = std::fabs(b[i]);
    exact += static_cast<Quad>(static_cast<double>(a[i]) * b[i]);
    sumAbs += static_cast<double>(a[i]) * b[i];
    kahan.add(twoProd(a[i], b[i]));
    naive += a[i] * b[i];
  }
  const double reference = static_cast<double>(exact);
  const double bound = std::ldexp(1.0, -23) * reference + a.size() * std::ldexp(1.0, -47) * sumAbs;
  EXPECT_LE(std::fabs(kahan.value() - reference), bound);
  EXPECT_GT(std::fabs(naive - reference), 8 * bound) << "the data must be hard for naive summation";
}

TEST(Compensated, ArraySumsAreKahanSumsPerElement) {
  // Columns summed block by block with kahanAddEach / kahanTotalEach give KahanSum's bits for each column.
  constexpr int64_t kColumns = 7, kRows = 5000;
  const std::vector<float> terms = randomValues<float>(kColumns * kRows, 20, 10);
  std::vector<float> sum(kColumns, 0.0f), comp(kColumns, 0.0f), total(kColumns);
  std::vector<KahanSum<float>> reference(kColumns);
  for (int64_t row = 0; row < kRows; ++row) {
    gradkit::kahanAddEach(sum.data(), comp.data(), terms.data() + row * kColumns, kColumns);
    for (int64_t c = 0; c < kColumns; ++c) reference[c].add(terms[row * kColumns + c]);
  }
  gradkit::kahanTotalEach(total.data(), sum.data(), comp.data(), kColumns);
  gradkit::kahanTotalEach(sum.data(), sum.data(), comp.data(), kColumns);  // in place
  for (int64_t c = 0; c < kColumns; ++c) {
    EXPECT_EQ(total[c], reference[c].value()) << c;
    EXPECT_EQ(sum[c], reference[c].value()) << c;
  }
}

}  // namespace
