// The precision rule of the seed's pytest framework (spec fag.md 5.11, test_main.py::checkResult), with its two limits
// asserted (DECISIONS.md "Flash attention"): per element the threshold max(max(|a|, |b|) * 0.005, fp16(2.5e-5)) —
// upstream keeps the floor in an fp16 tensor, so it is 2.4974346e-05 —, then diff_max, diff_sum, the count and
// percentage of elements whose |a - b| exceeds it. A result fails when diff_max > 0.1 (the absolute guard) or when
// more than 0.5 % of its elements exceed the threshold (the ratio limit). Header-only so that tests/cli can test it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace gradkit::cli {

/** fp16(2.5e-5): 419 * 2^-24, the floor of the per-element threshold. */
inline constexpr float kSeedThresholdFloor = 2.4974346e-05f;
/** The relative part of the per-element threshold. */
inline constexpr float kSeedRelativeThreshold = 0.005f;
/** A result fails when its largest |a - b| exceeds this. */
inline constexpr double kSeedDiffMaxLimit = 0.1;
/** A result fails when more than this fraction of its elements exceed their threshold. */
inline constexpr double kSeedRatioLimit = 0.005;

/** The comparison of one output (e.g. "GQA_01 dq"). */
struct SeedComparison {
  bool shapeMismatch = false;  // a and b differ in size: failed, nothing else measured
  int64_t numel = 0;
  double diffMax = 0.0;
  double diffSum = 0.0;
  int64_t overThreshold = 0;  // elements with |a - b| > max(max(|a|, |b|) * 0.005, floor)
  // max |a - b| / max(|a|, |b|, floor / 0.005): the relative error the threshold bounds (over it: > 0.005)
  double maxRelative = 0.0;
  double ratio() const { return numel == 0 ? 0.0 : static_cast<double>(overThreshold) / static_cast<double>(numel); }
  bool passed() const { return !shapeMismatch && diffMax <= kSeedDiffMaxLimit && ratio() <= kSeedRatioLimit; }
};

/**
 * Compares `ours` (a, the operator's output) with `golden` (b), both already widened; each is narrowed to float first
 * (upstream compares `.float()` tensors), |a - b| and the threshold are float, the sum is accumulated in double. A NaN
 * difference counts as over the threshold and makes diff_max NaN (so the case fails).
 */
inline SeedComparison compareSeedOutput(const std::vector<double>& ours, const std::vector<double>& golden) {
  SeedComparison result;
  if (ours.size() != golden.size()) {
    result.shapeMismatch = true;
    return result;
  }
  result.numel = static_cast<int64_t>(ours.size());
  for (size_t e = 0; e < ours.size(); ++e) {
    const float a = static_cast<float>(ours[e]), b = static_cast<float>(golden[e]);
    const float diff = std::fabs(a - b);
    const float threshold =
        std::max(std::max(std::fabs(a), std::fabs(b)) * kSeedRelativeThreshold, kSeedThresholdFloor);
    if (std::isnan(diff)) {
      result.diffMax = diff;
      ++result.overThreshold;
      continue;
    }
    if (!std::isnan(result.diffMax)) result.diffMax = std::max(result.diffMax, static_cast<double>(diff));
    result.diffSum += diff;
    result.maxRelative = std::max(result.maxRelative, static_cast<double>(diff / threshold) * kSeedRelativeThreshold);
    if (diff > threshold) ++result.overThreshold;
  }
  return result;
}

/**
 * The log line of one output: "<what>: <verdict> diff_max 0.00048828 diff_sum 0.001332 over 3/32768 (0.0092 %)"
 * (8 and 6 decimals as upstream), the verdict "pass", or "FAIL (...)" naming the limit broken.
 */
inline std::string seedComparisonLine(const std::string& what, const SeedComparison& c) {
  if (c.shapeMismatch) return what + ": FAIL (shape mismatch)";
  char numbers[200];
  std::snprintf(numbers, sizeof(numbers), "diff_max %.8f diff_sum %.6f over %lld/%lld (%.4f %%)", c.diffMax, c.diffSum,
                static_cast<long long>(c.overThreshold), static_cast<long long>(c.numel), 100.0 * c.ratio());
  std::string verdict = "pass";
  if (!c.passed()) {
    verdict = "FAIL (";
    if (!(c.diffMax <= kSeedDiffMaxLimit)) verdict += "diff_max > 0.1";
    if (c.ratio() > kSeedRatioLimit) verdict += std::string(verdict.size() > 6 ? ", " : "") + "over > 0.5 %";
    verdict += ")";
  }
  return what + ": " + verdict + " " + numbers;
}

}  // namespace gradkit::cli
