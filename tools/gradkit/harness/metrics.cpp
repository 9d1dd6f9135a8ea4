#include "harness/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

namespace gradkit::cli {
namespace {

struct SmallValueBounds {
  double value;  // |golden| below this is small
  double error;  // an error above this on a small value counts
};

SmallValueBounds smallValueBounds(aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT16:
      return {0x1.0p-11, 0x1.0p-16};
    case ACL_BF16:
      return {0x1.0p-8, 0x1.0p-16};
    default:
      return {0x1.0p-14, 0x1.0p-30};
  }
}

// The same non-finite class: both NaN, or the same infinity.
bool sameNonFinite(double a, double g) { return (std::isnan(a) && std::isnan(g)) || a == g; }

}  // namespace

ErrorMetrics errorMetrics(const double* actual, const double* golden, int64_t n, aclDataType dtype) {
  // The fp32 small-value bounds are for outputs of order one; an fp32 output whose golden reaches further (a sum
  // over many tokens) scales them by its largest magnitude, so that its elements that cancel to almost nothing are
  // judged by their absolute error, where a relative error only measures luck. (The 16-bit bounds are coarse
  // already, and a rounded 16-bit result's error is set by its own ulp.)
  double scale = 1.0;
  for (int64_t i = 0; dtype == ACL_FLOAT && i < n; ++i) {
    if (std::isfinite(golden[i])) scale = std::max(scale, std::fabs(golden[i]));
  }
  const SmallValueBounds unit = smallValueBounds(dtype);
  const SmallValueBounds bounds{unit.value * scale, unit.error * scale};
  ErrorMetrics metrics;
  double relSum = 0.0;
  double squareSum = 0.0;
  int64_t finite = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double a = actual[i];
    const double g = golden[i];
    if (!std::isfinite(g)) {
      if (!sameNonFinite(a, g)) ++metrics.nonFiniteMismatches;
      continue;
    }
    const double diff = std::isfinite(a) ? std::fabs(a - g) : std::numeric_limits<double>::infinity();
    squareSum += diff * diff;
    ++finite;
    if (std::fabs(g) < bounds.value) {
      if (diff > bounds.error) ++metrics.smallValueErrors;
      continue;
    }
    const double rel = diff / (std::fabs(g) + 1e-7);
    metrics.mare = std::max(metrics.mare, rel);
    relSum += rel;
    ++metrics.counted;
  }
  metrics.mere = metrics.counted > 0 ? relSum / static_cast<double>(metrics.counted) : 0.0;
  metrics.rmse = finite > 0 ? std::sqrt(squareSum / static_cast<double>(finite)) : 0.0;
  return metrics;
}

double experimentalThreshold(aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT16:
      return 0x1.0p-10;
    case ACL_BF16:
      return 0x1.0p-7;
    default:
      return 0x1.0p-13;
  }
}

double metricRatio(double ours, double naive) {
  if (naive == 0.0) return ours == 0.0 ? 1.0 : std::numeric_limits<double>::infinity();
  return ours / naive;
}

DoubleBenchmark doubleBenchmark(const double* ours, const double* naive, const double* golden, int64_t n,
                                aclDataType dtype, const BenchmarkLevel& level, double computeThreshold) {
  DoubleBenchmark result;
  result.ours = errorMetrics(ours, golden, n, dtype);
  result.naive = errorMetrics(naive, golden, n, dtype);
  result.mareRatio = metricRatio(result.ours.mare, result.naive.mare);
  result.mereRatio = metricRatio(result.ours.mere, result.naive.mere);
  result.rmseRatio = metricRatio(result.ours.rmse, result.naive.rmse);
  // A count of one or two is no statistic: a naive sum that happens to be exact on one more element than ours would
  // fail a result that is better in every mean (seen on fp32 gradients that cancel). Counts are compared from 2 up.
  result.smallValueRatio = static_cast<double>(result.ours.smallValueErrors) /
                           static_cast<double>(std::max<int64_t>(result.naive.smallValueErrors, kSmallValueCountFloor));

  // Non-finite golden elements where the naive result matched but ours did not (3.4 Inf/NaN rule).
  int64_t nonFiniteWrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!std::isfinite(golden[i]) && sameNonFinite(naive[i], golden[i]) && !sameNonFinite(ours[i], golden[i])) {
      ++nonFiniteWrong;
    }
  }

  const double t = std::max(experimentalThreshold(dtype), computeThreshold);
  const bool mareFloor = result.ours.mare < 10.0 * t;
  const bool mereFloor = result.ours.mere < t;
  std::ostringstream reason;
  if (!(result.mareRatio <= level.mare || mareFloor)) {
    reason << "MARE ratio " << result.mareRatio << " > " << level.mare;
  } else if (!(result.mereRatio <= level.mere || mereFloor)) {
    reason << "MERE ratio " << result.mereRatio << " > " << level.mere;
  } else if (!(result.rmseRatio <= level.rmse || (mareFloor && mereFloor))) {
    reason << "RMSE ratio " << result.rmseRatio << " > " << level.rmse;
  } else if (result.smallValueRatio > 2.0) {
    reason << "small-value error ratio " << result.smallValueRatio << " > 2";
  } else if (nonFiniteWrong > 0) {
    reason << nonFiniteWrong << " NaN/Inf golden elements missed";
  }
  result.reason = reason.str();
  result.passed = result.reason.empty();
  return result;
}

}  // namespace gradkit::cli
