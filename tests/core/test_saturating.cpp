// base/saturating.h: the results stick at the type's bounds instead of overflowing, and are exact otherwise.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "base/saturating.h"

namespace gradkit {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr uint64_t kUMax = std::numeric_limits<uint64_t>::max();

TEST(Saturating, SignedAddIsExactInRangeAndSticksAtTheBounds) {
  EXPECT_EQ(satAdd(int64_t{5}, int64_t{-7}), -2);
  EXPECT_EQ(satAdd(kMax - 3, int64_t{3}), kMax);
  EXPECT_EQ(satAdd(int64_t{5}, kMax), kMax);  // the fuzz finding: d0 + nextTokens with nextTokens = INT64_MAX
  EXPECT_EQ(satAdd(int64_t{-5}, kMin), kMin);
  EXPECT_EQ(satAdd(kMax, kMin), -1);
}

TEST(Saturating, SignedSubIsExactInRangeAndSticksAtTheBounds) {
  EXPECT_EQ(satSub(int64_t{5}, int64_t{7}), -2);
  EXPECT_EQ(satSub(kMax, int64_t{-1}), kMax);
  EXPECT_EQ(satSub(kMin, int64_t{1}), kMin);
  EXPECT_EQ(satSub(int64_t{0}, kMin), kMax);  // -INT64_MIN does not exist
  EXPECT_EQ(satSub(int64_t{-1}, kMin), kMax);
}

TEST(Saturating, UnsignedAddAndMulStickAtTheTop) {
  EXPECT_EQ(satAdd(uint64_t{3}, uint64_t{4}), 7u);
  EXPECT_EQ(satAdd(kUMax - 1, uint64_t{2}), kUMax);
  EXPECT_EQ(satMul(uint64_t{1} << 32, uint64_t{1} << 31), uint64_t{1} << 63);
  EXPECT_EQ(satMul(uint64_t{1} << 32, uint64_t{1} << 32), kUMax);
  EXPECT_EQ(satMul(uint64_t{0}, kUMax), 0u);
}

}  // namespace
}  // namespace gradkit
