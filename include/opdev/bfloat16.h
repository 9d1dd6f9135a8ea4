// op::bfloat16: brain float (the top half of an IEEE float) as CANN's opdev exposes it (raw bits in
// `value`). Construction from any arithmetic value rounds once to nearest, ties to even (integers and
// doubles included, with no double rounding); conversion to float is exact, so arithmetic happens in
// float through the implicit conversion and rounds again only when stored back.
// Note: constructing from an integer (uint16_t included) converts the numeric value; use
// op::bfloat16::fromBits() for raw bit patterns.
#ifndef GRADKIT_OPDEV_BFLOAT16_H_
#define GRADKIT_OPDEV_BFLOAT16_H_

#include <stdint.h>

#include <limits>
#include <ostream>
#include <type_traits>

#include "gradkit/float_convert.h"
#include "opdev/fp16_t.h"

namespace op {

/** bfloat16: 1 sign, 8 exponent, 7 mantissa bits. */
struct bfloat16 {
  /** The raw bits. */
  uint16_t value;

  /** Positive zero. */
  constexpr bfloat16() : value(0) {}
  /** Rounds `v` to nearest even (overflow to Inf, NaN stays NaN). */
  bfloat16(float v) : value(gradkit::floatToBf16(v)) {}  // NOLINT: implicit as upstream
  /** Rounds `v` once to nearest even. */
  bfloat16(double v) : value(gradkit::doubleToBf16(v)) {}  // NOLINT
  /** Rounds the integer `v` once to nearest even. */
  template <class T, typename std::enable_if<std::is_integral<T>::value, int>::type = 0>
  bfloat16(T v)  // NOLINT
      : value(gradkit::floatToBf16(std::is_signed<T>::value
                                       ? gradkit::detail::int64ToFloatRoundToOdd(static_cast<int64_t>(v))
                                       : gradkit::detail::uint64ToFloatRoundToOdd(static_cast<uint64_t>(v)))) {}
  /** Rounds a half to bfloat16 (exact through float, one rounding). */
  bfloat16(const tagFp16& v) : value(gradkit::floatToBf16(v.toFloat())) {}  // NOLINT

  /** The value with raw bits `bits`. */
  static bfloat16 fromBits(uint16_t bits) {
    bfloat16 result;
    result.value = bits;
    return result;
  }
  /** The raw bits. */
  uint16_t bits() const { return value; }

  /** The exact value as float. */
  operator float() const { return gradkit::bf16ToFloat(value); }  // NOLINT
  /** The exact value as float. */
  float toFloat() const { return gradkit::bf16ToFloat(value); }

  /** Arithmetic in float, rounded once when stored. */
  bfloat16& operator+=(float other) { return *this = bfloat16(toFloat() + other); }
  bfloat16& operator-=(float other) { return *this = bfloat16(toFloat() - other); }
  bfloat16& operator*=(float other) { return *this = bfloat16(toFloat() * other); }
  bfloat16& operator/=(float other) { return *this = bfloat16(toFloat() / other); }
};

inline tagFp16::tagFp16(const bfloat16& value) : val(gradkit::floatToHalf(value.toFloat())) {}

/** Prints the value as a float ("inf", "-inf", "nan" for the specials). */
inline std::ostream& operator<<(std::ostream& os, const bfloat16& value) { return os << value.toFloat(); }

}  // namespace op

namespace std {

/** numeric_limits for op::bfloat16, as for the built-in floating types. */
template <>
struct numeric_limits<op::bfloat16> {
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr bool has_signaling_NaN = true;
  static constexpr float_round_style round_style = round_to_nearest;
  static constexpr bool is_iec559 = false;
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = false;
  static constexpr int digits = 8;
  static constexpr int digits10 = 2;
  static constexpr int max_digits10 = 4;
  static constexpr int radix = 2;
  static constexpr int min_exponent = -125;
  static constexpr int min_exponent10 = -37;
  static constexpr int max_exponent = 128;
  static constexpr int max_exponent10 = 38;
  static op::bfloat16 min() { return op::bfloat16::fromBits(0x0080); }
  static op::bfloat16 lowest() { return op::bfloat16::fromBits(0xff7f); }
  static op::bfloat16 max() { return op::bfloat16::fromBits(0x7f7f); }
  static op::bfloat16 epsilon() { return op::bfloat16::fromBits(0x3c00); }
  static op::bfloat16 round_error() { return op::bfloat16::fromBits(0x3f00); }
  static op::bfloat16 infinity() { return op::bfloat16::fromBits(0x7f80); }
  static op::bfloat16 quiet_NaN() { return op::bfloat16::fromBits(0x7fc0); }
  static op::bfloat16 signaling_NaN() { return op::bfloat16::fromBits(0x7fa0); }
  static op::bfloat16 denorm_min() { return op::bfloat16::fromBits(0x0001); }
};

}  // namespace std

#endif  // GRADKIT_OPDEV_BFLOAT16_H_
