// The precision rule of upstream's pytest framework (spec fag.md 5.11, test_main.py::checkResult), with its two
// limits asserted (DECISIONS.md "Flash attention"): per element the threshold max(max(|a|, |b|) * 0.005,
// fp16(2.5e-5)) — upstream keeps the floor in an fp16 tensor, so it is 2.4974346e-05 —, then diff_max, diff_sum, the
// count and percentage of elements whose |a - b| exceeds it. A result fails when diff_max > 0.1 (the absolute guard)
// or when more than 0.5 % of its elements exceed the threshold (the ratio limit). The flash attention seed cases
// judge by it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gradkit::cli {

/** fp16(2.5e-5): 419 * 2^-24, the floor of the per-element threshold. */
inline constexpr float kThresholdFloor = 2.4974346e-05f;
/** The relative part of the per-element threshold. */
inline constexpr float kThresholdRelative = 0.005f;
/** A result fails when its largest |a - b| exceeds this. */
inline constexpr double kThresholdDiffMaxLimit = 0.1;
/** A result fails when more than this fraction of its elements exceed their threshold. */
inline constexpr double kThresholdRatioLimit = 0.005;

/** The comparison of one output (e.g. "GQA_01 dq"). */
struct ThresholdComparison {
  bool shapeMismatch = false;  // a and b differ in size: failed, nothing else measured
  int64_t numel = 0;
  double diffMax = 0.0;
  double diffSum = 0.0;
  int64_t overThreshold = 0;  // elements with |a - b| > max(max(|a|, |b|) * 0.005, floor)
  // max |a - b| / max(|a|, |b|, floor / 0.005): the relative error the threshold bounds (over it: > 0.005)
  double maxRelative = 0.0;
  double ratio() const { return numel == 0 ? 0.0 : static_cast<double>(overThreshold) / static_cast<double>(numel); }
  bool passed() const { return !shapeMismatch && diffMax <= kThresholdDiffMaxLimit && ratio() <= kThresholdRatioLimit; }
};

/**
 * Compares `ours` (a, the operator's output) with `golden` (b), both already widened; each is narrowed to float first
 * (upstream compares `.float()` tensors), |a - b| and the threshold are float, the sum is accumulated in double. A NaN
 * difference counts as over the threshold and makes diff_max NaN (so the result fails).
 */
ThresholdComparison compareWithThreshold(const std::vector<double>& ours, const std::vector<double>& golden);

/**
 * The log line of one output: "<what>: <verdict> diff_max 0.00048828 diff_sum 0.001332 over 3/32768 (0.0092 %)"
 * (8 and 6 decimals as upstream), the verdict "pass", or "FAIL (...)" naming the limit broken.
 */
std::string thresholdComparisonLine(const std::string& what, const ThresholdComparison& c);

}  // namespace gradkit::cli
