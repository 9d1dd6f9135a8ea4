// Golden LightningIndexerV2, written from the formulas of docs/lightning_indexer_v2.md (the order of a selected row
// is gradkit's decision: score descending, ties to the lower key), never from the kernels. The scores are templated
// on the arithmetic type: double is the fp64 golden; float is the naive same-dtype computation the verify gate compares
// against (the 16-bit operands' products, exact in fp32, summed one at a time over d ascending, then acc + w * relu
// over the heads in order).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace gradkit::golden {

/** One batch: its first row of q / w / the outputs, used rows Sq_b, used compressed keys Sk_b, residual res_b. */
struct LightningIndexerV2Batch {
  int64_t firstRow = 0;
  int64_t usedRows = 0;
  int64_t usedKeys = 0;
  int64_t residual = 0;
};

struct LightningIndexerV2Problem {
  int64_t heads = 1;     // N1
  int64_t dim = 128;     // D
  int64_t topk = 1;      // K
  int64_t cmpRatio = 1;  // cr
  int64_t maskMode = 0;  // 0: every used key; 3: right-down causal on the uncompressed axis
  int64_t rows = 0;      // rows of q (B * S1 or T1)
  std::vector<LightningIndexerV2Batch> batches;
};

/**
 * Keys row i (0-based within the batch) sees: Sk_b without a mask; with mask 3 the keys s whose whole block
 * [s * cr, (s + 1) * cr) lies at or before the row's position p_i = Sk_b * cr + res_b - Sq_b + i, i.e.
 * floor((p_i + 1) / cr) clamped to [0, Sk_b].
 */
int64_t lightningIndexerV2Visible(const LightningIndexerV2Problem& problem, const LightningIndexerV2Batch& batch,
                                  int64_t row);

/** Key s of batch b (D values). */
template <class Real>
using LightningIndexerV2Keys = std::function<const Real*(int64_t batch, int64_t key)>;

/**
 * score(i, s) = sum_h w[i, h] * relu(sum_d q[i, h, d] * k[s, d]) for every visible key of every used row:
 * result[row] holds the row's visible keys' scores (empty for rows that are not used). q [rows, N1, D], w [rows, N1].
 */
template <class Real>
std::vector<std::vector<Real>> lightningIndexerV2Scores(const LightningIndexerV2Problem& problem, const Real* q,
                                                        const Real* w, const LightningIndexerV2Keys<Real>& keys);

/** The selection of one row: the min(topk, count) best positions, best first, equal scores by lower position (NaN
 *  above +inf, +0 above -0). */
std::vector<int64_t> lightningIndexerV2Select(const std::vector<double>& scores, int64_t topk);

}  // namespace gradkit::golden
