// The value rules of aclnnSparseLightningIndexerKLLossGradGetWorkspaceSize that read the int32 tensors (host memory)
// and that upstream leaves to its metadata AI-CPU kernel or to no one (docs/sparse_lightning_indexer_kl_loss_grad.md
// "Checks"; DECISIONS.md "Check early and clearly"): cu_seqlens from 0, non-decreasing, cu[B] <= T; 0 <= seqUsed[b] <=
// the batch's length, not every seqUsedQ 0; 0 <= cmpResidualK[b] < cmpRatio; on A2/A3 B <= 256, S1 <= 8K, S2 <= 512K
// per batch.
#pragma once

#include "aclnn/aclnn_base.h"
#include "ops/lightning_indexer/kl_grad_args.h"
#include "ops/lightning_indexer/kl_grad_layout.h"

namespace gradkit::ops {

/** The int32 values of the call's per-batch tensors (cu_seqlens only for TND). */
KlSequences klSequencesOf(const KlGradArgs& args, const KlDims& dims);

/** ACLNN_SUCCESS or 161002 naming the argument, the rule and the value. After every shape and memory rule. */
aclnnStatus checkKlGradValues(const KlGradArgs& args, const KlDims& dims);

}  // namespace gradkit::ops
