// core/fp8.h: the decode tables and the fast fp8Round against the bit-exact conversions of float_convert.h (which
// tests/core/test_float_convert.cpp proves against an exhaustive search): every code point of both formats decodes
// exactly and round-trips; fp8Round equals encode-then-decode at every code, at every midpoint between neighbouring
// codes and one float ulp either side of it (the RNE ties), across the denormal / normal border, past the largest
// finite value (e5m2 -> Inf, e4m3fn -> NaN) and on Inf / NaN; plus known answers written out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "core/fp8.h"

namespace {

using gradkit::Fp8Format;

uint32_t bitsOf(float v) {
  uint32_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

float floatOf(uint32_t b) {
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

float reference(Fp8Format f, float x) {
  return f == Fp8Format::E5M2 ? gradkit::fp8e5m2ToFloat(gradkit::floatToFp8e5m2(x))
                              : gradkit::fp8e4m3ToFloat(gradkit::floatToFp8e4m3(x));
}

bool sameFloat(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) && std::signbit(a) == std::signbit(b);
  return bitsOf(a) == bitsOf(b);
}

bool isNanCode(Fp8Format f, uint32_t code) {
  const uint32_t mag = code & 0x7fu;
  return f == Fp8Format::E4M3FN ? mag == 0x7fu : mag > 0x7cu;
}

class Fp8 : public ::testing::TestWithParam<Fp8Format> {};

TEST_P(Fp8, EveryCodeDecodesExactlyAndRoundTrips) {
  const Fp8Format f = GetParam();
  int finite = 0;
  for (uint32_t code = 0; code < 256; ++code) {
    SCOPED_TRACE(code);
    const auto bits = static_cast<uint8_t>(code);
    const float value = gradkit::fp8Decode(f, bits);
    const float want = f == Fp8Format::E5M2 ? gradkit::fp8e5m2ToFloat(bits) : gradkit::fp8e4m3ToFloat(bits);
    EXPECT_TRUE(sameFloat(value, want));
    EXPECT_EQ(std::signbit(value), (code & 0x80u) != 0);
    if (isNanCode(f, code)) {
      EXPECT_TRUE(std::isnan(value));
      continue;
    }
    if (std::isinf(value)) {
      EXPECT_EQ(f, Fp8Format::E5M2);
      EXPECT_EQ(code & 0x7fu, 0x7cu);
    } else {
      ++finite;
      EXPECT_LE(std::fabs(value), gradkit::fp8MaxOf(f));
    }
    EXPECT_EQ(gradkit::fp8Encode(f, value), bits);  // round trip
    EXPECT_TRUE(sameFloat(gradkit::fp8Round(f, value), value));
  }
  // e5m2: 2 x (124 finite magnitudes); e4m3fn: 2 x 127 (no Inf, one NaN magnitude).
  EXPECT_EQ(finite, f == Fp8Format::E5M2 ? 248 : 254);
  std::vector<float> row(256);
  std::vector<uint8_t> codes(256);
  for (int c = 0; c < 256; ++c) codes[c] = static_cast<uint8_t>(c);
  gradkit::fp8DecodeRow(f, codes.data(), row.data(), 256);
  for (int c = 0; c < 256; ++c) EXPECT_TRUE(sameFloat(row[c], gradkit::fp8Decode(f, codes[c])));
}

TEST_P(Fp8, RoundEqualsEncodeDecodeAtMidpointsAndTheirNeighbours) {
  const Fp8Format f = GetParam();
  // The non-negative finite codes in increasing order, then each midpoint and one float ulp either side.
  std::vector<float> values;
  for (uint32_t code = 0; code < 0x80u; ++code) {
    const float v = gradkit::fp8Decode(f, static_cast<uint8_t>(code));
    if (std::isfinite(v)) values.push_back(v);
  }
  const float top = values.back();
  EXPECT_EQ(top, gradkit::fp8MaxOf(f));
  // The virtual next value past the largest finite one: its midpoint is where overflow starts.
  const float virtualNext = f == Fp8Format::E5M2 ? 65536.0f : 480.0f;
  values.push_back(virtualNext);
  int64_t checked = 0;
  for (size_t i = 0; i + 1 < values.size(); ++i) {
    const float mid = (values[i] + values[i + 1]) / 2;  // exact: few mantissa bits
    for (const float x : {values[i], mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
      for (const float signedX : {x, -x}) {
        ASSERT_TRUE(sameFloat(gradkit::fp8Round(f, signedX), reference(f, signedX))) << signedX;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 900);
}

TEST_P(Fp8, RoundEqualsEncodeDecodeOnRandomFloats) {
  const Fp8Format f = GetParam();
  std::mt19937 rng(13);
  std::uniform_int_distribution<uint32_t> bits;
  std::uniform_int_distribution<int> exponent(-30, 20);
  std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
  std::vector<float> values(200000);
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = i % 2 ? floatOf(bits(rng)) : std::ldexp(mantissa(rng), exponent(rng)) * (i % 4 == 0 ? -1.0f : 1.0f);
  }
  std::vector<float> rounded = values;
  gradkit::fp8RoundInPlace(f, rounded.data(), static_cast<int64_t>(rounded.size()));
  int64_t mismatches = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!sameFloat(rounded[i], reference(f, values[i])) && ++mismatches < 5)
      ADD_FAILURE() << values[i] << " -> " << rounded[i] << " want " << reference(f, values[i]);
  }
  EXPECT_EQ(mismatches, 0);
}

TEST_P(Fp8, RoundEqualsEncodeDecodeOnASweepOfEveryExponent) {
  // Every 251st float bit pattern (17 million, every exponent and sign, Inf and NaN patterns included).
  const Fp8Format f = GetParam();
  std::vector<float> row(4096);
  int64_t mismatches = 0;
  uint64_t bits = 0;
  while (bits <= 0xffffffffull) {
    size_t n = 0;
    for (; n < row.size() && bits <= 0xffffffffull; ++n, bits += 251) row[n] = floatOf(static_cast<uint32_t>(bits));
    std::vector<float> rounded(row.begin(), row.begin() + static_cast<std::ptrdiff_t>(n));
    gradkit::fp8RoundInPlace(f, rounded.data(), static_cast<int64_t>(n));
    for (size_t i = 0; i < n; ++i) {
      if (!sameFloat(rounded[i], reference(f, row[i])) && ++mismatches < 5)
        ADD_FAILURE() << std::hex << bitsOf(row[i]) << " -> " << bitsOf(rounded[i]);
    }
  }
  EXPECT_EQ(mismatches, 0);
}

INSTANTIATE_TEST_SUITE_P(Formats, Fp8, ::testing::Values(Fp8Format::E5M2, Fp8Format::E4M3FN),
                         [](const ::testing::TestParamInfo<Fp8Format>& format) {
                           return format.param == Fp8Format::E5M2 ? std::string("E5M2") : std::string("E4M3FN");
                         });

TEST(Fp8, KnownAnswersE4m3fn) {
  const Fp8Format f = Fp8Format::E4M3FN;
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(gradkit::fp8Round(f, 448.0f), 448.0f);
  EXPECT_EQ(gradkit::fp8Round(f, 464.0f), 448.0f);            // tie between 448 and the NaN code: even (448)
  EXPECT_TRUE(std::isnan(gradkit::fp8Round(f, 464.00003f)));  // past it: NaN, no saturation, no Inf
  EXPECT_TRUE(std::isnan(gradkit::fp8Round(f, -1.0e6f)));
  EXPECT_TRUE(std::signbit(gradkit::fp8Round(f, -1.0e6f)));
  EXPECT_TRUE(std::isnan(gradkit::fp8Round(f, inf)));
  EXPECT_TRUE(std::isnan(gradkit::fp8Round(f, std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(gradkit::fp8Round(f, 1.0625f), 1.0f);                               // tie (1 + 1/16): even mantissa 000
  EXPECT_EQ(gradkit::fp8Round(f, 1.1875f), 1.25f);                              // tie (1.125 | 1.25): even mantissa 010
  EXPECT_EQ(gradkit::fp8Round(f, std::ldexp(1.0f, -9)), std::ldexp(1.0f, -9));  // smallest denormal
  EXPECT_EQ(gradkit::fp8Round(f, std::ldexp(1.0f, -10)), 0.0f);                 // tie with 0 -> 0
  EXPECT_EQ(gradkit::fp8Round(f, std::ldexp(3.0f, -10)), std::ldexp(2.0f, -9));  // 1.5 denormal ulps -> 2 (even)
  EXPECT_EQ(gradkit::fp8Round(f, 0.0155f), 0.015625f);  // crosses into the smallest normal 2^-6
  EXPECT_EQ(gradkit::fp8Encode(f, 448.0f), 0x7e);
  EXPECT_EQ(gradkit::fp8Encode(f, -inf), 0xff);
  EXPECT_EQ(gradkit::fp8MaxOf(f), 448.0f);
}

TEST(Fp8, KnownAnswersE5m2) {
  const Fp8Format f = Fp8Format::E5M2;
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(gradkit::fp8Round(f, 57344.0f), 57344.0f);
  EXPECT_EQ(gradkit::fp8Round(f, 61439.996f), 57344.0f);
  EXPECT_EQ(gradkit::fp8Round(f, 61440.0f), inf);  // tie with the Inf code: Inf (57344 has an odd mantissa)
  EXPECT_EQ(gradkit::fp8Round(f, -1.0e9f), -inf);
  EXPECT_EQ(gradkit::fp8Round(f, inf), inf);
  EXPECT_TRUE(std::isnan(gradkit::fp8Round(f, std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(gradkit::fp8Round(f, 1.125f), 1.0f);                                  // tie: even mantissa 00
  EXPECT_EQ(gradkit::fp8Round(f, 1.375f), 1.5f);                                  // tie: even mantissa 10
  EXPECT_EQ(gradkit::fp8Round(f, std::ldexp(1.0f, -16)), std::ldexp(1.0f, -16));  // smallest denormal
  EXPECT_EQ(gradkit::fp8Round(f, std::ldexp(3.0f, -17)), std::ldexp(2.0f, -16));  // tie -> even (2)
  EXPECT_EQ(gradkit::fp8Round(f, std::ldexp(1.0f, -17)), 0.0f);
  EXPECT_EQ(gradkit::fp8Encode(f, 57344.0f), 0x7b);
  EXPECT_EQ(gradkit::fp8Encode(f, inf), 0x7c);
  EXPECT_EQ(gradkit::fp8MaxOf(f), 57344.0f);
}

TEST(Fp8, FormatOfDtype) {
  Fp8Format f = Fp8Format::E4M3FN;
  EXPECT_TRUE(gradkit::fp8FormatOf(ACL_FLOAT8_E5M2, &f));
  EXPECT_EQ(f, Fp8Format::E5M2);
  EXPECT_TRUE(gradkit::fp8FormatOf(ACL_FLOAT8_E4M3FN, &f));
  EXPECT_EQ(f, Fp8Format::E4M3FN);
  EXPECT_FALSE(gradkit::fp8FormatOf(ACL_FLOAT16, &f));
  EXPECT_FALSE(gradkit::fp8FormatOf(ACL_HIFLOAT8, &f));
  EXPECT_EQ(f, Fp8Format::E4M3FN);
}

}  // namespace
