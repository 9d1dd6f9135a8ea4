// MhcSinkhorn and MhcSinkhornBackward kernels on dense token-major buffers, plus the layout of the saved steps. They
// know nothing about aclTensor.
//
// Every token's n x n matrix is worked on as n rows of kSinkhornColumns (8) floats, the columns past n held at 0, the
// rows of the saved steps (normOut) and the column sums (sumOut) stored that way. Fixed orders (the SIMD and the
// scalar kernels keep them exactly, so their bits agree):
//   rowMax(v) over the 8 columns: a_i = max(v_i, v_(i+4)), b_i = max(a_i, a_(i+2)), max(b_0, b_1)
//   rowSum(v) over the 8 columns: ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7))
//   column sums: rows added in ascending order (the first row as is)
//   scale(s) = 1 / s, one division per sum; a forward step multiplies its rows by it
//   (the backward divides every element by its sum: the gradient feeds matmuls downstream, MhcPreSinkhornBackward's
//   gradPhi, where the extra rounding of a reciprocal showed)
//   forward: m = rowMax(x); e = faExp(x - m) (fa_exp.h); norm0 = e / rowSum(e);
//            sum1 = colsum(norm0 + eps) + eps; norm1 = (norm0 + eps) * scale(sum1);
//            even k: sum_k = rowSum(norm_(k-1)) + eps, norm_k = norm_(k-1) * scale(sum_k);
//            odd k:  sum_k = colsum(norm_(k-1)) + eps, norm_k = norm_(k-1) * scale(sum_k)
//   backward: odd k:  g = (g - colsum(g * norm_k)) / sum_k
//             even k: g = (g - rowSum(g * norm_k)) / sum_k
//             out = (g - rowSum(g * norm_0)) * norm_0 (products, then sums: no fused multiply-add outside faExp)
// A padded column stays 0 (its sums too); the backward ignores whatever the caller's buffers hold there.
//
// Work unit: a run of consecutive tokens; every token's results depend on that token's inputs only, so the bits do
// not depend on how tokens are split over threads.
#pragma once

#include <cstdint>

namespace gradkit::kernels {

/** Columns of a saved row: n padded to one 32-byte block of floats (upstream's n_align). */
inline constexpr int64_t kSinkhornColumns = 8;

/**
 * How the Ascend950 kernel splits T tokens (its tiling, mhc_sinkhorn_layout.cpp): `coreTokens` per vector core on
 * `usedCores` cores (the last takes the rest), each core's share in tiles of `tileTokens` (the last tile the rest).
 */
struct SinkhornSplit {
  int64_t coreTokens = 1;
  int64_t usedCores = 1;
  int64_t tileTokens = 1;
};

/** The Ascend950 split of T tokens of n x n matrices: the forward's and the backward's (they agree). */
SinkhornSplit ascend950SinkhornSplit(int64_t tokens, int64_t n);

/** Where one token's saved steps are: its tile's blocks and its slot in them. */
struct SinkhornSpot {
  int64_t normBase = 0;  // the tile's first normOut element
  int64_t sumBase = 0;   // the tile's first sumOut element
  int64_t tileSize = 1;  // tokens in the tile (handle)
  int64_t slot = 0;      // this token's place in the tile
};

/**
 * The saved layout, tile after tile: a tile of h tokens holds its 2 * iters steps one after the other,
 *   normOut step k: [row n][slot h][column 8]                sumOut odd k:  [slot h][column 8] (column sums)
 *                                                            sumOut even k: [row n][slot h], then (8 - n) h zeros
 * sumOut step 0 is all zeros (the softmax has no sum), or the softmax's row sums (SinkhornProblem::saveSoftmaxSums).
 * Tokens run in order: core after core, tile after tile.
 */
struct SinkhornLayout {
  int64_t tokens = 0, n = 0, iters = 0;
  SinkhornSplit split;

  SinkhornSpot spotOf(int64_t token) const;
  /** normOut's row r of step k of the token at `spot` (8 floats). */
  int64_t normRow(const SinkhornSpot& spot, int64_t k, int64_t r) const {
    return spot.normBase + (k * n + r) * spot.tileSize * kSinkhornColumns + spot.slot * kSinkhornColumns;
  }
  /** sumOut's column sums of odd step k (8 floats). */
  int64_t columnSums(const SinkhornSpot& spot, int64_t k) const {
    return spot.sumBase + k * spot.tileSize * kSinkhornColumns + spot.slot * kSinkhornColumns;
  }
  /** sumOut's sum of row r of even step k (one float). */
  int64_t rowSum(const SinkhornSpot& spot, int64_t k, int64_t r) const {
    return spot.sumBase + k * spot.tileSize * kSinkhornColumns + r * spot.tileSize + spot.slot;
  }
  /** sumOut's sum i of step k: column i's (odd k) or row i's (even k). */
  int64_t stepSum(const SinkhornSpot& spot, int64_t k, int64_t i) const {
    return k % 2 == 1 ? columnSums(spot, k) + i : rowSum(spot, k, i);
  }
};

/** One checked MhcSinkhorn problem. */
struct SinkhornProblem {
  SinkhornLayout layout;  // tokens, n, iters
  float eps = 0.0f;
  const float* x = nullptr;  // [T, n, n]
  float* output = nullptr;   // [T, n, n]
  float* normOut = nullptr;  // 2 iters T n 8, or null: no saved steps
  float* sumOut = nullptr;   // 2 iters T 8 (null with normOut)
  bool streamSaved = false;  // normOut and sumOut written with non-temporal stores where aligned (large ones)
  // sumOut step 0 holds each row's softmax sum rowSum(e) in the even steps' [row][slot] layout instead of zeros
  // (MhcPreSinkhorn saves them; MhcSinkhorn's NPU kernel leaves that memory alone).
  bool saveSoftmaxSums = false;
};

/** One checked MhcSinkhornBackward problem. */
struct SinkhornBackwardProblem {
  SinkhornLayout layout;
  const float* gradOutput = nullptr;  // [T, n, n]
  const float* normOut = nullptr;
  const float* sumOut = nullptr;
  float* out = nullptr;  // [T, n, n]
};

/** The kernels of one implementation; each runs tokens [first, first + count). */
struct SinkhornKernels {
  void (*forward)(const SinkhornProblem& problem, int64_t first, int64_t count);
  void (*backward)(const SinkhornBackwardProblem& problem, int64_t first, int64_t count);
};

/** Highway, dispatched per CPU (x86 from AVX2 on; the scalar kernels elsewhere). */
extern const SinkhornKernels kSinkhornSimdKernels;
/** Plain C++, the reference the SIMD kernels are checked against. */
extern const SinkhornKernels kSinkhornScalarKernels;

}  // namespace gradkit::kernels
