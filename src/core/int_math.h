// Integer helpers for sizes, blockings and tile counts (non-negative operands), shared by plans and kernels.
#pragma once

#include <cstdint>

namespace gradkit {

/** ceil(n / d) for n >= 0, d > 0, without the overflow of (n + d - 1) / d near INT64_MAX. */
constexpr int64_t ceilDiv(int64_t n, int64_t d) { return n / d + (n % d != 0 ? 1 : 0); }

/** The least multiple of `step` (> 0) that is >= value (>= 0). */
constexpr int64_t roundUp(int64_t value, int64_t step) { return ceilDiv(value, step) * step; }

}  // namespace gradkit
