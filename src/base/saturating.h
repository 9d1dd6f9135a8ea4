// Saturating integer arithmetic for values users may set to the type's extremes (e.g. flash attention's
// preTokens / nextTokens = INT64_MAX meaning "no limit"): the result sticks at the bound instead of overflowing.
#pragma once

#include <cstdint>
#include <limits>

namespace gradkit {

/** a + b, clamped to [INT64_MIN, INT64_MAX]. */
inline int64_t satAdd(int64_t a, int64_t b) {
  int64_t r = 0;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

/** a - b, clamped to [INT64_MIN, INT64_MAX]. */
inline int64_t satSub(int64_t a, int64_t b) {
  int64_t r = 0;
  if (!__builtin_sub_overflow(a, b, &r)) return r;
  return b < 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

/** a + b, at most UINT64_MAX. */
inline uint64_t satAdd(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return std::numeric_limits<uint64_t>::max();
}

/** a * b, at most UINT64_MAX. */
inline uint64_t satMul(uint64_t a, uint64_t b) {
  uint64_t r = 0;
  if (!__builtin_mul_overflow(a, b, &r)) return r;
  return std::numeric_limits<uint64_t>::max();
}

}  // namespace gradkit
