// Exact conversions between fp32 and the narrow float formats (fp16, bf16, fp8 e4m3fn / e5m2).
// Header-only (inline definitions) so that the public opdev types and the library share one
// implementation. Everything is integer bit manipulation: the result never depends on the FPU
// rounding mode, flush-to-zero flags or fast-math.
//
// Rules (the same for every narrowing):
//  - Round to nearest, ties to even, with denormal results rounded exactly.
//  - fp16, bf16, e5m2: values that round past the largest finite value become +-Inf.
//  - e4m3fn has no Inf. As PyTorch's (non-saturating) float->float8_e4m3fn cast: a value whose
//    rounded magnitude would exceed 448 (i.e. |x| > 464, where 464 is the tie between 448 and the
//    NaN pattern) becomes NaN with the sign of x; +-Inf becomes NaN too.
//  - NaN stays NaN. fp16/bf16 keep the sign and the top payload bits and set the quiet bit (what
//    F16C vcvtps2ph and AVX512-BF16 vcvtneps2bf16 do); fp8 gives the all-ones pattern 0x7f with
//    the sign of x (what PyTorch gives).
//  - Widening is exact; a NaN widens to a quiet NaN with its sign and payload.
#ifndef GRADKIT_FLOAT_CONVERT_H_
#define GRADKIT_FLOAT_CONVERT_H_

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
namespace gradkit {

namespace detail {

inline uint32_t floatBits(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof(bits));
  return bits;
}

inline float bitsFloat(uint32_t bits) {
  float value;
  memcpy(&value, &bits, sizeof(value));
  return value;
}

inline uint64_t doubleBits(double value) {
  uint64_t bits;
  memcpy(&bits, &value, sizeof(bits));
  return bits;
}

/**
 * Rounds the magnitude bits `a` of a finite, non-NaN float to a narrow format with kManBits stored
 * mantissa bits and exponent bias kBias (RNE, denormals exact). Returns the narrow magnitude bits;
 * values beyond the format's range come back larger than its Inf pattern, callers clamp.
 * Valid for formats whose smallest denormal is far above the float denormal range (fp16, fp8).
 */
template <int kManBits, int kBias>
inline uint32_t roundMagnitude(uint32_t a) {
  constexpr int kShift = 23 - kManBits;
  constexpr uint32_t kRebias = static_cast<uint32_t>(127 - kBias) << kManBits;
  constexpr uint32_t kMinNormal = static_cast<uint32_t>(127 - kBias + 1) << 23;  // float bits of 2^(1-bias)
  if (a >= kMinNormal) {
    // Adding half-an-ulp-minus-one plus the kept LSB rounds to nearest even; a carry out of the
    // mantissa correctly bumps the exponent.
    const uint32_t rounded = a + ((1u << (kShift - 1)) - 1u) + ((a >> kShift) & 1u);
    return (rounded >> kShift) - kRebias;
  }
  // Denormal result: value = mant * 2^(e - 150); one narrow denormal ulp = 2^(1 - bias - kManBits).
  const int exponent = static_cast<int>(a >> 23);
  const int shift = 151 - kBias - kManBits - exponent;  // >= 24 - kManBits >= 1 here
  if (shift > 24) return 0;                             // below half the smallest denormal (also every float denormal)
  const uint32_t mant = (a & 0x7fffffu) | 0x800000u;
  uint32_t q = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u))) ++q;  // may carry into the smallest normal: correct
  return q;
}

/**
 * double -> float rounded to odd: truncate toward zero, then set the last bit if anything was
 * lost. Rounding this float once more to any format with at least two fewer mantissa bits gives
 * the correctly rounded result of the double (no double-rounding error).
 */
inline float doubleToFloatRoundToOdd(double value) {
  const float nearest = static_cast<float>(value);
  if (value != value || static_cast<double>(nearest) == value) return nearest;
  uint32_t bits = floatBits(nearest);
  const double widened = static_cast<double>(nearest);
  const bool roundedAway = value < 0 ? widened < value : widened > value;
  if (roundedAway) bits -= 1;  // step the magnitude down one ulp (Inf -> max finite)
  return bitsFloat(bits | 1u);
}

/** uint64 -> float rounded to odd (exact below 2^24), for rounding integers once to a narrow type. */
inline float uint64ToFloatRoundToOdd(uint64_t magnitude) {
  if (magnitude < (1ull << 24)) return static_cast<float>(magnitude);
  uint32_t shift = 0;
  while ((magnitude >> shift) >= (1ull << 24)) ++shift;  // keep the top 24 significant bits
  const uint64_t kept = magnitude >> shift;
  const uint64_t lost = magnitude & ((1ull << shift) - 1u);
  const float odd = static_cast<float>(kept | (lost != 0 ? 1u : 0u));  // exact: < 2^24
  return odd * bitsFloat((127u + shift) << 23);                        // exact: power of two
}

/** int64 -> float rounded to odd (see uint64ToFloatRoundToOdd). */
inline float int64ToFloatRoundToOdd(int64_t value) {
  if (value >= 0) return uint64ToFloatRoundToOdd(static_cast<uint64_t>(value));
  return -uint64ToFloatRoundToOdd(0u - static_cast<uint64_t>(value));
}

}  // namespace detail

/** fp16 bits -> float (exact; NaN becomes a quiet NaN with the same sign and payload). */
inline float halfToFloat(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t mag = bits & 0x7fffu;
  if (mag >= 0x7c00u) {  // Inf or NaN
    const uint32_t quiet = mag > 0x7c00u ? 0x400000u : 0u;
    return detail::bitsFloat(sign | 0x7f800000u | quiet | ((mag & 0x3ffu) << 13));
  }
  if (mag >= 0x0400u) return detail::bitsFloat(sign | ((mag << 13) + (112u << 23)));
  // Denormal or zero: mag * 2^-24, both factors exact in float so the product is exact.
  const float magnitude = static_cast<float>(mag) * detail::bitsFloat(103u << 23);
  return detail::bitsFloat(sign | detail::floatBits(magnitude));
}

/** float -> fp16 bits, RNE, overflow to Inf, NaN kept quiet with its sign and top payload bits. */
inline uint16_t floatToHalf(float value) {
  const uint32_t x = detail::floatBits(value);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to Inf
  return static_cast<uint16_t>(sign | detail::roundMagnitude<10, 15>(a));
}

/** bf16 bits -> float (exact; NaN becomes a quiet NaN with the same sign and payload). */
inline float bf16ToFloat(uint16_t bits) {
  uint32_t x = static_cast<uint32_t>(bits) << 16;
  if ((x & 0x7fffffffu) > 0x7f800000u) x |= 0x400000u;
  return detail::bitsFloat(x);
}

/** float -> bf16 bits, RNE (denormals included), overflow to Inf, NaN kept quiet with its sign. */
inline uint16_t floatToBf16(float value) {
  const uint32_t x = detail::floatBits(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  // bf16 shares float's exponent range, so rounding the low 16 bits away is the whole job.
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/** fp8 e4m3fn bits -> float (exact; 0x7f/0xff are NaN, there is no Inf). */
inline float fp8e4m3ToFloat(uint8_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x80u) << 24;
  const uint32_t mag = bits & 0x7fu;
  if (mag == 0x7fu) return detail::bitsFloat(sign | 0x7fc00000u);
  if (mag >= 0x08u) return detail::bitsFloat(sign | ((mag << 20) + (120u << 23)));
  const float magnitude = static_cast<float>(mag) * detail::bitsFloat(118u << 23);  // mag * 2^-9
  return detail::bitsFloat(sign | detail::floatBits(magnitude));
}

/**
 * float -> fp8 e4m3fn, RNE. No Inf in this format: as PyTorch's cast, magnitudes that round past
 * 448 (|x| > 464), +-Inf and NaN give the NaN pattern 0x7f with the sign of x.
 */
inline uint8_t floatToFp8e4m3(float value) {
  const uint32_t x = detail::floatBits(value);
  const uint32_t sign = (x >> 24) & 0x80u;
  const uint32_t a = x & 0x7fffffffu;
  if (a > 0x43e80000u) return static_cast<uint8_t>(sign | 0x7fu);  // > 464, Inf, NaN
  return static_cast<uint8_t>(sign | detail::roundMagnitude<3, 7>(a));
}

/** fp8 e5m2 bits -> float (exact; it is the top byte of an fp16). */
inline float fp8e5m2ToFloat(uint8_t bits) { return halfToFloat(static_cast<uint16_t>(bits << 8)); }

/** float -> fp8 e5m2, RNE, overflow to Inf; NaN gives 0x7f with the sign of x (as PyTorch). */
inline uint8_t floatToFp8e5m2(float value) {
  const uint32_t x = detail::floatBits(value);
  const uint32_t sign = (x >> 24) & 0x80u;
  const uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<uint8_t>(sign | 0x7fu);
  if (a >= 0x47700000u) return static_cast<uint8_t>(sign | 0x7cu);  // >= 61440 (tie above 57344) -> Inf
  return static_cast<uint8_t>(sign | detail::roundMagnitude<2, 15>(a));
}

/** double -> fp16 bits, rounded once (RNE) from the exact double; for fp64 goldens. */
inline uint16_t doubleToHalf(double value) { return floatToHalf(detail::doubleToFloatRoundToOdd(value)); }

/** double -> bf16 bits, rounded once (RNE) from the exact double; for fp64 goldens. */
inline uint16_t doubleToBf16(double value) { return floatToBf16(detail::doubleToFloatRoundToOdd(value)); }

}  // namespace gradkit
#endif

#endif  // GRADKIT_FLOAT_CONVERT_H_
