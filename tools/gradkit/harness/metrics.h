// The double-benchmark precision standard (spec dropout_threshold.md 3.2 and 3.4) for the matmul
// operators: our error against the fp64 golden, divided by the error of a naive computation in the same
// dtype against the same golden.
#pragma once

#include <cstdint>
#include <string>

#include "acl/acl_base.h"

namespace gradkit::cli {

/** Error of one result against the golden. */
struct ErrorMetrics {
  double mare = 0.0;                // max of |a - g| / (|g| + 1e-7) over the finite, not-small golden elements
  double mere = 0.0;                // mean of the same
  double rmse = 0.0;                // sqrt(mean((a - g)^2)) over the finite golden elements
  int64_t smallValueErrors = 0;     // |g| below the dtype's small-value bound and |a - g| above its error bound
  int64_t nonFiniteMismatches = 0;  // golden NaN/Inf and the result not the same NaN/Inf class
  int64_t counted = 0;              // elements in MARE/MERE
};

/**
 * Metrics of `actual` against `golden` (n values each, already widened to double) for results of `dtype`
 * (FLOAT16, BF16 or FLOAT select the small-value bounds: |g| < 2^-11 / 2^-8 / 2^-14 is small, and an error
 * above 2^-16 / 2^-16 / 2^-30 there counts). Small elements are left out of MARE and MERE, where a
 * relative error means nothing, and judged by their count instead. The fp32 bounds are for outputs of order one:
 * they are multiplied by max(1, the largest finite |g|), so the elements of a large sum (gradients summed over
 * thousands of tokens) that cancel to a tiny fraction of the output's scale count as small. Golden non-finite
 * elements are left out of everything but nonFiniteMismatches.
 */
ErrorMetrics errorMetrics(const double* actual, const double* golden, int64_t n, aclDataType dtype);

/** Ratio limits of one level of the commercial standard (3.4). */
struct BenchmarkLevel {
  double mare = 2.0;
  double mere = 1.2;
  double rmse = 1.2;
};
inline constexpr BenchmarkLevel kLevelL0{10.0, 2.0, 2.0};
inline constexpr BenchmarkLevel kLevelL1{5.0, 1.5, 1.5};
inline constexpr BenchmarkLevel kLevelL2{2.0, 1.2, 1.2};

/** The experimental-standard threshold T of 3.2: 2^-10 fp16, 2^-7 bf16, 2^-13 fp32 (fp32's for others). */
double experimentalThreshold(aclDataType dtype);

/** ours / naive, with 0/0 = 1 (as good as the benchmark) and x/0 = Inf. */
double metricRatio(double ours, double naive);

/** The smallest naive small-value error count the ratio divides by (up to 4 such errors always pass). */
inline constexpr int64_t kSmallValueCountFloor = 2;

/** The double-benchmark verdict. */
struct DoubleBenchmark {
  ErrorMetrics ours;
  ErrorMetrics naive;
  double mareRatio = 0.0;
  double mereRatio = 0.0;
  double rmseRatio = 0.0;
  double smallValueRatio = 0.0;  // ours.smallValueErrors / max(naive.smallValueErrors, kSmallValueCountFloor)
  bool passed = false;
  std::string reason;  // the first failing criterion, empty when passed
};

/**
 * Judges `ours` and `naive` (n values each) against `golden`. A metric passes when its ratio is within
 * `level`, or when our absolute value sits under the experimental floor of 3.2 (MERE < T, MARE < 10 T;
 * RMSE when both of those hold), so that a naive computation that happens to be exact cannot fail a result
 * that is good in absolute terms. Also required: small-value ratio <= 2 and no non-finite mismatch where the
 * naive computation matched the golden. `computeThreshold`, when larger than the output dtype's T, is used instead:
 * the T of a coarser computation type than the output's (3.2: HiFloat32 matmuls, 2^-11, give fp32 outputs).
 */
DoubleBenchmark doubleBenchmark(const double* ours, const double* naive, const double* golden, int64_t n,
                                aclDataType dtype, const BenchmarkLevel& level = kLevelL2,
                                double computeThreshold = 0.0);

}  // namespace gradkit::cli
