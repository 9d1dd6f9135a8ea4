// The selection of LightningIndexerV2 (liv2_kernel.h): the top n = min(topk, count) entries of a row of fp32 scores
// under a total order, written sorted. Plain integer code shared by every kernel table (its result is exact).
#pragma once

#include <cstdint>
#include <cstring>

namespace gradkit::kernels {

/**
 * The order-preserving key of a score: larger key = larger score; every NaN maps to the largest key (a canonical NaN
 * above +inf), +0 above -0.
 */
inline uint32_t liv2SortKey(float score) {
  uint32_t bits;
  std::memcpy(&bits, &score, sizeof(bits));
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return 0xFFFFFFFFu;
  return (bits & 0x80000000u) != 0 ? ~bits : bits | 0x80000000u;
}

/** Scratch of one selection: `items` and `spare` for `count` entries each. */
struct LiV2TopkScratch {
  uint64_t* items = nullptr;
  uint64_t* spare = nullptr;
};

/**
 * Writes the n = min(topk, count) best entries of scores[0 .. count) to indices[0 .. n) (the entry's position +
 * offset) and, when `values` is not null, values[0 .. n) (its score), best first, equal keys by lower position; then
 * -1 and -inf up to topk. A stable LSD radix sort of all `count` entries by key (four 8-bit passes over
 * (inverted key << 32 | position), their histograms counted in one pass, passes with a single digit skipped), then the
 * first n: no more work than a radix selection of the n-th key followed by a sort of the n selected.
 */
void liv2SelectTopk(const float* scores, int64_t count, int64_t topk, int64_t offset, int32_t* indices, float* values,
                    const LiV2TopkScratch& scratch);

/** -1 in indices[0 .. topk) and, when `values` is not null, -inf in values[0 .. topk). */
void liv2WriteEmptyRow(int64_t topk, int32_t* indices, float* values);

}  // namespace gradkit::kernels
