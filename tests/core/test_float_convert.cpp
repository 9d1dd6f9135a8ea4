// Narrow float conversions against independent references: decoding against sign * mantissa *
// 2^exponent (std::ldexp), encoding against GCC's _Float16 (fp16) and a nearest-representable
// search over the decoded table with ties to the even code (bf16, fp8, and double inputs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gradkit/float_convert.h"

namespace {

using gradkit::bf16ToFloat;
using gradkit::floatToBf16;
using gradkit::floatToFp8e4m3;
using gradkit::floatToFp8e5m2;
using gradkit::floatToHalf;
using gradkit::fp8e4m3ToFloat;
using gradkit::fp8e5m2ToFloat;
using gradkit::halfToFloat;

uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return bits;
}

float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, 4);
  return value;
}

/** A binary format described by its field widths; everything below derives values from them only. */
struct Format {
  int expBits;
  int manBits;
  bool ieeeSpecials;  // all-ones exponent = Inf/NaN (fp16, bf16, e5m2); false: e4m3fn (only S.1111.111 is NaN)

  int bias() const { return (1 << (expBits - 1)) - 1; }
  int width() const { return 1 + expBits + manBits; }
  uint32_t codes() const { return 1u << width(); }
  bool isNaNCode(uint32_t code) const {
    const uint32_t e = (code >> manBits) & ((1u << expBits) - 1);
    const uint32_t m = code & ((1u << manBits) - 1);
    if (ieeeSpecials) return e == (1u << expBits) - 1 && m != 0;
    return e == (1u << expBits) - 1 && m == (1u << manBits) - 1;
  }
  bool isInfCode(uint32_t code) const {
    const uint32_t e = (code >> manBits) & ((1u << expBits) - 1);
    const uint32_t m = code & ((1u << manBits) - 1);
    return ieeeSpecials && e == (1u << expBits) - 1 && m == 0;
  }
  /** sign * mantissa * 2^exponent, the textbook definition (finite codes only). */
  double decode(uint32_t code) const {
    const bool negative = (code >> (expBits + manBits)) & 1u;
    const int e = static_cast<int>((code >> manBits) & ((1u << expBits) - 1));
    const int m = static_cast<int>(code & ((1u << manBits) - 1));
    const double magnitude = e == 0 ? std::ldexp(static_cast<double>(m), 1 - bias() - manBits)
                                    : std::ldexp(static_cast<double>(m + (1 << manBits)), e - bias() - manBits);
    return negative ? -magnitude : magnitude;
  }
};

constexpr Format kHalf{5, 10, true};
constexpr Format kBf16{8, 7, true};
constexpr Format kE4m3{4, 3, false};
constexpr Format kE5m2{5, 2, true};

/**
 * Reference encoder by search: the positive finite values sorted by value (from decode), plus one
 * virtual value one step above the largest finite (the code that follows it: Inf, or NaN for
 * e4m3fn). A finite x rounds to the nearest candidate, ties to the even code; beyond the virtual
 * value it becomes the overflow code. The midpoint comparison is exact in double.
 */
class SearchEncoder {
 public:
  explicit SearchEncoder(const Format& f) {
    const uint32_t signBit = 1u << (f.expBits + f.manBits);
    for (uint32_t code = 0; code < signBit; ++code) {
      if (f.isNaNCode(code) || f.isInfCode(code)) continue;
      values_.push_back(f.decode(code));
      codes_.push_back(code);
    }
    // Values increase with the code for positive finite codes: checked, not assumed.
    for (size_t i = 1; i < values_.size(); ++i) EXPECT_LT(values_[i - 1], values_[i]);
    const double largest = values_.back();
    const double step = largest - values_[values_.size() - 2];
    overflowValue_ = largest + step;
    overflowCode_ = codes_.back() + 1;  // Inf (IEEE) or the NaN pattern (e4m3fn)
    signBit_ = signBit;
  }

  uint32_t encode(double x) const {
    const uint32_t sign = std::signbit(x) ? signBit_ : 0u;
    const double a = std::fabs(x);
    if (a >= overflowValue_) return sign | overflowCode_;
    const size_t upper = static_cast<size_t>(std::upper_bound(values_.begin(), values_.end(), a) - values_.begin());
    const size_t lower = upper - 1;  // values_[0] == 0 <= a
    const double upperValue = upper < values_.size() ? values_[upper] : overflowValue_;
    const uint32_t upperCode = upper < values_.size() ? codes_[upper] : overflowCode_;
    const double mid = (values_[lower] + upperValue) / 2;  // exact: few significant bits
    if (a < mid) return sign | codes_[lower];
    if (a > mid) return sign | upperCode;
    return sign | ((codes_[lower] & 1u) == 0 ? codes_[lower] : upperCode);
  }

 private:
  std::vector<double> values_;
  std::vector<uint32_t> codes_;
  double overflowValue_ = 0;
  uint32_t overflowCode_ = 0;
  uint32_t signBit_ = 0;
};

uint16_t gccHalf(float x) {
  const _Float16 h = static_cast<_Float16>(x);
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

/** Floats that exercise every path: random bit patterns, random values in each format's range, specials. */
std::vector<float> testFloats(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> out;
  std::uniform_int_distribution<uint32_t> anyBits;
  for (int i = 0; i < 300000; ++i) out.push_back(floatOf(anyBits(rng)));
  std::uniform_int_distribution<int> exponent(-30, 20);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  for (int i = 0; i < 300000; ++i) {
    const double v = std::ldexp(mantissa(rng), exponent(rng));
    out.push_back(static_cast<float>(i % 2 ? -v : v));
  }
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::lowest(),
                            std::numeric_limits<float>::min(),
                            std::numeric_limits<float>::denorm_min(),
                            -std::numeric_limits<float>::denorm_min(),
                            65504.0f,
                            65519.99f,
                            65520.0f,
                            448.0f,
                            464.0f,
                            464.00003f,
                            480.0f,
                            57344.0f,
                            61439.996f,
                            61440.0f,
                            std::ldexp(1.0f, -24),
                            std::ldexp(1.0f, -25),
                            std::nextafter(std::ldexp(1.0f, -25), 1.0f),
                            std::ldexp(1.0f, -9),
                            std::ldexp(1.0f, -10),
                            std::ldexp(1.0f, -16),
                            std::ldexp(1.0f, -17),
                            std::ldexp(1.0f, -133),
                            std::ldexp(1.0f, -134)};
  out.insert(out.end(), std::begin(specials), std::end(specials));
  return out;
}

/** Every rounding boundary of a format: midpoints of adjacent finite values, and one float ulp either side. */
std::vector<float> boundaryFloats(const Format& f) {
  std::vector<double> values;
  const uint32_t signBit = 1u << (f.expBits + f.manBits);
  for (uint32_t code = 0; code < signBit; ++code) {
    if (!f.isNaNCode(code) && !f.isInfCode(code)) values.push_back(f.decode(code));
  }
  std::sort(values.begin(), values.end());
  values.push_back(values.back() + (values.back() - values[values.size() - 2]));  // overflow threshold side
  std::vector<float> out;
  for (size_t i = 1; i < values.size(); ++i) {
    const float mid = static_cast<float>((values[i - 1] + values[i]) / 2);
    for (const float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, std::numeric_limits<float>::infinity()),
                          static_cast<float>(values[i])}) {
      out.push_back(x);
      out.push_back(-x);
    }
  }
  return out;
}

// ---------------------------------------------------------------- fp16

TEST(FloatConvert, HalfDecodeExhaustive) {
  for (uint32_t code = 0; code < 65536; ++code) {
    const float got = halfToFloat(static_cast<uint16_t>(code));
    SCOPED_TRACE(code);
    if (kHalf.isNaNCode(code)) {
      ASSERT_TRUE(std::isnan(got));
      ASSERT_EQ(std::signbit(got), (code & 0x8000u) != 0);
      ASSERT_TRUE(bitsOf(got) & 0x400000u) << "NaN must be quiet";
      ASSERT_EQ((bitsOf(got) >> 13) & 0x1ffu, code & 0x1ffu) << "payload kept";
    } else if (kHalf.isInfCode(code)) {
      ASSERT_TRUE(std::isinf(got));
      ASSERT_EQ(std::signbit(got), (code & 0x8000u) != 0);
    } else {
      ASSERT_EQ(static_cast<double>(got), kHalf.decode(code));
      ASSERT_EQ(std::signbit(got), (code & 0x8000u) != 0);  // -0 stays -0
    }
  }
}

TEST(FloatConvert, HalfRoundTripExhaustive) {
  for (uint32_t code = 0; code < 65536; ++code) {
    const uint16_t back = floatToHalf(halfToFloat(static_cast<uint16_t>(code)));
    if (kHalf.isNaNCode(code)) {
      EXPECT_EQ(back, code | 0x200u) << code;  // same payload, quiet bit set
    } else {
      EXPECT_EQ(back, code) << code;
    }
  }
}

TEST(FloatConvert, HalfEncodeMatchesGccFloat16) {
  std::vector<float> inputs = testFloats(1);
  const std::vector<float> boundaries = boundaryFloats(kHalf);
  inputs.insert(inputs.end(), boundaries.begin(), boundaries.end());
  int64_t mismatches = 0;
  for (const float x : inputs) {
    const uint16_t got = floatToHalf(x);
    const uint16_t want = gccHalf(x);  // NaN too: GCC keeps sign and top payload bits, quiet
    if (got != want && ++mismatches < 10) ADD_FAILURE() << "x=" << x << " bits=" << std::hex << bitsOf(x);
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(FloatConvert, HalfEncodeMatchesSearch) {
  const SearchEncoder search(kHalf);
  for (const float x : boundaryFloats(kHalf)) {
    ASSERT_EQ(floatToHalf(x), search.encode(x)) << x;
  }
}

TEST(FloatConvert, HalfKnownCases) {
  EXPECT_EQ(floatToHalf(0.0f), 0x0000);
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(floatToHalf(65519.996f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7c00);  // tie with odd max -> Inf
  EXPECT_EQ(floatToHalf(-1e9f), 0xfc00);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);             // tie with 0 -> even (0)
  EXPECT_EQ(floatToHalf(std::ldexp(3.0f, -25)), 0x0002);             // 1.5 denormal ulps: tie -> even (2)
  EXPECT_EQ(floatToHalf(std::ldexp(5.0f, -25)), 0x0002);             // 2.5 -> 2
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie -> even
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie -> even (up)
  EXPECT_EQ(floatToHalf(std::ldexp(2047.0f, -25)), 0x0400);          // rounds up into the smallest normal
  EXPECT_EQ(floatToHalf(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(floatToHalf(-std::numeric_limits<float>::denorm_min()), 0x8000);
}

// ---------------------------------------------------------------- bf16

TEST(FloatConvert, Bf16DecodeExhaustive) {
  for (uint32_t code = 0; code < 65536; ++code) {
    const float got = bf16ToFloat(static_cast<uint16_t>(code));
    SCOPED_TRACE(code);
    if (kBf16.isNaNCode(code)) {
      ASSERT_TRUE(std::isnan(got));
      ASSERT_EQ(std::signbit(got), (code & 0x8000u) != 0);
      ASSERT_TRUE(bitsOf(got) & 0x400000u);
    } else if (kBf16.isInfCode(code)) {
      ASSERT_TRUE(std::isinf(got));
      ASSERT_EQ(std::signbit(got), (code & 0x8000u) != 0);
    } else {
      ASSERT_EQ(static_cast<double>(got), kBf16.decode(code));
      ASSERT_EQ(std::signbit(got), (code & 0x8000u) != 0);
    }
  }
}

TEST(FloatConvert, Bf16RoundTripExhaustive) {
  for (uint32_t code = 0; code < 65536; ++code) {
    const uint16_t back = floatToBf16(bf16ToFloat(static_cast<uint16_t>(code)));
    EXPECT_EQ(back, kBf16.isNaNCode(code) ? (code | 0x40u) : code) << code;
  }
}

TEST(FloatConvert, Bf16EncodeMatchesSearch) {
  const SearchEncoder search(kBf16);
  std::vector<float> inputs = testFloats(2);
  const std::vector<float> boundaries = boundaryFloats(kBf16);
  inputs.insert(inputs.end(), boundaries.begin(), boundaries.end());
  int64_t mismatches = 0;
  for (const float x : inputs) {
    const uint16_t got = floatToBf16(x);
    if (std::isnan(x)) {
      if (!std::isnan(bf16ToFloat(got)) || ((got & 0x8000u) != 0) != std::signbit(x)) ++mismatches;
      continue;
    }
    const uint32_t want = std::isinf(x) ? (std::signbit(x) ? 0xff80u : 0x7f80u) : search.encode(x);
    if (got != want && ++mismatches < 10) ADD_FAILURE() << "x=" << x << " bits=" << std::hex << bitsOf(x);
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(FloatConvert, Bf16KnownCases) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16(-0.0f), 0x8000);
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7f80);  // rounds past max -> Inf
  EXPECT_EQ(floatToBf16(floatOf(0x3f808000u)), 0x3f80);               // tie -> even
  EXPECT_EQ(floatToBf16(floatOf(0x3f818000u)), 0x3f82);               // tie -> even (up)
  EXPECT_EQ(floatToBf16(floatOf(0x3f808001u)), 0x3f81);
  EXPECT_EQ(floatToBf16(floatOf(0x00008000u)), 0x0000);  // denormal tie -> 0
  EXPECT_EQ(floatToBf16(floatOf(0x00018000u)), 0x0002);  // denormal tie -> even
  EXPECT_EQ(floatToBf16(floatOf(0x007fffffu)), 0x0080);  // largest denormal rounds to smallest normal
  EXPECT_EQ(floatToBf16(floatOf(0x7f800001u)), 0x7fc0);  // signaling NaN -> quiet, payload top bits kept
  EXPECT_EQ(floatToBf16(floatOf(0xffa50000u)), 0xffe5);
}

// ---------------------------------------------------------------- fp8

void checkFp8(const Format& f, float (*decode)(uint8_t), uint8_t (*encode)(float)) {
  for (uint32_t code = 0; code < 256; ++code) {
    const float got = decode(static_cast<uint8_t>(code));
    SCOPED_TRACE(code);
    if (f.isNaNCode(code)) {
      EXPECT_TRUE(std::isnan(got));
      EXPECT_EQ(std::signbit(got), (code & 0x80u) != 0);
    } else if (f.isInfCode(code)) {
      EXPECT_TRUE(std::isinf(got));
      EXPECT_EQ(std::signbit(got), (code & 0x80u) != 0);
    } else {
      EXPECT_EQ(static_cast<double>(got), f.decode(code));
      EXPECT_EQ(std::signbit(got), (code & 0x80u) != 0);
      EXPECT_EQ(encode(got), code);  // round trip
    }
  }
  const SearchEncoder search(f);
  std::vector<float> inputs = testFloats(3);
  const std::vector<float> boundaries = boundaryFloats(f);
  inputs.insert(inputs.end(), boundaries.begin(), boundaries.end());
  int64_t mismatches = 0;
  for (const float x : inputs) {
    const uint8_t got = encode(x);
    uint32_t want;
    if (std::isnan(x)) {
      want = (std::signbit(x) ? 0x80u : 0u) | 0x7fu;  // PyTorch: all-ones with the sign
    } else if (std::isinf(x)) {
      want = (std::signbit(x) ? 0x80u : 0u) | (f.ieeeSpecials ? 0x7cu : 0x7fu);
    } else {
      want = search.encode(x);
    }
    if (got != want && ++mismatches < 10) ADD_FAILURE() << "x=" << x << " got=" << int(got) << " want=" << want;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(FloatConvert, Fp8E4m3AgainstSearch) { checkFp8(kE4m3, fp8e4m3ToFloat, floatToFp8e4m3); }

TEST(FloatConvert, Fp8E5m2AgainstSearch) { checkFp8(kE5m2, fp8e5m2ToFloat, floatToFp8e5m2); }

TEST(FloatConvert, Fp8KnownCases) {
  // e4m3fn: max 448 (0x7e); 464 ties to 448; above it PyTorch's cast gives NaN; no Inf.
  EXPECT_EQ(floatToFp8e4m3(448.0f), 0x7e);
  EXPECT_EQ(floatToFp8e4m3(464.0f), 0x7e);
  EXPECT_EQ(floatToFp8e4m3(464.00003f), 0x7f);
  EXPECT_EQ(floatToFp8e4m3(-1000.0f), 0xff);
  EXPECT_EQ(floatToFp8e4m3(std::numeric_limits<float>::infinity()), 0x7f);
  EXPECT_EQ(floatToFp8e4m3(std::ldexp(1.0f, -9)), 0x01);   // smallest denormal
  EXPECT_EQ(floatToFp8e4m3(std::ldexp(1.0f, -10)), 0x00);  // tie with 0 -> 0
  EXPECT_EQ(floatToFp8e4m3(-0.0f), 0x80);
  EXPECT_EQ(fp8e4m3ToFloat(0x7e), 448.0f);
  EXPECT_EQ(fp8e4m3ToFloat(0x01), std::ldexp(1.0f, -9));
  // e5m2: max 57344 (0x7b); 61440 ties to Inf (odd max); Inf exists.
  EXPECT_EQ(floatToFp8e5m2(57344.0f), 0x7b);
  EXPECT_EQ(floatToFp8e5m2(61439.996f), 0x7b);
  EXPECT_EQ(floatToFp8e5m2(61440.0f), 0x7c);
  EXPECT_EQ(floatToFp8e5m2(-std::numeric_limits<float>::infinity()), 0xfc);
  EXPECT_EQ(floatToFp8e5m2(std::ldexp(1.0f, -16)), 0x01);
  EXPECT_EQ(floatToFp8e5m2(std::ldexp(3.0f, -17)), 0x02);  // 1.5 denormal ulps: tie -> even (2)
  EXPECT_EQ(fp8e5m2ToFloat(0x7b), 57344.0f);
}

// ---------------------------------------------------------------- double inputs (goldens)

TEST(FloatConvert, DoubleInputsRoundOnce) {
  const SearchEncoder half(kHalf);
  const SearchEncoder bf16(kBf16);
  std::mt19937_64 rng(4);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-30, 20);
  for (int i = 0; i < 200000; ++i) {
    double x = std::ldexp(mantissa(rng), exponent(rng));
    if (i % 2) x = -x;
    ASSERT_EQ(gradkit::doubleToHalf(x), half.encode(x)) << x;
    ASSERT_EQ(gradkit::doubleToBf16(x), bf16.encode(x)) << x;
  }
  // Just above a bf16 tie by less than a float ulp: float(x) lands on the tie and would round to
  // even (down); rounding once from the double must go up.
  const double justAbove = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30);
  EXPECT_EQ(floatToBf16(static_cast<float>(justAbove)), 0x3f80);
  EXPECT_EQ(gradkit::doubleToBf16(justAbove), 0x3f81);
  const double justAboveHalfTie = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(floatToHalf(static_cast<float>(justAboveHalfTie)), 0x3c00);
  EXPECT_EQ(gradkit::doubleToHalf(justAboveHalfTie), 0x3c01);
  EXPECT_EQ(gradkit::doubleToHalf(1e300), 0x7c00);
  EXPECT_EQ(gradkit::doubleToBf16(-1e300), 0xff80);
  EXPECT_EQ(gradkit::doubleToBf16(1e-300), 0x0000);
  EXPECT_EQ(gradkit::doubleToBf16(-1e-300), 0x8000);
  EXPECT_TRUE(std::isnan(bf16ToFloat(gradkit::doubleToBf16(std::nan("")))));
}

TEST(FloatConvert, IntegerRoundToOdd) {
  // 2^60 + 2^52 + 1 lies just above the bf16 tie 2^60 + 2^52: must round up, although int->double
  // alone would land exactly on the tie.
  const uint64_t x = (uint64_t{1} << 60) + (uint64_t{1} << 52) + 1;
  EXPECT_EQ(floatToBf16(gradkit::detail::uint64ToFloatRoundToOdd(x)), floatToBf16(std::ldexp(1.0f, 60)) + 1);
  EXPECT_EQ(floatToBf16(gradkit::detail::uint64ToFloatRoundToOdd(x - 1)), floatToBf16(std::ldexp(1.0f, 60)));
  EXPECT_EQ(gradkit::detail::int64ToFloatRoundToOdd(-12345), -12345.0f);
  EXPECT_EQ(gradkit::detail::int64ToFloatRoundToOdd(std::numeric_limits<int64_t>::min()), -std::ldexp(1.0f, 63));
  EXPECT_EQ(gradkit::detail::uint64ToFloatRoundToOdd(~uint64_t{0}), std::ldexp(16777215.0f, 40));  // odd, truncated
}

}  // namespace
