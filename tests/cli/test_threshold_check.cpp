// Upstream's threshold-ratio rule (harness/threshold_check.h, spec fag.md 5.11) on hand-made pairs: the fp16
// floor, the relative threshold, both asserted limits at their boundaries, NaN, a size mismatch and the log line.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "gradkit/float_convert.h"
#include "harness/threshold_check.h"

namespace gradkit::cli {
namespace {

TEST(ThresholdCheck, FloorIsTheFp16RoundingOf2Point5e5) {
  EXPECT_EQ(kThresholdFloor, halfToFloat(floatToHalf(2.5e-5f)));
  EXPECT_EQ(kThresholdFloor, 419.0f * std::ldexp(1.0f, -24));
}

TEST(ThresholdCheck, EqualValuesHaveNoDifference) {
  const std::vector<double> a = {1.0, -2.5, 0.0, 1e-7};
  const ThresholdComparison c = compareWithThreshold(a, a);
  EXPECT_TRUE(c.passed());
  EXPECT_EQ(c.numel, 4);
  EXPECT_EQ(c.diffMax, 0.0);
  EXPECT_EQ(c.diffSum, 0.0);
  EXPECT_EQ(c.overThreshold, 0);
}

TEST(ThresholdCheck, ThresholdIsRelativeAboveTheFloor) {
  // |b| = 1: threshold 0.005; 0.004 under, 0.006 over. Near 0: the floor 2.4974346e-05 decides.
  const std::vector<double> golden = {1.0, 1.0, 0.0, 0.0};
  const std::vector<double> ours = {1.004, 1.006, 2.4e-5, 2.6e-5};
  const ThresholdComparison c = compareWithThreshold(ours, golden);
  EXPECT_EQ(c.overThreshold, 2);
  EXPECT_NEAR(c.diffMax, 0.006, 1e-6);
  EXPECT_NEAR(c.diffSum, 0.004 + 0.006 + 2.4e-5 + 2.6e-5, 1e-6);
  EXPECT_NEAR(c.maxRelative, 0.006 / 1.006, 1e-6);
}

TEST(ThresholdCheck, RatioLimitIsHalfAPercent) {
  std::vector<double> golden(1000, 1.0);
  std::vector<double> ours = golden;
  for (int e = 0; e < 5; ++e) ours[static_cast<size_t>(e)] = 1.01;
  EXPECT_TRUE(compareWithThreshold(ours, golden).passed());  // 5 / 1000 = 0.5 %: at the limit
  ours[5] = 1.01;
  const ThresholdComparison c = compareWithThreshold(ours, golden);  // 0.6 %
  EXPECT_EQ(c.overThreshold, 6);
  EXPECT_FALSE(c.passed());
  EXPECT_NE(thresholdComparisonLine("X dq", c).find("FAIL (over > 0.5 %)"), std::string::npos);
}

TEST(ThresholdCheck, AbsoluteGuardIsPointOne) {
  std::vector<double> golden(1000, 100.0);
  std::vector<double> ours = golden;
  ours[0] = 100.09;  // under its threshold 0.5, under the guard
  EXPECT_TRUE(compareWithThreshold(ours, golden).passed());
  ours[0] = 100.2;  // still under its threshold (one element) but over the guard
  const ThresholdComparison c = compareWithThreshold(ours, golden);
  EXPECT_EQ(c.overThreshold, 0);
  EXPECT_FALSE(c.passed());
  EXPECT_NE(thresholdComparisonLine("X dk", c).find("FAIL (diff_max > 0.1)"), std::string::npos);
}

TEST(ThresholdCheck, NanAndSizeMismatchFail) {
  const std::vector<double> golden = {1.0, 2.0};
  const ThresholdComparison nan = compareWithThreshold({std::numeric_limits<double>::quiet_NaN(), 2.0}, golden);
  EXPECT_TRUE(std::isnan(nan.diffMax));
  EXPECT_EQ(nan.overThreshold, 1);
  EXPECT_FALSE(nan.passed());
  const ThresholdComparison shape = compareWithThreshold({1.0}, golden);
  EXPECT_TRUE(shape.shapeMismatch);
  EXPECT_FALSE(shape.passed());
  EXPECT_EQ(thresholdComparisonLine("X dv", shape), "X dv: FAIL (shape mismatch)");
}

TEST(ThresholdCheck, LogLineHasUpstreamsDecimals) {
  const ThresholdComparison c = compareWithThreshold({1.0 + 0.00048828125, 0.5}, {1.0, 0.5});
  EXPECT_EQ(thresholdComparisonLine("GQA_01 grad_only dq", c),
            "GQA_01 grad_only dq: pass diff_max 0.00048828 diff_sum 0.000488 over 0/2 (0.0000 %)");
}

}  // namespace
}  // namespace gradkit::cli
