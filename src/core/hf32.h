// HF32, the matmul operand type of Ascend cubes in opImplMode 1 (spec mhc.md 6): fp32's sign and exponent with
// 11 explicit mantissa bits. Operands are rounded to nearest with ties away from zero (the mode mHC kernels set).
#pragma once

#include <cstdint>
#include <cstring>

namespace gradkit {

/**
 * `value` rounded to HF32, kept in a float: the low 12 mantissa bits cleared after adding half of their weight to
 * the magnitude (ties away from zero). Subnormals round the same way; a value that rounds past FLT_MAX becomes
 * Inf; Inf and NaN pass through unchanged.
 */
inline float roundToHf32(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  if ((bits & 0x7F800000u) == 0x7F800000u) return value;  // Inf, NaN
  bits = (bits + 0x800u) & ~0xFFFu;  // the carry may move into the exponent: that is the correct rounding
  float rounded;
  std::memcpy(&rounded, &bits, sizeof rounded);
  return rounded;
}

}  // namespace gradkit
