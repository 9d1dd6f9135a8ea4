// The mHC size model: phi's F = 2N + R rows (pre and post gates, then a residual block of width R: N*N, N!, or none)
// and the shape of the residual output. One description for the checks, the CLI's case builder and, through the
// Python bindings, gradkit.ops' shape helpers; it sits with the kernels so that every layer that needs it may include
// it (it needs nothing but the standard library).
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace gradkit::kernels {

/** n! for small n (the width of the factorial residual block); saturates at INT64_MAX. */
constexpr int64_t mhcFactorial(int64_t n) {
  int64_t result = 1;
  for (int64_t k = 2; k <= n; ++k) {
    if (result > std::numeric_limits<int64_t>::max() / k) return std::numeric_limits<int64_t>::max();
    result *= k;
  }
  return result;
}

/** phi's rows for N streams and residual width R: 2N + R (saturating at INT64_MAX). */
constexpr int64_t mhcFusionRows(int64_t n, int64_t residual) {
  return residual > std::numeric_limits<int64_t>::max() - 2 * n ? std::numeric_limits<int64_t>::max()
                                                                : 2 * n + residual;
}

/** The residual width R of phi's `rows` for N streams (rows - 2N). */
constexpr int64_t mhcResidualWidth(int64_t rows, int64_t n) { return rows - 2 * n; }

/** phi's rows in the square form, 2N + N*N: hRes is [.., N, N] (every profile). */
constexpr int64_t mhcSquareRows(int64_t n) { return mhcFusionRows(n, n * n); }

/** phi's rows in the factorial form, 2N + N!: hRes is [.., N!] (Ascend910B / Ascend910_93 only). */
constexpr int64_t mhcFactorialRows(int64_t n) { return mhcFusionRows(n, mhcFactorial(n)); }

/** hRes's (and gradHRes's) trailing dims for residual width R: [N, N] when R = N*N, else [R]. */
inline std::vector<int64_t> mhcResidualTail(int64_t n, int64_t residual) {
  if (residual == n * n) return {n, n};
  return {residual};
}

}  // namespace gradkit::kernels
