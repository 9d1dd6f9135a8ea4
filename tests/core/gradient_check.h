// The finite-difference check of an fp64 golden's backward, shared by the golden tests: a fourth-order central
// difference of a scalar loss (e.g. sum(out * w)) in one input element, and one analytic gradient compared with it
// element by element.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace gradkit::test {

/**
 * The tolerance: with h = 1e-3 the truncation error ~h^4 |f^(5)| and the rounding error ~eps |loss| / h are both
 * ~1e-12 for O(1) problems, while a missing or wrong term (a row, a head, a duplicate, the scale, a sink, a keep
 * factor) is O(1e-2) or more.
 */
inline constexpr double kGradTolerance = 1e-8;

/** (8 (f(x+h) - f(x-h)) - (f(x+2h) - f(x-2h))) / 12h of `loss()` in values[index]; the value is restored. */
template <class Loss>
double numericDerivative(const Loss& loss, std::vector<double>& values, size_t index) {
  const double saved = values[index], h = 1e-3;
  const auto at = [&](double step) {
    values[index] = saved + step;
    const double value = loss();
    values[index] = saved;
    return value;
  };
  return (8 * (at(h) - at(-h)) - (at(2 * h) - at(-2 * h))) / (12 * h);
}

/**
 * `analytic` against the finite differences of `loss()` in every element of `values` (stops at the first failure,
 * named `name`); raises *worst to the largest error relative to 1 + |analytic|. Returns the count of clearly non-zero
 * entries (|g| > 1e-3), so that a caller can insist the gradient is not trivially zero.
 */
template <class Loss>
int64_t checkGradient(const Loss& loss, std::vector<double>& values, const std::vector<double>& analytic,
                      const char* name, double* worst) {
  EXPECT_EQ(values.size(), analytic.size()) << name;
  int64_t nonZero = 0;
  for (size_t e = 0; e < values.size() && e < analytic.size(); ++e) {
    const double numeric = numericDerivative(loss, values, e);
    const double error = std::fabs(numeric - analytic[e]);
    *worst = std::max(*worst, error / (1 + std::fabs(analytic[e])));
    if (std::fabs(analytic[e]) > 1e-3) ++nonZero;
    if (!(error <= kGradTolerance * (1 + std::fabs(analytic[e])))) {
      ADD_FAILURE() << name << "[" << e << "]: analytic " << analytic[e] << " numeric " << numeric;
      break;
    }
  }
  return nonZero;
}

}  // namespace gradkit::test
