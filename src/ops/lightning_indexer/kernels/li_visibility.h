// Which compressed keys a query row of the lightning indexer sees (docs/lightning_indexer_v2.md): the one
// formula of LightningIndexerV2 (which keys it may select) and SparseLightningIndexerKLLossGrad (which slots are
// valid). Compressed entry s of a batch covers the uncompressed tokens [s * cr, (s + 1) * cr); a batch that has seen
// L = Sk * cr + res tokens (res = cmpResidualK[b] < cr, not yet compressed) aligns its Sq query rows right-down, so
// row i stands at the absolute position p_i = Sk * cr + res - Sq + i and, with the right-down causal mask, sees entry
// s iff the whole block of s lies at or before it: (s + 1) * cr <= p_i + 1.
#pragma once

#include <cstdint>

#include "ops/sparse_attention/kernels/smla_semantics.h"

namespace gradkit::kernels {

/** maskMode values: no mask (every used key) and right-down causal on the uncompressed axis. */
inline constexpr int64_t kLiMaskNone = kSmlaMaskNone;
inline constexpr int64_t kLiMaskRightDownCausal = kSmlaMaskCausal;

/**
 * c_i, the number of leading compressed keys row `row` of a batch sees: every used key (`keys`) without a mask; with
 * kLiMaskRightDownCausal floor((p_i + 1) / cmpRatio) clamped to [0, keys], p_i = keys * cmpRatio + residual - queries +
 * row. The same rule as the compressed part of sparse MLA attention, written once there (smlaCmpVisible).
 */
inline int64_t liVisibleKeys(int64_t maskMode, int64_t keys, int64_t cmpRatio, int64_t residual, int64_t queries,
                             int64_t row) {
  return smlaCmpVisible(queries, keys, keys * cmpRatio + residual, cmpRatio, row, maskMode);
}

}  // namespace gradkit::kernels
