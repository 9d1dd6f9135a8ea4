#include "ops/lightning_indexer/kernels/liv2_topk.h"

#include <algorithm>
#include <limits>

namespace gradkit::kernels {
namespace {

// The key (k) that the n-th largest of keys[0 .. count) has, and how many keys equal to it belong to the top n.
struct Threshold {
  uint32_t key = 0;
  int64_t equalTaken = 0;
};

Threshold radixThreshold(const uint32_t* keys, int64_t count, int64_t n) {
  uint32_t prefix = 0, mask = 0;
  int64_t need = n;  // how many of the keys matching `prefix` the top n still takes
  for (int shift = 24; shift >= 0; shift -= 8) {
    int64_t histogram[256] = {};
    for (int64_t s = 0; s < count; ++s) {
      if ((keys[s] & mask) == prefix) ++histogram[(keys[s] >> shift) & 0xFFu];
    }
    int64_t above = 0;
    int digit = 255;
    for (; digit > 0; --digit) {
      if (above + histogram[digit] >= need) break;
      above += histogram[digit];
    }
    prefix |= static_cast<uint32_t>(digit) << shift;
    mask |= 0xFFu << shift;
    need -= above;
  }
  return {prefix, need};
}

}  // namespace

void liv2WriteEmptyRow(int64_t topk, int32_t* indices, float* values) {
  std::fill(indices, indices + topk, -1);
  if (values != nullptr) std::fill(values, values + topk, -std::numeric_limits<float>::infinity());
}

void liv2SelectTopk(const float* scores, int64_t count, int64_t topk, int64_t offset, int32_t* indices, float* values,
                    const LiV2TopkScratch& scratch) {
  const int64_t n = std::min(topk, count);
  if (n <= 0) {
    liv2WriteEmptyRow(topk, indices, values);
    return;
  }
  uint32_t* keys = scratch.keys;
  for (int64_t s = 0; s < count; ++s) keys[s] = liv2SortKey(scores[s]);
  uint64_t* items = scratch.items;
  int64_t gathered = 0;
  if (n < count) {
    const Threshold t = radixThreshold(keys, count, n);
    int64_t equal = t.equalTaken;
    for (int64_t s = 0; s < count; ++s) {
      if (keys[s] > t.key || (keys[s] == t.key && equal-- > 0)) {
        items[gathered++] = static_cast<uint64_t>(keys[s]) << 32 | static_cast<uint64_t>(s);
      }
    }
  } else {
    for (int64_t s = 0; s < count; ++s)
      items[gathered++] = static_cast<uint64_t>(keys[s]) << 32 | static_cast<uint64_t>(s);
  }
  // LSD radix passes alternate between the two buffers; `sorted` ends in one of them.
  uint64_t* from = items;
  uint64_t* to = scratch.spare;
  for (int byte = 4; byte < 8; ++byte) {
    const int shift = 8 * byte;
    int64_t histogram[256] = {};
    for (int64_t i = 0; i < n; ++i) ++histogram[255 - ((from[i] >> shift) & 0xFFu)];
    if (histogram[255 - ((from[0] >> shift) & 0xFFu)] == n) continue;  // one digit: the pass moves nothing
    int64_t start = 0;
    for (int64_t& h : histogram) {
      const int64_t c = h;
      h = start;
      start += c;
    }
    for (int64_t i = 0; i < n; ++i) to[histogram[255 - ((from[i] >> shift) & 0xFFu)]++] = from[i];
    std::swap(from, to);
  }
  for (int64_t j = 0; j < n; ++j) {
    const auto position = static_cast<int64_t>(from[j] & 0xFFFFFFFFu);
    indices[j] = static_cast<int32_t>(position + offset);
    if (values != nullptr) values[j] = scores[position];
  }
  std::fill(indices + n, indices + topk, -1);
  if (values != nullptr) std::fill(values + n, values + topk, -std::numeric_limits<float>::infinity());
}

}  // namespace gradkit::kernels
