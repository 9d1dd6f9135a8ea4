#include "golden/dropout_gen_mask.h"

#include <cfloat>
#include <cmath>

namespace gradkit::golden {

void philox4x32x10(const uint32_t counter[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t x0 = counter[0], x1 = counter[1], x2 = counter[2], x3 = counter[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int roundIndex = 0; roundIndex < 10; ++roundIndex) {
    const uint64_t product0 = static_cast<uint64_t>(0xD2511F53u) * x0;
    const uint64_t product1 = static_cast<uint64_t>(0xCD9E8D57u) * x2;
    const uint32_t hi0 = static_cast<uint32_t>(product0 >> 32), lo0 = static_cast<uint32_t>(product0);
    const uint32_t hi1 = static_cast<uint32_t>(product1 >> 32), lo1 = static_cast<uint32_t>(product1);
    x0 = hi1 ^ x1 ^ k0;
    x1 = lo1;
    x2 = hi0 ^ x3 ^ k1;
    x3 = lo0;
    k0 += 0x9E3779B9u;  // the bump after the last round is never used
    k1 += 0xBB67AE85u;
  }
  out[0] = x0;
  out[1] = x1;
  out[2] = x2;
  out[3] = x3;
}

std::vector<uint8_t> dropoutGenMask(int64_t n, double prob, int64_t seed, int64_t offset) {
  const int64_t bytes = (n + 127) / 128 * 16;
  if (std::fabs(prob) <= DBL_EPSILON) return std::vector<uint8_t>(static_cast<size_t>(bytes), 0xFF);
  if (std::fabs(prob - 1.0) <= DBL_EPSILON) return std::vector<uint8_t>(static_cast<size_t>(bytes), 0x00);
  return dropoutGenMaskStream(n, prob, seed, offset);
}

int64_t dropoutGenMaskTensorOffset(int64_t offsetTensorValue, int64_t offset) {
  // Two's complement wrap-around, written without signed overflow.
  const uint64_t sum = static_cast<uint64_t>(offsetTensorValue) + static_cast<uint64_t>(offset);
  return sum >= (uint64_t{1} << 63) ? -static_cast<int64_t>(~sum) - 1 : static_cast<int64_t>(sum);
}

std::vector<uint8_t> dropoutGenMaskStream(int64_t n, double prob, int64_t seed, int64_t offset) {
  const int64_t bytes = (n + 127) / 128 * 16;
  std::vector<uint8_t> mask(static_cast<size_t>(bytes), 0);
  const double keep = static_cast<float>(1.0 - prob);
  const auto seedBits = static_cast<uint64_t>(seed);
  const auto offsetBits = static_cast<uint64_t>(offset);
  const uint32_t key[2] = {static_cast<uint32_t>(seedBits), static_cast<uint32_t>(seedBits >> 32)};
  for (int64_t block = 0; block * 4 < n; ++block) {
    // [0, 0, offset] + block as a 128-bit number: block < 2^62, so it only fills the low 64 bits.
    const auto low = static_cast<uint64_t>(block);
    const uint32_t counter[4] = {static_cast<uint32_t>(low), static_cast<uint32_t>(low >> 32),
                                 static_cast<uint32_t>(offsetBits), static_cast<uint32_t>(offsetBits >> 32)};
    uint32_t words[4];
    philox4x32x10(counter, key, words);
    for (int64_t w = 0; w < 4 && block * 4 + w < n; ++w) {
      // float(x) rounds once; the scaled sum is exact in double and rounds once more to float.
      const double x = static_cast<float>(words[w]);
      const double u = static_cast<float>(std::ldexp(x, -32) + std::ldexp(1.0, -33));
      const int64_t i = block * 4 + w;
      if (u < keep) mask[static_cast<size_t>(i >> 3)] |= static_cast<uint8_t>(1u << (i & 7));
    }
  }
  return mask;
}

}  // namespace gradkit::golden
