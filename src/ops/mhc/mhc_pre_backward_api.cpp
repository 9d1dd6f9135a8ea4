// The four aclnn entry points of MhcPreBackward (V1 and V2). V1 is V2 with opImplMode 0.
#include "aclnnop/aclnn_mhc_pre_backward.h"
#include "aclnnop/aclnn_mhc_pre_backward_v2.h"
#include "opapi/op_definition.h"
#include "ops/mhc/mhc_pre_backward_check.h"
#include "ops/mhc/mhc_pre_backward_plan.h"

namespace gradkit::ops {
namespace {

// mHC rejects empty tensors (spec mhc.md 3.6), so a checked call always computes something.
bool nothingToCompute(const MhcPreBackwardArgs&) { return false; }

const OpDefinition<MhcPreBackwardArgs, MhcPreBackwardPlan> kMhcPreBackward{kMhcPreBackwardApi, checkMhcPreBackward,
                                                                           nothingToCompute, planMhcPreBackward};
const OpDefinition<MhcPreBackwardArgs, MhcPreBackwardPlan> kMhcPreBackwardV2{kMhcPreBackwardV2Api, checkMhcPreBackward,
                                                                             nothingToCompute, planMhcPreBackward};

}  // namespace
}  // namespace gradkit::ops

using gradkit::ops::MhcPreBackwardArgs;

extern "C" aclnnStatus aclnnMhcPreBackwardGetWorkspaceSize(
    const aclTensor* x, const aclTensor* phi, const aclTensor* alpha, const aclTensor* gradHIn,
    const aclTensor* gradHPost, const aclTensor* gradHRes, const aclTensor* invRms, const aclTensor* hMix,
    const aclTensor* hPre, const aclTensor* hPost, const aclTensor* gammaOptional, const aclTensor* gradXPostOptional,
    float hcEps, const aclTensor* gradX, const aclTensor* gradPhi, const aclTensor* gradAlpha,
    const aclTensor* gradBias, const aclTensor* gradGamma, uint64_t* workspaceSize, aclOpExecutor** executor) {
  const MhcPreBackwardArgs args{gradkit::ops::kMhcPreBackwardApi,
                                x,
                                phi,
                                alpha,
                                gradHIn,
                                gradHPost,
                                gradHRes,
                                invRms,
                                hMix,
                                hPre,
                                hPost,
                                gammaOptional,
                                gradXPostOptional,
                                hcEps,
                                gradkit::ops::kMhcFp32Matmul,
                                gradX,
                                gradPhi,
                                gradAlpha,
                                gradBias,
                                gradGamma};
  return gradkit::getWorkspaceSize(gradkit::ops::kMhcPreBackward, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnMhcPreBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                           aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kMhcPreBackwardApi, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnMhcPreBackwardV2GetWorkspaceSize(
    const aclTensor* x, const aclTensor* phi, const aclTensor* alpha, const aclTensor* gradHIn,
    const aclTensor* gradHPost, const aclTensor* gradHRes, const aclTensor* invRms, const aclTensor* hMix,
    const aclTensor* hPre, const aclTensor* hPost, const aclTensor* gammaOptional, const aclTensor* gradXPostOptional,
    float hcEps, int64_t opImplMode, const aclTensor* gradX, const aclTensor* gradPhi, const aclTensor* gradAlpha,
    const aclTensor* gradBias, const aclTensor* gradGamma, uint64_t* workspaceSize, aclOpExecutor** executor) {
  const MhcPreBackwardArgs args{gradkit::ops::kMhcPreBackwardV2Api,
                                x,
                                phi,
                                alpha,
                                gradHIn,
                                gradHPost,
                                gradHRes,
                                invRms,
                                hMix,
                                hPre,
                                hPost,
                                gammaOptional,
                                gradXPostOptional,
                                hcEps,
                                opImplMode,
                                gradX,
                                gradPhi,
                                gradAlpha,
                                gradBias,
                                gradGamma};
  return gradkit::getWorkspaceSize(gradkit::ops::kMhcPreBackwardV2, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnMhcPreBackwardV2(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                             aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kMhcPreBackwardV2Api, workspace, workspaceSize, executor, stream);
}
