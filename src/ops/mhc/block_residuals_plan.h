// The plans of aclnnBlockAttentionResiduals and aclnnBlockAttentionResidualsGrad: made once in GetWorkspaceSize, run
// on the stream. The run allocates nothing: every buffer beyond the outputs is a booked workspace region.
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "opapi/staged_tensor.h"
#include "opapi/workspace.h"
#include "ops/mhc/block_residuals_args.h"
#include "ops/mhc/kernels/block_residuals_kernel.h"

namespace gradkit::ops {

/** Tokens per weight-sum partial of the gradient: the partition of the sum over tokens, fixed by the shape alone. */
inline constexpr int64_t kBlockResidualsGradChunk = 32;
/** Partials the gradient holds at once (a run adds them to the total in chunk order after each group). */
inline constexpr int64_t kBlockResidualsGradGroup = 64;

/** Every tensor as the kernels see it: dense views in place, any other view staged through the workspace. */
struct BlockResidualsPlan {
  WorkspaceBooking workspace;
  StagedTensor partialBlock, blockRes, projWeight, normWeight, hiddenStates, invNorm, probs;
  bool saves = false;                      // needBackward: invNorm and probs written
  WorkspaceRegion weight;                  // [Hp] floats: normWeight * projWeight
  kernels::BlockResidualsProblem problem;  // sizes, dtype and eps; the run fills in the buffers
  const kernels::BlockResidualsKernels* kernels = nullptr;

  aclnnStatus run(void* memory) const;
};

struct BlockResidualsGradPlan {
  WorkspaceBooking workspace;
  StagedTensor partialBlock, blockRes, projWeight, normWeight, gradHidden, invNorm, probs;
  StagedTensor gradPartialBlock, gradBlockRes, gradProjWeight, gradNormWeight;
  WorkspaceRegion weight;    // [Hp] floats: normWeight * projWeight
  WorkspaceRegion partials;  // [min(chunks, kBlockResidualsGradGroup), Hp] floats: one weight sum per chunk
  WorkspaceRegion total;     // [Hp] floats: the weight sum over every token
  int64_t chunks = 0;        // ceil(T / kBlockResidualsGradChunk)
  kernels::BlockResidualsGradProblem problem;
  const kernels::BlockResidualsKernels* kernels = nullptr;

  aclnnStatus run(void* memory) const;
};

/** Plans a checked forward call with T >= 1. */
BlockResidualsPlan planBlockResiduals(const BlockResidualsArgs& args);
/** Plans a checked gradient call with H >= 1 (T = 0 zero-fills the weight gradients). */
BlockResidualsGradPlan planBlockResidualsGrad(const BlockResidualsGradArgs& args);

}  // namespace gradkit::ops
