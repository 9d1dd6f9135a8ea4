// op::bfloat16 and op::fp16_t: the value semantics upstream code relies on (construction, float
// conversion, printing, cross conversion, integers and doubles rounded once).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "opdev/bfloat16.h"
#include "opdev/fp16_t.h"

namespace {

template <class T>
std::string printed(const T& value) {
  std::ostringstream os;
  os << value;
  return os.str();
}

TEST(OpdevTypes, LayoutIsTwoRawBytes) {
  static_assert(sizeof(op::bfloat16) == 2, "bf16 buffers are arrays of 16-bit patterns");
  static_assert(sizeof(op::fp16_t) == 2, "fp16 buffers are arrays of 16-bit patterns");
  static_assert(std::is_trivially_copyable<op::bfloat16>::value, "memcpy-able");
  static_assert(std::is_trivially_copyable<op::fp16_t>::value, "memcpy-able");
  const op::bfloat16 one(1.0f);
  uint16_t raw;
  std::memcpy(&raw, &one, 2);
  EXPECT_EQ(raw, 0x3f80);
  EXPECT_EQ(one.value, 0x3f80);
  EXPECT_EQ(op::fp16_t(1.0f).val, 0x3c00);
  EXPECT_EQ(op::bfloat16::fromBits(0x4049).bits(), 0x4049);
  EXPECT_EQ(static_cast<float>(op::bfloat16::fromBits(0x4049)), 3.140625f);
  EXPECT_EQ(op::fp16_t().val, 0);
  std::vector<op::bfloat16> zeros(3);
  EXPECT_EQ(zeros[2].value, 0);
}

TEST(OpdevTypes, InfinityAndNaN) {
  const op::bfloat16 posInf(std::numeric_limits<float>::infinity());
  EXPECT_EQ(static_cast<float>(posInf), std::numeric_limits<float>::infinity());
  EXPECT_EQ(printed(posInf), "inf");
  EXPECT_EQ(printed(op::bfloat16(-std::numeric_limits<float>::infinity())), "-inf");
  // FLT_MAX lies beyond the bf16 max by more than half an ulp: Inf.
  EXPECT_EQ(static_cast<float>(op::bfloat16(std::numeric_limits<float>::max())),
            std::numeric_limits<float>::infinity());
  EXPECT_EQ(static_cast<float>(op::bfloat16(std::numeric_limits<float>::lowest())),
            -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(static_cast<float>(op::bfloat16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(static_cast<float>(op::bfloat16(std::numeric_limits<float>::signaling_NaN()))));
  EXPECT_EQ(printed(op::bfloat16(std::numeric_limits<float>::quiet_NaN())), "nan");
  EXPECT_EQ(printed(op::fp16_t(1e6f)), "inf");
  EXPECT_EQ(printed(op::fp16_t(65504.0f)), "65504");
  EXPECT_TRUE(std::isnan(static_cast<float>(op::fp16_t(std::numeric_limits<float>::quiet_NaN()))));
}

TEST(OpdevTypes, ArithmeticGoesThroughFloat) {
  const float pi = 3.1415926f;
  const op::bfloat16 a(pi);
  const op::bfloat16 b(pi + std::numeric_limits<float>::epsilon());
  EXPECT_LT(std::abs(a - b), std::numeric_limits<float>::epsilon());
  EXPECT_EQ(static_cast<float>(a), 3.140625f);  // nearest bf16 of pi
  op::bfloat16 sum(1.0f);
  sum += 1.0f / 256;  // 1 + 2^-8 is a tie between 1 and 1 + 2^-7: even -> 1
  EXPECT_EQ(static_cast<float>(sum), 1.0f);
  sum += 3.0f / 256;
  EXPECT_EQ(static_cast<float>(sum), 1.015625f);
  op::fp16_t h(2.0f);
  h *= 1.5f;
  h -= 1.0f;
  h /= 4.0f;
  EXPECT_EQ(static_cast<float>(h), 0.5f);
  const float mixed = a * 2 + h;
  EXPECT_EQ(mixed, 6.78125f);
  EXPECT_LT(op::fp16_t(1.0f), op::fp16_t(2.0f));
}

TEST(OpdevTypes, CrossConversions) {
  const op::fp16_t three = 3;
  const op::bfloat16 fromHalf = three;
  EXPECT_EQ(static_cast<float>(fromHalf), 3.0f);
  EXPECT_EQ(op::fp16_t(fromHalf).val, three.val);
  const op::fp16_t back = static_cast<op::tagFp16>(fromHalf);
  EXPECT_EQ(back.val, 0x4200);
  // A value exact in fp16 but not in bf16 rounds once, to nearest even.
  const op::fp16_t fine(1.0f + 1.0f / 1024);  // 1 + 2^-10
  EXPECT_EQ(op::bfloat16(fine).value, 0x3f80);
  // bf16's range is wider than fp16's: overflow to Inf.
  EXPECT_EQ(op::fp16_t(op::bfloat16(1e6f)).val, 0x7c00);
}

TEST(OpdevTypes, IntegersAndDoublesRoundOnce) {
  op::fp16_t h;
  const int64_t from = 2048;
  h = from + 1;  // 2049 is a tie between 2048 and 2050 in fp16: even -> 2048
  EXPECT_EQ(static_cast<int64_t>(h), 2048);
  h = from + 3;  // 2051: tie between 2050 and 2052 -> 2052
  EXPECT_EQ(static_cast<int64_t>(h), 2052);
  EXPECT_EQ(op::fp16_t(uint16_t{7}).val, 0x4700);  // numeric value, not raw bits
  EXPECT_EQ(op::fp16_t::fromBits(7).val, 7);
  // 2^60 + 2^52 + 1 is just above a bf16 tie; int64 -> double would land on it.
  const int64_t big = (int64_t{1} << 60) + (int64_t{1} << 52) + 1;
  EXPECT_EQ(op::bfloat16(big).value, op::bfloat16(std::ldexp(1.0f, 60)).value + 1);
  EXPECT_EQ(op::bfloat16(-big).value, op::bfloat16(-std::ldexp(1.0f, 60)).value + 1);
  // Same for doubles just above a tie by less than a float ulp.
  EXPECT_EQ(op::bfloat16(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30)).value, 0x3f81);
  EXPECT_EQ(op::fp16_t(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)).val, 0x3c01);
  EXPECT_EQ(op::bfloat16(true).value, 0x3f80);
}

TEST(OpdevTypes, NumericLimits) {
  EXPECT_EQ(static_cast<float>(std::numeric_limits<op::bfloat16>::max()), 0x1.fep127f);
  EXPECT_EQ(static_cast<float>(std::numeric_limits<op::bfloat16>::lowest()), -0x1.fep127f);
  EXPECT_EQ(static_cast<float>(std::numeric_limits<op::bfloat16>::min()), 0x1p-126f);
  EXPECT_EQ(static_cast<float>(std::numeric_limits<op::bfloat16>::epsilon()), 0x1p-7f);
  EXPECT_EQ(static_cast<float>(std::numeric_limits<op::bfloat16>::denorm_min()), 0x1p-133f);
  EXPECT_EQ(static_cast<float>(std::numeric_limits<op::fp16_t>::max()), 65504.0f);
  EXPECT_EQ(static_cast<float>(std::numeric_limits<op::fp16_t>::min()), 0x1p-14f);
  EXPECT_EQ(static_cast<float>(std::numeric_limits<op::fp16_t>::epsilon()), 0x1p-10f);
  EXPECT_EQ(static_cast<float>(std::numeric_limits<op::fp16_t>::denorm_min()), 0x1p-24f);
  EXPECT_TRUE(std::isinf(static_cast<float>(std::numeric_limits<op::fp16_t>::infinity())));
  EXPECT_TRUE(std::isnan(static_cast<float>(std::numeric_limits<op::bfloat16>::quiet_NaN())));
  EXPECT_EQ(std::numeric_limits<op::fp16_t>::digits, 11);
  EXPECT_EQ(std::numeric_limits<op::bfloat16>::digits, 8);
}

}  // namespace
