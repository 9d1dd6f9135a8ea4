// aclnnSparseLightningIndexerKLLossGradMetadata: the int32 [64] core-split image of upstream's AI-CPU kernels
// (docs/sparse_lightning_indexer_kl_loss_grad.md, "The Metadata op"), reproduced with gradkit's reported core counts so
// that the upstream example prints what CANN would print. The main op accepts any such tensor and never reads it (its
// work split is its own).
//   Ascend950 (arch35): word 0 totalNum = sum of the batches' query rows, 1 ceil(totalNum / AIC), 2 that - 1, 3 that
//   * AIC - totalNum, 4 min(totalNum, AIC) (unsigned 32-bit arithmetic, as upstream); words 5..63 0.
//   A2/A3 (arch22): 0 coreNum = min(rows, AIC, 25), 1 totalSize (rows), 2 ceil(rows / coreNum), 3..7 0, 8..32 the
//   first row of each core from upstream's balanced split of the per-row loads, 33..63 0.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "opapi/staged_tensor.h"
#include "opapi/workspace.h"
#include "ops/lightning_indexer/kl_grad_args.h"

namespace gradkit::ops {

/** bS1Index entries of the A2/A3 image. */
inline constexpr int64_t kKlA2MaxCores = 25;

/** Upstream's "present": non-null, at least one dim, dim 0 > 0. */
bool klMetadataPresent(const aclTensor* t);

/** A batch count and the argument it came from. */
struct KlMetadataBatch {
  int64_t batch = 0;
  const char* source = "batchSize";
};
/** seqUsedQ's size, else (TND) cuSeqLensQ's size - 1, else batchSize; the same on the k side. */
KlMetadataBatch klMetadataQueryBatch(const KlGradMetadataArgs& args, bool tnd);
KlMetadataBatch klMetadataKeyBatch(const KlGradMetadataArgs& args, bool tnd);

/** The present int32 tensors' values (cu_seqlens only for TND). */
struct KlMetadataValues {
  std::vector<int64_t> cuQ, cuK, usedQ, usedK, residual;
};
KlMetadataValues klMetadataValues(const KlGradMetadataArgs& args, bool tnd);

/** Batch b's allocated rows: maxSeqlenQ / maxSeqlenK (BSND) or the cu_seqlens difference (TND). */
int64_t klMetadataAllocated(const KlGradMetadataArgs& args, const KlMetadataValues& values, bool tnd, bool query,
                            int64_t b);
/** Used query rows of every batch together (the A2/A3 image's totalSize). */
int64_t klMetadataQueryRows(const KlGradMetadataArgs& args, const KlMetadataValues& values, bool tnd);

/** The image of a checked call for the current profile. */
std::array<int32_t, 64> klMetadataImage(const KlGradMetadataArgs& args);

struct KlGradMetadataPlan {
  WorkspaceBooking workspace;
  StagedTensor metadata;
  std::array<int32_t, 64> image{};

  aclnnStatus run(void* memory) const;
};

KlGradMetadataPlan planKlGradMetadata(const KlGradMetadataArgs& args);

}  // namespace gradkit::ops
