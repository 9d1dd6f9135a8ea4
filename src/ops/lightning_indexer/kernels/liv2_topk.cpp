#include "ops/lightning_indexer/kernels/liv2_topk.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace gradkit::kernels {

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
  // Ascending (inverted key, position) is best first with ties to the lower position.
  uint32_t histogram[4][256] = {};
  uint64_t* from = scratch.items;
  for (int64_t s = 0; s < count; ++s) {
    const uint32_t key = ~liv2SortKey(scores[s]);
    from[s] = static_cast<uint64_t>(key) << 32 | static_cast<uint64_t>(s);
    ++histogram[0][key & 0xFFu];
    ++histogram[1][(key >> 8) & 0xFFu];
    ++histogram[2][(key >> 16) & 0xFFu];
    ++histogram[3][key >> 24];
  }
  uint64_t* to = scratch.spare;
  for (int pass = 0; pass < 4; ++pass) {
    const int shift = 32 + 8 * pass;
    uint32_t* h = histogram[pass];
    if (h[(from[0] >> shift) & 0xFFu] == static_cast<uint32_t>(count)) continue;  // one digit: nothing moves
    uint32_t start = 0;
    for (int d = 0; d < 256; ++d) {
      const uint32_t c = h[d];
      h[d] = start;
      start += c;
    }
    for (int64_t i = 0; i < count; ++i) to[h[(from[i] >> shift) & 0xFFu]++] = from[i];
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
