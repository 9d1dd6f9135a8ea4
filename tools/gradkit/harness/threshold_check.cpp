// Upstream's threshold-ratio precision rule (harness/threshold_check.h).
#include "harness/threshold_check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gradkit::cli {

ThresholdComparison compareWithThreshold(const std::vector<double>& ours, const std::vector<double>& golden) {
  ThresholdComparison result;
  if (ours.size() != golden.size()) {
    result.shapeMismatch = true;
    return result;
  }
  result.numel = static_cast<int64_t>(ours.size());
  for (size_t e = 0; e < ours.size(); ++e) {
    const float a = static_cast<float>(ours[e]), b = static_cast<float>(golden[e]);
    const float diff = std::fabs(a - b);
    const float threshold = std::max(std::max(std::fabs(a), std::fabs(b)) * kThresholdRelative, kThresholdFloor);
    if (std::isnan(diff)) {
      result.diffMax = diff;
      ++result.overThreshold;
      continue;
    }
    if (!std::isnan(result.diffMax)) result.diffMax = std::max(result.diffMax, static_cast<double>(diff));
    result.diffSum += diff;
    result.maxRelative = std::max(result.maxRelative, static_cast<double>(diff / threshold) * kThresholdRelative);
    if (diff > threshold) ++result.overThreshold;
  }
  return result;
}

std::string thresholdComparisonLine(const std::string& what, const ThresholdComparison& c) {
  if (c.shapeMismatch) return what + ": FAIL (shape mismatch)";
  char numbers[200];
  std::snprintf(numbers, sizeof(numbers), "diff_max %.8f diff_sum %.6f over %lld/%lld (%.4f %%)", c.diffMax, c.diffSum,
                static_cast<long long>(c.overThreshold), static_cast<long long>(c.numel), 100.0 * c.ratio());
  std::string verdict = "pass";
  if (!c.passed()) {
    verdict = "FAIL (";
    if (!(c.diffMax <= kThresholdDiffMaxLimit)) verdict += "diff_max > 0.1";
    if (c.ratio() > kThresholdRatioLimit) verdict += std::string(verdict.size() > 6 ? ", " : "") + "over > 0.5 %";
    verdict += ")";
  }
  return what + ": " + verdict + " " + numbers;
}

}  // namespace gradkit::cli
