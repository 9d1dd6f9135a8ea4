// Philox4x32 (core/philox.h): the Random123 known answers, the 128-bit counter carry, the round-count
// parameter, the curand-style uniform and the integer keep threshold derived from it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>

#include "core/philox.h"

namespace {

using gradkit::philox::Counter;
using gradkit::philox::Key;

TEST(Philox, RandomKnownAnswerZeroKeyZeroCounter) {
  constexpr Counter out = gradkit::philox::block<10>({0, 0, 0, 0}, {0, 0});
  static_assert(out[0] == 0x6627e8d5u && out[1] == 0xe169c58du && out[2] == 0xbc57ac4cu && out[3] == 0x9b00dbd8u);
  EXPECT_EQ(out, (Counter{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}));
}

TEST(Philox, RandomKnownAnswerPiDigits) {
  const Counter out =
      gradkit::philox::block<10>({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u});
  EXPECT_EQ(out, (Counter{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}));
}

TEST(Philox, KeyIsTheSeedsLowThenHighWord) {
  EXPECT_EQ(gradkit::philox::keyFromSeed(0x299f31d0a4093822), (Key{0xa4093822u, 0x299f31d0u}));
  EXPECT_EQ(gradkit::philox::keyFromSeed(-1), (Key{0xffffffffu, 0xffffffffu}));
  EXPECT_EQ(gradkit::philox::keyFromSeed(INT64_MIN), (Key{0u, 0x80000000u}));
}

TEST(Philox, CounterAdditionCarriesAcrossAllFourWords) {
  using gradkit::philox::addToCounter;
  EXPECT_EQ(addToCounter({0xffffffffu, 0, 0, 0}, 1), (Counter{0, 1, 0, 0}));
  EXPECT_EQ(addToCounter({0xffffffffu, 0xffffffffu, 7, 0}, 1), (Counter{0, 0, 8, 0}));
  EXPECT_EQ(addToCounter({0xffffffffu, 0xffffffffu, 0xffffffffu, 5}, 1), (Counter{0, 0, 0, 6}));
  EXPECT_EQ(addToCounter({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, 1), (Counter{0, 0, 0, 0}));
  EXPECT_EQ(addToCounter({2, 3, 4, 5}, 0x100000001ull), (Counter{3, 4, 4, 5}));
  EXPECT_EQ(addToCounter({0xfffffff0u, 0xffffffffu, 1, 2}, 0x20), (Counter{0x10, 0, 2, 2}));
}

TEST(Philox, OneRoundFollowsTheFormula) {
  // ctr (1, 0, 0, 0), key 0: p0 = M0, p1 = 0 -> [0, 0, hi(M0) = 0, lo(M0)].
  EXPECT_EQ(gradkit::philox::round({1, 0, 0, 0}, {0, 0}), (Counter{0, 0, 0, gradkit::philox::kM0}));
  // ctr (0, 5, 3, 9), key (1, 2): p1 = 3 * M1 -> [hi(p1) ^ 5 ^ 1, lo(p1), 0 ^ 9 ^ 2, 0].
  const uint64_t p1 = uint64_t{3} * gradkit::philox::kM1;
  EXPECT_EQ(gradkit::philox::round({0, 5, 3, 9}, {1, 2}),
            (Counter{static_cast<uint32_t>(p1 >> 32) ^ 5u ^ 1u, static_cast<uint32_t>(p1), 9u ^ 2u, 0}));
}

TEST(Philox, RoundCountIsAParameterAndKeysAreBumpedBetweenRounds) {
  const Counter ctr = {11, 22, 33, 44};
  const Key key = {0x12345678u, 0x9abcdef0u};
  const auto keys = gradkit::philox::roundKeys<10>(key);
  EXPECT_EQ(keys[0], key);
  EXPECT_EQ(keys[9], (Key{key[0] + 9 * gradkit::philox::kW0, key[1] + 9 * gradkit::philox::kW1}));
  Counter manual = ctr;
  for (int r = 0; r < 7; ++r) manual = gradkit::philox::round(manual, keys[r]);
  EXPECT_EQ(gradkit::philox::block<7>(ctr, key), manual);
  for (int r = 7; r < 10; ++r) manual = gradkit::philox::round(manual, keys[r]);
  EXPECT_EQ(gradkit::philox::block<10>(ctr, key), manual);
  EXPECT_NE(gradkit::philox::block<7>(ctr, key), gradkit::philox::block<10>(ctr, key));
}

TEST(Philox, UniformIsCurandsFormula) {
  using gradkit::philox::uniform;
  EXPECT_EQ(uniform(0), 0x1.0p-33f);
  EXPECT_EQ(uniform(1), 0x1.8p-32f);
  EXPECT_EQ(uniform(0xffffffffu), 1.0f);
  // float(x) rounds to nearest even; 2^32 - 128 is the smallest x whose float is 2^32 (a tie, to even).
  EXPECT_EQ(uniform(0xffffff7fu), std::nextafter(1.0f, 0.0f));
  EXPECT_EQ(uniform(0xffffff80u), 1.0f);
  // Against double arithmetic rounded once, for random x.
  std::mt19937 rng(5);
  for (int i = 0; i < 100000; ++i) {
    const uint32_t x = rng();
    const double exact = std::ldexp(static_cast<double>(static_cast<float>(x)), -32) + std::ldexp(1.0, -33);
    ASSERT_EQ(uniform(x), static_cast<float>(exact)) << x;
  }
}

TEST(Philox, IntegerThresholdSplitsExactlyWhereTheFloatTestFlips) {
  using gradkit::philox::countUniformBelow;
  using gradkit::philox::uniform;
  EXPECT_EQ(countUniformBelow(1.0f), 0xffffff80u);  // u == 1.0f for the 128 largest x
  EXPECT_EQ(countUniformBelow(0.0f), 0u);
  EXPECT_EQ(countUniformBelow(0x1.0p-33f), 0u);
  EXPECT_EQ(countUniformBelow(std::nextafter(0x1.0p-33f, 1.0f)), 1u);
  EXPECT_EQ(countUniformBelow(2.0f), uint64_t{1} << 32);
  EXPECT_EQ(countUniformBelow(NAN), 0u);
  for (float keep : {0.5f, 0.979f, 0.681f, 0.1f, 1e-6f, 0.99999994f, 0.021f, 0.9f}) {
    const uint64_t below = countUniformBelow(keep);
    ASSERT_GT(below, 0u);
    ASSERT_LT(below, uint64_t{1} << 32);
    EXPECT_TRUE(uniform(static_cast<uint32_t>(below - 1)) < keep) << keep;
    EXPECT_FALSE(uniform(static_cast<uint32_t>(below)) < keep) << keep;
  }
  // Exhaustive over a window around one threshold, and random x against the float test.
  const float keep = 0.681f;
  const uint64_t below = countUniformBelow(keep);
  for (uint64_t x = below - 5000; x < below + 5000; ++x) {
    ASSERT_EQ(uniform(static_cast<uint32_t>(x)) < keep, x < below) << x;
  }
  std::mt19937 rng(9);
  for (int i = 0; i < 100000; ++i) {
    const uint32_t x = rng();
    ASSERT_EQ(uniform(x) < keep, x < below) << x;
  }
}

}  // namespace
