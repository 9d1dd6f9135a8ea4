// Which keys one query row of DeepSeek-V4 sparse MLA attention sees (docs/sparse_attention.md, "What one query row
// sees"): the one description read by the forward and backward kernels, the plans and the metadata planner.
//
// Row i (0-based) of a batch with s1 query rows, s2 ori KV rows, c compressed rows (restored length
// r_len = c * ratio + residual) attends over the ori part, then the cmp part:
//   ori   thr = s2 - s1 + i + 1 (the row's right-down causal diagonal, exclusive)
//         mode 0: [0, s2)   mode 3: [0, thr)   mode 4 (band): [thr - winLeft - 1, thr + winRight), -1 = unbounded,
//         clipped to [0, s2)
//         ori sparse indices: the first min(K, n) entries of the row's list, n = topk length (mode 0) or the window's
//         size (mode 3, 4); a negative entry ends the list; entries outside the window are dropped
//   cmp   visible count v = floor((r_len - s1 + i + 1) / ratio) (mode 3) or c (mode 0), clipped to [0, c]
//         dense (HCA): [0, v)   top-k (CSA): the first min(K2, v) entries (mode 3) or min(K2, topk length) (mode 0),
//         a negative entry ends the list, entries >= v dropped, duplicates kept (each is a column of the softmax)
#pragma once

#include <algorithm>
#include <cstdint>

namespace gradkit::kernels {

/** A half-open range [begin, end) of key rows; empty when end <= begin. */
struct SmlaRange {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end > begin ? end - begin : 0; }
};

/** Ori mask modes and the unbounded window value. */
inline constexpr int64_t kSmlaMaskNone = 0, kSmlaMaskCausal = 3, kSmlaMaskBand = 4;
inline constexpr int64_t kSmlaUnboundedWindow = -1;

/** The ori rows of row i that a dense ori part attends to (and that ori sparse indices may name). */
inline SmlaRange smlaOriRange(int64_t s1, int64_t s2, int64_t i, int64_t mode, int64_t winLeft, int64_t winRight) {
  const int64_t thr = s2 - s1 + i + 1;
  SmlaRange r{0, s2};
  if (mode == kSmlaMaskCausal) {
    r.end = std::clamp<int64_t>(thr, 0, s2);
  } else if (mode == kSmlaMaskBand) {
    if (winLeft != kSmlaUnboundedWindow) r.begin = std::max<int64_t>(thr - winLeft - 1, 0);
    if (winRight != kSmlaUnboundedWindow) r.end = std::clamp<int64_t>(thr + winRight, 0, s2);
  }
  return r;
}

/** How many compressed rows row i may see: [0, result) (values sizes up to int32, so no overflow in int64). */
inline int64_t smlaCmpVisible(int64_t s1, int64_t c, int64_t restoredLen, int64_t ratio, int64_t i, int64_t mode) {
  if (mode != kSmlaMaskCausal) return c;
  const int64_t numerator = restoredLen - s1 + i + 1;
  return numerator <= 0 ? 0 : std::min(c, numerator / ratio);
}

/** The entries of an index list a row reads before filtering: min(k, limit), never negative. */
inline int64_t smlaIndicesRead(int64_t k, int64_t limit) { return std::max<int64_t>(0, std::min(k, limit)); }

}  // namespace gradkit::kernels
