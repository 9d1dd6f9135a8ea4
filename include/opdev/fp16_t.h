// op::fp16_t: IEEE binary16 as CANN's opdev exposes it (op::tagFp16, raw bits in `val`).
// Construction from any arithmetic value rounds once to nearest, ties to even (integers and doubles
// included, with no double rounding); conversion to float is exact, so arithmetic happens in float
// through the implicit conversion and rounds again only when stored back.
// Note: unlike some CANN builds, constructing from an integer (uint16_t included) converts the
// numeric value; use op::fp16_t::fromBits() for raw bit patterns.
#ifndef GRADKIT_OPDEV_FP16_T_H_
#define GRADKIT_OPDEV_FP16_T_H_

#include <stdint.h>

#include <limits>
#include <ostream>
#include <type_traits>

#include "gradkit/float_convert.h"

namespace op {

struct bfloat16;

/** IEEE half precision: 1 sign, 5 exponent, 10 mantissa bits. */
struct tagFp16 {
  /** The raw bits. */
  uint16_t val;

  /** Positive zero. */
  constexpr tagFp16() : val(0) {}
  /** Rounds `value` to nearest even (overflow to Inf, NaN stays NaN). */
  tagFp16(float value) : val(gradkit::floatToHalf(value)) {}  // NOLINT: implicit as upstream
  /** Rounds `value` once to nearest even. */
  tagFp16(double value) : val(gradkit::doubleToHalf(value)) {}  // NOLINT
  /** Rounds the integer `value` once to nearest even. */
  template <class T, typename std::enable_if<std::is_integral<T>::value, int>::type = 0>
  tagFp16(T value)  // NOLINT
      : val(gradkit::floatToHalf(std::is_signed<T>::value
                                     ? gradkit::detail::int64ToFloatRoundToOdd(static_cast<int64_t>(value))
                                     : gradkit::detail::uint64ToFloatRoundToOdd(static_cast<uint64_t>(value)))) {}
  /** Rounds a bfloat16 to half (defined in opdev/bfloat16.h). */
  tagFp16(const bfloat16& value);  // NOLINT

  /** The value with raw bits `bits`. */
  static tagFp16 fromBits(uint16_t bits) {
    tagFp16 result;
    result.val = bits;
    return result;
  }
  /** The raw bits. */
  uint16_t bits() const { return val; }

  /** The exact value as float. */
  operator float() const { return gradkit::halfToFloat(val); }  // NOLINT
  /** The exact value as float. */
  float toFloat() const { return gradkit::halfToFloat(val); }

  /** Arithmetic in float, rounded once when stored. */
  tagFp16& operator+=(float other) { return *this = tagFp16(toFloat() + other); }
  tagFp16& operator-=(float other) { return *this = tagFp16(toFloat() - other); }
  tagFp16& operator*=(float other) { return *this = tagFp16(toFloat() * other); }
  tagFp16& operator/=(float other) { return *this = tagFp16(toFloat() / other); }
};

using fp16_t = tagFp16;

/** Prints the value as a float ("inf", "-inf", "nan" for the specials). */
inline std::ostream& operator<<(std::ostream& os, const tagFp16& value) { return os << value.toFloat(); }

}  // namespace op

namespace std {

/** numeric_limits for op::fp16_t, as for the built-in floating types. */
template <>
struct numeric_limits<op::tagFp16> {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr bool has_signaling_NaN = true;
  static constexpr float_round_style round_style = round_to_nearest;
  static constexpr bool is_iec559 = true;
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = false;
  static constexpr int digits = 11;
  static constexpr int digits10 = 3;
  static constexpr int max_digits10 = 5;
  static constexpr int radix = 2;
  static constexpr int min_exponent = -13;
  static constexpr int min_exponent10 = -4;
  static constexpr int max_exponent = 16;
  static constexpr int max_exponent10 = 4;
  static op::tagFp16 min() { return op::tagFp16::fromBits(0x0400); }
  static op::tagFp16 lowest() { return op::tagFp16::fromBits(0xfbff); }
  static op::tagFp16 max() { return op::tagFp16::fromBits(0x7bff); }
  static op::tagFp16 epsilon() { return op::tagFp16::fromBits(0x1400); }
  static op::tagFp16 round_error() { return op::tagFp16::fromBits(0x3800); }
  static op::tagFp16 infinity() { return op::tagFp16::fromBits(0x7c00); }
  static op::tagFp16 quiet_NaN() { return op::tagFp16::fromBits(0x7e00); }
  static op::tagFp16 signaling_NaN() { return op::tagFp16::fromBits(0x7d00); }
  static op::tagFp16 denorm_min() { return op::tagFp16::fromBits(0x0001); }
};

}  // namespace std

#endif  // GRADKIT_OPDEV_FP16_T_H_
