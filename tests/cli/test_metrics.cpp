// The double-benchmark metrics (spec dropout_threshold.md 3.2 / 3.4) on small hand-computed examples.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "harness/metrics.h"

namespace gradkit::cli {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Metrics, MareMereRmseByHand) {
  const std::vector<double> golden{1.0, 2.0, 4.0, -8.0};
  const std::vector<double> actual{1.1, 2.0, 3.6, -8.0};
  const ErrorMetrics m = errorMetrics(actual.data(), golden.data(), 4, ACL_FLOAT);
  // rel = |a - g| / (|g| + 1e-7): 0.1 / (1 + 1e-7), 0, 0.4 / (4 + 1e-7), 0
  const double rel0 = 0.1 / (1.0 + 1e-7);
  const double rel2 = 0.4 / (4.0 + 1e-7);
  EXPECT_NEAR(m.mare, std::max(rel0, rel2), 1e-15);
  EXPECT_NEAR(m.mere, (rel0 + rel2) / 4.0, 1e-15);
  EXPECT_NEAR(m.rmse, std::sqrt((0.01 + 0.16) / 4.0), 1e-12);
  EXPECT_EQ(m.counted, 4);
  EXPECT_EQ(m.smallValueErrors, 0);
}

TEST(Metrics, SmallGoldenValuesAreCountedNotRelated) {
  // fp32: |g| < 2^-14 is small; an error above 2^-30 there counts.
  const std::vector<double> golden{1e-6, 1e-6, 1.0};
  const std::vector<double> actual{1e-6 + 1e-8, 1e-6 + 1e-10, 1.0};
  const ErrorMetrics m = errorMetrics(actual.data(), golden.data(), 3, ACL_FLOAT);
  EXPECT_EQ(m.smallValueErrors, 1);  // 1e-8 > 2^-30 (9.3e-10); 1e-10 is not
  EXPECT_EQ(m.counted, 1);
  EXPECT_EQ(m.mare, 0.0);
  const double expectedRmse = std::sqrt((1e-16 + 1e-20) / 3.0);
  EXPECT_NEAR(m.rmse, expectedRmse, expectedRmse * 1e-6);
  // bf16 bounds are wider: |g| < 2^-8 small, errors above 2^-16 count.
  const std::vector<double> goldenBf16{0.001, 0.001};
  const std::vector<double> actualBf16{0.001 + 1e-5, 0.001 + 2e-5};
  EXPECT_EQ(errorMetrics(actualBf16.data(), goldenBf16.data(), 2, ACL_BF16).smallValueErrors, 1);
}

TEST(Metrics, SmallValueBoundsScaleWithALargeOutput) {
  // Largest |g| = 1024: fp32 elements below 1024 * 2^-14 = 0.0625 are small, and count when off by more than
  // 1024 * 2^-30. 0.05 is small here (it would not be in an output of order one); 0.1 is not.
  const std::vector<double> golden{1024.0, 0.05, 0.1};
  const std::vector<double> actual{1024.0, 0.05 + 1e-6, 0.1 + 1e-6};
  const ErrorMetrics m = errorMetrics(actual.data(), golden.data(), 3, ACL_FLOAT);
  EXPECT_EQ(m.counted, 2);
  EXPECT_EQ(m.smallValueErrors, 1);  // 1e-6 > 1024 * 2^-30 (9.5e-7)
  EXPECT_NEAR(m.mare, 1e-6 / (0.1 + 1e-7), 1e-12);
  // The same two small elements in an output of order one are both counted by their relative error.
  const std::vector<double> unitGolden{1.0, 0.05, 0.1};
  const std::vector<double> unitActual{1.0, 0.05 + 1e-6, 0.1 + 1e-6};
  EXPECT_EQ(errorMetrics(unitActual.data(), unitGolden.data(), 3, ACL_FLOAT).counted, 3);
}

TEST(Metrics, NonFiniteGoldenIsJudgedByClass) {
  const std::vector<double> golden{kNan, kInf, -kInf, 2.0};
  const std::vector<double> actual{kNan, kInf, kInf, 2.0};
  const ErrorMetrics m = errorMetrics(actual.data(), golden.data(), 4, ACL_FLOAT);
  EXPECT_EQ(m.nonFiniteMismatches, 1);  // -Inf vs +Inf
  EXPECT_EQ(m.mare, 0.0);
  EXPECT_EQ(m.counted, 1);
  // A finite golden with a non-finite result is an infinite error.
  const std::vector<double> finiteGolden{1.0};
  const std::vector<double> nanResult{kNan};
  EXPECT_TRUE(std::isinf(errorMetrics(nanResult.data(), finiteGolden.data(), 1, ACL_FLOAT).mare));
}

TEST(Metrics, RatioConventions) {
  EXPECT_EQ(metricRatio(0.0, 0.0), 1.0);
  EXPECT_TRUE(std::isinf(metricRatio(1e-9, 0.0)));
  EXPECT_DOUBLE_EQ(metricRatio(3.0, 2.0), 1.5);
}

TEST(Metrics, ExperimentalThresholds) {
  EXPECT_EQ(experimentalThreshold(ACL_FLOAT16), std::ldexp(1.0, -10));
  EXPECT_EQ(experimentalThreshold(ACL_BF16), std::ldexp(1.0, -7));
  EXPECT_EQ(experimentalThreshold(ACL_FLOAT), std::ldexp(1.0, -13));
}

TEST(DoubleBenchmark, OursHalfTheNaiveErrorPasses) {
  const std::vector<double> golden{1.0, 2.0, 4.0, 8.0};
  const std::vector<double> naive{1.02, 2.04, 4.08, 8.16};  // rel 0.02 everywhere (fp16-sized errors)
  const std::vector<double> ours{1.01, 2.02, 4.04, 8.08};   // rel 0.01
  const DoubleBenchmark result = doubleBenchmark(ours.data(), naive.data(), golden.data(), 4, ACL_FLOAT16);
  EXPECT_NEAR(result.mareRatio, 0.5, 1e-6);
  EXPECT_NEAR(result.mereRatio, 0.5, 1e-6);
  EXPECT_NEAR(result.rmseRatio, 0.5, 1e-9);
  EXPECT_TRUE(result.passed) << result.reason;
}

TEST(DoubleBenchmark, OursMuchWorseThanNaiveFailsOnMere) {
  const std::vector<double> golden{1.0, 2.0, 4.0, 8.0};
  const std::vector<double> naive{1.01, 2.0, 4.0, 8.0};     // MARE 0.01, MERE 0.0025
  const std::vector<double> ours{1.015, 2.01, 4.02, 8.04};  // MARE 0.015 (ratio 1.5 ok), MERE 0.0075 (ratio 3)
  const DoubleBenchmark result = doubleBenchmark(ours.data(), naive.data(), golden.data(), 4, ACL_FLOAT16);
  EXPECT_NEAR(result.mareRatio, 1.5, 1e-6);
  EXPECT_NEAR(result.mereRatio, 3.0, 1e-6);
  EXPECT_FALSE(result.passed);
  EXPECT_NE(result.reason.find("MERE ratio"), std::string::npos) << result.reason;
  // Even the loosest level, L0 (MERE ratio <= 2), rejects a ratio of 3; L0 accepts a MARE ratio of 1.5 too.
  const DoubleBenchmark l0 = doubleBenchmark(ours.data(), naive.data(), golden.data(), 4, ACL_FLOAT16, kLevelL0);
  EXPECT_FALSE(l0.passed);
  EXPECT_NE(l0.reason.find("MERE ratio"), std::string::npos) << l0.reason;
}

TEST(DoubleBenchmark, ExactNaiveDoesNotFailAResultUnderTheAbsoluteFloor) {
  // fp32: T = 2^-13 (1.2e-4). Naive exact, ours off by 1e-7 relative: ratios are infinite, floors hold.
  const std::vector<double> golden{1.0, 2.0};
  const std::vector<double> ours{1.0 + 1e-7, 2.0};
  const DoubleBenchmark result = doubleBenchmark(ours.data(), golden.data(), golden.data(), 2, ACL_FLOAT);
  EXPECT_TRUE(std::isinf(result.mareRatio));
  EXPECT_TRUE(result.passed) << result.reason;
  // Above the floor (MARE 1e-2 > 10 T) the infinite ratio fails.
  const std::vector<double> bad{1.01, 2.0};
  EXPECT_FALSE(doubleBenchmark(bad.data(), golden.data(), golden.data(), 2, ACL_FLOAT).passed);
}

TEST(DoubleBenchmark, SmallValueCountRatioAboveTwoFails) {
  const std::vector<double> golden{1e-6, 1e-6, 1e-6, 1e-6, 1e-6, 1.0};
  const std::vector<double> naive{1e-6 + 1e-8, 1e-6, 1e-6, 1e-6, 1e-6, 1.0};  // 1 small-value error
  std::vector<double> ours(golden);
  for (int i = 0; i < 5; ++i) ours[i] += 1e-8;  // 5
  const DoubleBenchmark result = doubleBenchmark(ours.data(), naive.data(), golden.data(), 6, ACL_FLOAT);
  EXPECT_DOUBLE_EQ(result.smallValueRatio, 2.5);  // 5 / max(1, kSmallValueCountFloor)
  EXPECT_FALSE(result.passed);
  EXPECT_NE(result.reason.find("small-value"), std::string::npos) << result.reason;
}

TEST(DoubleBenchmark, SmallValueCountsOfOneOrTwoAreNoStatistic) {
  // Naive exact on all but one small element, ours off on three: 3 / 2 passes; a fifth error would not.
  const std::vector<double> golden{1e-6, 1e-6, 1e-6, 1.0};
  const std::vector<double> naive{1e-6 + 1e-8, 1e-6, 1e-6, 1.0};
  const std::vector<double> ours{1e-6 + 1e-8, 1e-6 + 1e-8, 1e-6 + 1e-8, 1.0};
  const DoubleBenchmark result = doubleBenchmark(ours.data(), naive.data(), golden.data(), 4, ACL_FLOAT);
  EXPECT_DOUBLE_EQ(result.smallValueRatio, 1.5);
  EXPECT_TRUE(result.passed) << result.reason;
}

TEST(DoubleBenchmark, MissingANonFiniteTheNaiveGotFails) {
  const std::vector<double> golden{kInf, 1.0};
  const std::vector<double> naive{kInf, 1.0};
  const std::vector<double> ours{1e38, 1.0};
  const DoubleBenchmark result = doubleBenchmark(ours.data(), naive.data(), golden.data(), 2, ACL_FLOAT);
  EXPECT_FALSE(result.passed);
  EXPECT_NE(result.reason.find("NaN/Inf"), std::string::npos) << result.reason;
  // Where the naive computation missed it too, the element is not held against us.
  const std::vector<double> naiveMissed{0.0, 1.0};
  EXPECT_TRUE(doubleBenchmark(ours.data(), naiveMissed.data(), golden.data(), 2, ACL_FLOAT).passed);
}

}  // namespace
}  // namespace gradkit::cli
