// The flash attention golden's dropout: its own Philox4x32-R (Random123 constants), the byte stream and element
// positions of spec fag.md 3.2-3.5, and the external packed mask of 2.11.
#include <stdexcept>

#include "golden/flash_attention.h"

namespace gradkit::golden {

std::array<uint32_t, 4> flashAttentionPhilox(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key, int rounds) {
  constexpr uint64_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  std::array<uint32_t, 4> c = counter;
  for (int round = 0; round < rounds; ++round) {
    if (round > 0) {  // the key is bumped between consecutive rounds
      key[0] += kW0;
      key[1] += kW1;
    }
    const uint64_t p0 = kM0 * c[0], p1 = kM1 * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ key[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ key[1], static_cast<uint32_t>(p0)};
  }
  return c;
}

namespace {

// counter + t as 128-bit little-endian words (carry c0 -> c1 -> c2 -> c3).
std::array<uint32_t, 4> addToCounter(std::array<uint32_t, 4> counter, uint64_t t) {
  uint64_t carry = t;
  for (uint32_t& word : counter) {
    const uint64_t sum = static_cast<uint64_t>(word) + (carry & 0xFFFFFFFFu);
    word = static_cast<uint32_t>(sum);
    carry = (carry >> 32) + (sum >> 32);
  }
  return counter;
}

}  // namespace

std::vector<uint8_t> flashAttentionPhiloxBytes(uint64_t seed, uint64_t offset, uint64_t first, uint64_t count) {
  const std::array<uint32_t, 2> key = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
  const uint64_t start = offset / 16 + (offset % 16 != 0 ? 1 : 0);  // ceil(offset / 16) without overflow
  const std::array<uint32_t, 4> base = {static_cast<uint32_t>(start), static_cast<uint32_t>(start >> 32), 0, 0};
  std::vector<uint8_t> bytes(static_cast<size_t>(count));
  std::array<uint32_t, 4> words{};
  uint64_t loaded = ~uint64_t{0};  // block index held in `words`
  for (uint64_t k = 0; k < count; ++k) {
    const uint64_t position = first + k;
    if (position / 16 != loaded) {
      loaded = position / 16;
      words = flashAttentionPhilox(addToCounter(base, loaded), key, 7);
    }
    const uint64_t inBlock = position % 16;
    bytes[k] = static_cast<uint8_t>(words[inBlock / 4] >> (8 * (inBlock % 4)));
  }
  return bytes;
}

uint32_t flashAttentionDropThreshold(float keepProb) {
  const float product = keepProb * 255.0f;  // float32 arithmetic, as the tiling does
  return static_cast<uint32_t>(product);
}

bool flashAttentionKept(const FlashAttentionProblem& p, int64_t b, int64_t n1, int64_t i, int64_t j) {
  if (p.keepProb >= 1.0f) return true;
  if (p.dropMask != nullptr) {
    const int64_t e = p.dropElementIndex(b, n1, i, j);
    return ((p.dropMask[e / 8] >> (e % 8)) & 1u) != 0;
  }
  const auto position = static_cast<uint64_t>(p.dropStreamIndex(b, n1, i, j));
  return flashAttentionPhiloxBytes(p.seed, p.offset, position, 1)[0] <= flashAttentionDropThreshold(p.keepProb);
}

std::vector<uint8_t> flashAttentionPhiloxDropMask(const FlashAttentionProblem& p) {
  checkFlashAttentionProblem(p);
  const int64_t elements = p.dropElements();
  std::vector<uint8_t> mask(static_cast<size_t>((elements + 7) / 8), 0);
  const uint32_t threshold = flashAttentionDropThreshold(p.keepProb);
  for (int64_t b = 0; b < p.batch; ++b) {
    for (int64_t n1 = 0; n1 < p.n1; ++n1) {
      for (int64_t i = 0; i < p.s1[b]; ++i) {
        if (p.s2[b] == 0) continue;
        // One row of the stream at a time: rows start on a block boundary (16-padded).
        const std::vector<uint8_t> row = flashAttentionPhiloxBytes(
            p.seed, p.offset, static_cast<uint64_t>(p.dropStreamIndex(b, n1, i, 0)), static_cast<uint64_t>(p.s2[b]));
        const int64_t e0 = p.dropElementIndex(b, n1, i, 0);
        for (int64_t j = 0; j < p.s2[b]; ++j) {
          const int64_t e = e0 + j;
          if (row[j] <= threshold) mask[e / 8] = static_cast<uint8_t>(mask[e / 8] | (1u << (e % 8)));
        }
      }
    }
  }
  return mask;
}

}  // namespace gradkit::golden
