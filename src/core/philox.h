// Philox4x32 counter-based random numbers (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"),
// with the round count as a parameter: 10 for the dropout masks (spec dropout_threshold.md 1.2.2), 7 for
// flash attention (spec fag.md 3). Header-only and constexpr so kernels can inline it and tests can check it
// at compile time.
#pragma once

#include <array>
#include <cstdint>

namespace gradkit::philox {

/** Round multipliers and Weyl key increments of Philox4x32. */
inline constexpr uint32_t kM0 = 0xD2511F53u;
inline constexpr uint32_t kM1 = 0xCD9E8D57u;
inline constexpr uint32_t kW0 = 0x9E3779B9u;
inline constexpr uint32_t kW1 = 0xBB67AE85u;

using Counter = std::array<uint32_t, 4>;  // 128-bit little-endian: word 0 is the least significant
using Key = std::array<uint32_t, 2>;

/** The key of a 64-bit seed: (low 32 bits, high 32 bits) of its two's-complement pattern. */
constexpr Key keyFromSeed(int64_t seed) {
  const auto bits = static_cast<uint64_t>(seed);
  return {static_cast<uint32_t>(bits), static_cast<uint32_t>(bits >> 32)};
}

/** counter + delta as a 128-bit little-endian integer (carry from word 0 up to word 3, wrapping). */
constexpr Counter addToCounter(Counter counter, uint64_t delta) {
  const uint64_t low = (uint64_t{counter[1]} << 32 | counter[0]) + delta;
  const uint64_t carry = low < delta ? 1 : 0;
  const uint64_t high = (uint64_t{counter[3]} << 32 | counter[2]) + carry;
  return {static_cast<uint32_t>(low), static_cast<uint32_t>(low >> 32), static_cast<uint32_t>(high),
          static_cast<uint32_t>(high >> 32)};
}

/** One Philox round: two 32x32->64 products mixed with the other two words and the key. */
constexpr Counter round(const Counter& c, const Key& k) {
  const uint64_t p0 = uint64_t{kM0} * c[0];
  const uint64_t p1 = uint64_t{kM1} * c[2];
  return {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
          static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
}

/** Philox4x32-kRounds of one counter block: kRounds rounds, the key bumped by (W0, W1) between rounds. */
template <int kRounds>
constexpr Counter block(Counter counter, Key key) {
  static_assert(kRounds >= 1, "Philox needs at least one round");
  for (int r = 0; r < kRounds; ++r) {
    counter = round(counter, key);
    if (r + 1 < kRounds) key = {key[0] + kW0, key[1] + kW1};
  }
  return counter;
}

/** The key of every round of Philox4x32-kRounds, for kernels that keep them in registers. */
template <int kRounds>
constexpr std::array<Key, kRounds> roundKeys(Key key) {
  std::array<Key, kRounds> keys{};
  for (int r = 0; r < kRounds; ++r) {
    keys[r] = key;
    key = {key[0] + kW0, key[1] + kW1};
  }
  return keys;
}

/**
 * curand's uniform float in (0, 1]: float(x) * 2^-32 + 2^-33 in float32 (the conversion rounds to nearest
 * even, the product is exact, the sum rounds once). 1.0f for the 128 largest x.
 */
constexpr float uniform(uint32_t x) { return static_cast<float>(x) * 0x1.0p-32f + 0x1.0p-33f; }

/**
 * How many x in [0, 2^32) have uniform(x) < limit. uniform is non-decreasing in x, so this count T turns the
 * float test into an integer one: uniform(x) < limit exactly when x < T. 0 for a NaN limit.
 */
constexpr uint64_t countUniformBelow(float limit) {
  uint64_t below = 0, above = uint64_t{1} << 32;  // uniform(x) < limit for x < below; not for x >= above
  while (below < above) {
    const uint64_t middle = below + (above - below) / 2;
    if (uniform(static_cast<uint32_t>(middle)) < limit) {
      below = middle + 1;
    } else {
      above = middle;
    }
  }
  return below;
}

}  // namespace gradkit::philox
