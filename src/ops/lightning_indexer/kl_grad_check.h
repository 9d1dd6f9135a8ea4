// The checks of aclnnSparseLightningIndexerKLLossGrad and its Metadata op, in upstream's order (kl_grad_check.cpp,
// kl_grad_metadata_check.cpp), with the rules upstream leaves to tiling or to no one as 161002 (DECISIONS.md "Check
// early and clearly").
#pragma once

#include <cstdint>
#include <string>

#include "aclnn/aclnn_base.h"
#include "ops/lightning_indexer/kl_grad_args.h"
#include "ops/lightning_indexer/kl_grad_layout.h"

namespace gradkit::ops {

/** Ascend950 limits (upstream's aclnn doc and tiling): N1 in [1, 128], K in [1, 2048], cmpRatio in [1, 128]. */
inline constexpr int64_t kKlMaxHeads950 = 128;
inline constexpr int64_t kKlMaxTopk950 = 2048;
inline constexpr int64_t kKlMaxCmpRatio = 128;
/** Ascend910B / Ascend910_93 limits (upstream's aclnn doc and tiling): N1 in {8, 16, 32, 64}, K 512 or a multiple of
 * 1024 up to 8192, B <= 256, S1 <= 8K, S2 <= 512K. */
inline constexpr int64_t kKlMaxTopkA2 = 8192;
inline constexpr int64_t kKlMaxBatchA2 = 256;
inline constexpr int64_t kKlMaxQueryLengthA2 = 8192;
inline constexpr int64_t kKlMaxKeyLengthA2 = 524288;
/** The metadata tensor: int32 [64] on every profile. */
inline constexpr int64_t kKlMetadataSize = 64;

/** ACLNN_SUCCESS or the first failing rule's code, with its message recorded. */
aclnnStatus checkKlGrad(const KlGradArgs& args, const uint64_t* workspaceSize, aclOpExecutor* const* executor);

/** The same for the Metadata op. */
aclnnStatus checkKlGradMetadata(const KlGradMetadataArgs& args, const uint64_t* workspaceSize,
                                aclOpExecutor* const* executor);

/** Whether this profile takes Ascend950's rule set (else the A2/A3 one). */
bool klProfileIs950();

/** "N1 in [1, 128]" or "N1 in {8, 16, 32, 64}" for the current profile; true when `heads` passes. */
bool klHeadsAllowed(int64_t heads, std::string* rule);
/** The same for K. */
bool klTopkAllowed(int64_t topk, std::string* rule);

/** The dims of a call that passed the rank checks (cuSeqLensQ read for TND). */
KlDims klDimsOfArgs(const KlGradArgs& args);

}  // namespace gradkit::ops
