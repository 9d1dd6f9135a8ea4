// The two fp8 formats of the FP8 flash attention path (spec fag.md 5.9) as the kernels use them: a format tag, the
// formats' largest finite values, 256-entry decode tables, and a fast "round to fp8 and back" on floats. The bit-exact
// conversions themselves are include/gradkit/float_convert.h's (floatToFp8e4m3 / floatToFp8e5m2 and the widenings);
// everything here gives the same results, only faster on the kernels' hot loops.
//
// Rounding: nearest, ties to even. e5m2 overflows to +-Inf (|x| >= 61440); e4m3fn has no Inf and, as the
// (non-saturating) PyTorch and ml_dtypes casts, turns |x| > 464, +-Inf and NaN into NaN. NaN stays NaN.
#pragma once

#include <cstdint>
#include <cstring>

#include "acl/acl_base.h"
#include "gradkit/float_convert.h"

namespace gradkit {

enum class Fp8Format : uint8_t { E5M2, E4M3FN };

inline constexpr float kFp8E5m2Max = 57344.0f;  // FP8_MAX of e5m2
inline constexpr float kFp8E4m3Max = 448.0f;    // FP8_MAX of e4m3fn

/** FP8_MAX of the format. */
inline float fp8MaxOf(Fp8Format format) { return format == Fp8Format::E5M2 ? kFp8E5m2Max : kFp8E4m3Max; }

/** The format of ACL_FLOAT8_E5M2 / ACL_FLOAT8_E4M3FN; false (nothing written) for any other dtype. */
inline bool fp8FormatOf(aclDataType dtype, Fp8Format* format) {
  if (dtype == ACL_FLOAT8_E5M2) return *format = Fp8Format::E5M2, true;
  if (dtype == ACL_FLOAT8_E4M3FN) return *format = Fp8Format::E4M3FN, true;
  return false;
}

/** The 256 values of the format's codes (exact; NaN codes are quiet NaNs with the code's sign). */
const float* fp8DecodeTable(Fp8Format format);

/** fp8 bits -> float, through the table. */
inline float fp8Decode(Fp8Format format, uint8_t bits) { return fp8DecodeTable(format)[bits]; }

/** float -> fp8 bits (float_convert.h). */
inline uint8_t fp8Encode(Fp8Format format, float value) {
  return format == Fp8Format::E5M2 ? floatToFp8e5m2(value) : floatToFp8e4m3(value);
}

namespace fp8_detail {

inline uint32_t bitsOf(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
inline float floatOf(uint32_t b) {
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

/** Rounds normal-range magnitude bits to kManBits mantissa bits (RNE) in the float encoding itself. */
template <int kManBits>
inline uint32_t roundNormal(uint32_t a) {
  constexpr int kShift = 23 - kManBits;
  constexpr uint32_t kDrop = (1u << kShift) - 1u;
  return (a + (kDrop >> 1) + ((a >> kShift) & 1u)) & ~kDrop;
}

/**
 * The value rounded to e4m3fn (kE4m3) or e5m2 and widened back, without branches (so loops vectorise):
 *  - below the smallest normal (2^-6 / 2^-14): (|x| + C) - C with C = 2^23 denormal ulps (2^14 / 2^7) rounds |x| to
 *    the denormal grid in one fp32 addition (RNE), exactly;
 *  - normal range: the mantissa rounded in the float encoding (roundNormal);
 *  - beyond it: e4m3fn NaN for |x| > 464, e5m2 Inf for |x| >= 61440; NaN inputs give the decoded NaN codes.
 */
template <bool kE4m3>
inline float roundToFp8(float value) {
  constexpr uint32_t kMinNormal = kE4m3 ? 0x3c800000u : 0x38800000u;  // 2^-6 / 2^-14
  constexpr float kDenormalShift = kE4m3 ? 16384.0f : 128.0f;         // 2^14 / 2^7
  const uint32_t x = bitsOf(value);
  const uint32_t a = x & 0x7fffffffu;
  const uint32_t sign = x & 0x80000000u;
  const float shifted = floatOf(a) + kDenormalShift;
  const uint32_t denormal = bitsOf(shifted - kDenormalShift);
  uint32_t r = a < kMinNormal ? denormal : roundNormal < kE4m3 ? 3 : 2 > (a);
  if (kE4m3) {
    r = a > 0x43e80000u ? 0x7fc00000u : r;  // past the 448 / NaN tie, Inf, NaN: the NaN code
  } else {
    r = a >= 0x47700000u ? (a > 0x7f800000u ? 0x7fe00000u : 0x7f800000u) : r;  // Inf; NaN: the 0x7f code
  }
  return floatOf(sign | r);
}

}  // namespace fp8_detail

/**
 * fp8Decode(format, fp8Encode(format, x)) computed on the float directly: the value rounded to the format (RNE) and
 * widened back (NaN: the decoded NaN code with x's sign).
 */
inline float fp8Round(Fp8Format format, float value) {
  return format == Fp8Format::E4M3FN ? fp8_detail::roundToFp8<true>(value) : fp8_detail::roundToFp8<false>(value);
}

/** Rounds count floats to the format in place (fp8Round each). */
void fp8RoundInPlace(Fp8Format format, float* values, int64_t count);

/** Decodes count fp8 codes into floats. */
void fp8DecodeRow(Fp8Format format, const uint8_t* codes, float* out, int64_t count);

}  // namespace gradkit
