// The plan of aclnnLightningIndexerV2: made once in GetWorkspaceSize (the per-batch values are read then, from host
// memory), run on the stream. The run allocates nothing: staged views, the gathered paged keys and the workers'
// scratch are booked workspace regions.
#pragma once

#include <cstdint>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "opapi/staged_tensor.h"
#include "opapi/workspace.h"
#include "ops/lightning_indexer/kernels/liv2_kernel.h"
#include "ops/lightning_indexer/liv2_args.h"

namespace gradkit::ops {

/** A run of keys a PA_BBND call copies from one cache block into the dense key rows the kernels read. */
struct LiV2PagedBlock {
  int64_t cacheBlock = 0;  // k dim 0
  int64_t keys = 0;        // slots [0, keys) of the block
  int64_t denseRow = 0;    // where its slot 0 goes
};

struct LiV2Plan {
  WorkspaceBooking workspace;
  StagedTensor q, k, w, offsets, indices, values;  // k: BSND / TND only; offsets and values only when used
  bool paged = false, hasOffsets = false, writesValues = false;
  aclTensor pagedCache;                     // PA_BBND: the caller's k view
  std::vector<LiV2PagedBlock> pagedBlocks;  // PA_BBND
  WorkspaceRegion pagedKeys;                // PA_BBND: [sum of Sk_b, 128] of q's dtype
  WorkspaceRegion scratch;
  kernels::LiV2Problem problem;  // sizes, batches, tile sums; the run fills in the buffers
  kernels::LiV2Schedule schedule;

  aclnnStatus run(void* memory) const;
};

/** Plans a checked call. */
LiV2Plan planLightningIndexerV2(const LiV2Args& args);

}  // namespace gradkit::ops
