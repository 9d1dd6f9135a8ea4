// The aclnn entry points of BlockAttentionResiduals and BlockAttentionResidualsGrad.
#include "aclnnop/aclnn_block_attention_residuals.h"
#include "aclnnop/aclnn_block_attention_residuals_grad.h"
#include "opapi/op_definition.h"
#include "ops/mhc/block_residuals_check.h"
#include "ops/mhc/block_residuals_plan.h"

namespace gradkit::ops {
namespace {

// Upstream: an empty hiddenStates (T = 0) succeeds without work (H >= 1 and N >= 1 are checked).
bool forwardHasNoWork(const BlockResidualsArgs& args) { return args.hiddenStates->isEmpty(); }

// H = 0 leaves every output empty; T = 0 with H >= 1 still zero-fills gradProjWeight and gradNormWeight (the plan).
bool gradHasNoWork(const BlockResidualsGradArgs& args) { return args.partialBlock->viewDims[1] == 0; }

const OpDefinition<BlockResidualsArgs, BlockResidualsPlan> kBlockResiduals{kBlockResidualsApi, checkBlockResiduals,
                                                                           forwardHasNoWork, planBlockResiduals};
const OpDefinition<BlockResidualsGradArgs, BlockResidualsGradPlan> kBlockResidualsGrad{
    kBlockResidualsGradApi, checkBlockResidualsGrad, gradHasNoWork, planBlockResidualsGrad};

}  // namespace
}  // namespace gradkit::ops

extern "C" aclnnStatus aclnnBlockAttentionResidualsGetWorkspaceSize(
    const aclTensor* partialBlock, const aclTensor* blockRes, const aclTensor* projWeight, const aclTensor* normWeight,
    int64_t validBlockNum, double normEps, bool needBackward, aclTensor* hiddenStates, aclTensor* invNorm,
    aclTensor* probs, uint64_t* workspaceSize, aclOpExecutor** executor) {
  const gradkit::ops::BlockResidualsArgs args{partialBlock, blockRes,     projWeight,   normWeight, validBlockNum,
                                              normEps,      needBackward, hiddenStates, invNorm,    probs};
  return gradkit::getWorkspaceSize(gradkit::ops::kBlockResiduals, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnBlockAttentionResiduals(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                    aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kBlockResidualsApi, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnBlockAttentionResidualsGradGetWorkspaceSize(
    const aclTensor* partialBlock, const aclTensor* blockRes, const aclTensor* projWeight, const aclTensor* normWeight,
    const aclTensor* gradHiddenStates, const aclTensor* invNorm, const aclTensor* probs, int64_t validBlockNum,
    const aclTensor* gradPartialBlock, const aclTensor* gradBlockRes, const aclTensor* gradProjWeight,
    const aclTensor* gradNormWeight, uint64_t* workspaceSize, aclOpExecutor** executor) {
  // Upstream declares the gradient's outputs const; the plan writes them (as upstream's kernel does).
  const gradkit::ops::BlockResidualsGradArgs args{partialBlock,
                                                  blockRes,
                                                  projWeight,
                                                  normWeight,
                                                  gradHiddenStates,
                                                  invNorm,
                                                  probs,
                                                  validBlockNum,
                                                  const_cast<aclTensor*>(gradPartialBlock),
                                                  const_cast<aclTensor*>(gradBlockRes),
                                                  const_cast<aclTensor*>(gradProjWeight),
                                                  const_cast<aclTensor*>(gradNormWeight)};
  return gradkit::getWorkspaceSize(gradkit::ops::kBlockResidualsGrad, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnBlockAttentionResidualsGrad(void* workspace, uint64_t workspaceSize,
                                                        aclOpExecutor* executor, aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kBlockResidualsGradApi, workspace, workspaceSize, executor, stream);
}
