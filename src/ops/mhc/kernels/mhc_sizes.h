// The mHC size model: how wide the residual block of the factorial form is. One description for the checks (which
// accept phi of 2N + N! rows) and the CLI's case builder; it sits with the kernels so that every layer that needs it
// may include it (it needs nothing but the standard library).
#pragma once

#include <cstdint>
#include <limits>

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

}  // namespace gradkit::kernels
