// Bit-exact comparison and the error sizes of the verify table, on hand-made pairs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "harness/compare.h"

namespace gradkit::cli {
namespace {

uint32_t bits(float value) {
  uint32_t b;
  std::memcpy(&b, &value, 4);
  return b;
}
float fromBits(uint32_t b) {
  float value;
  std::memcpy(&value, &b, 4);
  return value;
}

TEST(Compare, IdenticalBuffersAreBitExact) {
  const float a[4] = {1.0f, -0.0f, std::numeric_limits<float>::quiet_NaN(), -INFINITY};
  const Comparison c = compareElements(ACL_FLOAT, a, a, 4);
  EXPECT_TRUE(c.bitExact());
  EXPECT_EQ(c.count, 4);
  EXPECT_EQ(c.firstMismatch, -1);
  EXPECT_EQ(c.maxAbsErr, 0.0);
  EXPECT_EQ(c.maxRelErr, 0.0);
}

TEST(Compare, NanPayloadAndZeroSignAreMismatchesWithZeroError) {
  const float golden[2] = {fromBits(0x7fc00000u), 0.0f};
  const float ours[2] = {fromBits(0x7fc00001u), -0.0f};
  ASSERT_NE(bits(ours[0]), bits(golden[0]));
  const Comparison c = compareElements(ACL_FLOAT, ours, golden, 2);
  EXPECT_FALSE(c.bitExact());
  EXPECT_EQ(c.mismatches, 2);
  EXPECT_EQ(c.firstMismatch, 0);
  EXPECT_EQ(c.maxAbsErr, 0.0);
}

TEST(Compare, ErrorsOfFiniteValues) {
  const float golden[3] = {1.0f, 4.0f, 0.0f};
  const float ours[3] = {1.0f, 3.0f, 0.5f};
  const Comparison c = compareElements(ACL_FLOAT, ours, golden, 3);
  EXPECT_EQ(c.mismatches, 2);
  EXPECT_EQ(c.firstMismatch, 1);
  EXPECT_DOUBLE_EQ(c.maxAbsErr, 1.0);
  EXPECT_DOUBLE_EQ(c.maxRelErr, 0.5 / 1e-7);  // a golden zero: |0.5 - 0| / (0 + 1e-7)
}

TEST(Compare, OneSidedNanOrInfIsInfinite) {
  const float golden[1] = {2.0f};
  const float ours[1] = {std::numeric_limits<float>::quiet_NaN()};
  EXPECT_TRUE(std::isinf(compareElements(ACL_FLOAT, ours, golden, 1).maxAbsErr));
  const float inf[1] = {INFINITY};
  EXPECT_TRUE(std::isinf(compareElements(ACL_FLOAT, inf, golden, 1).maxRelErr));
  const float negInf[1] = {-INFINITY};
  EXPECT_TRUE(std::isinf(compareElements(ACL_FLOAT, negInf, inf, 1).maxAbsErr));
}

TEST(Compare, NarrowAndIntegerDtypes) {
  const uint16_t goldenHalf[2] = {0x3c00, 0x4000};  // fp16 1.0, 2.0
  const uint16_t oursHalf[2] = {0x3c00, 0x4001};    // 2.0 + one ulp (2^-9)
  const Comparison half = compareElements(ACL_FLOAT16, oursHalf, goldenHalf, 2);
  EXPECT_EQ(half.mismatches, 1);
  EXPECT_DOUBLE_EQ(half.maxAbsErr, std::ldexp(1.0, -9));
  const uint16_t oursBf16[1] = {0x3f81};  // bf16 1.0 + 2^-7
  const uint16_t goldenBf16[1] = {0x3f80};
  EXPECT_DOUBLE_EQ(compareElements(ACL_BF16, oursBf16, goldenBf16, 1).maxAbsErr, std::ldexp(1.0, -7));
  const int8_t oursInt8[3] = {-128, 5, 0};
  const int8_t goldenInt8[3] = {127, 5, 0};
  const Comparison ints = compareElements(ACL_INT8, oursInt8, goldenInt8, 3);
  EXPECT_EQ(ints.mismatches, 1);
  EXPECT_DOUBLE_EQ(ints.maxAbsErr, 255.0);
  const int64_t oursInt64[1] = {(int64_t{1} << 60) + 1};
  const int64_t goldenInt64[1] = {int64_t{1} << 60};
  EXPECT_FALSE(compareElements(ACL_INT64, oursInt64, goldenInt64, 1).bitExact());  // below double's resolution
}

}  // namespace
}  // namespace gradkit::cli
