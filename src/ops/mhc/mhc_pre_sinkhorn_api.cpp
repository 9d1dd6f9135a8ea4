// The aclnn entry points of MhcPreSinkhorn and MhcPreSinkhornBackward.
#include "aclnnop/aclnn_mhc_pre_sinkhorn.h"
#include "aclnnop/aclnn_mhc_pre_sinkhorn_backward.h"
#include "opapi/op_definition.h"
#include "ops/mhc/mhc_pre_sinkhorn_check.h"
#include "ops/mhc/mhc_pre_sinkhorn_plan.h"

namespace gradkit::ops {
namespace {

const OpDefinition<MhcPreSinkhornArgs, MhcPreSinkhornPlan> kMhcPreSinkhorn{kMhcPreSinkhornApi, checkMhcPreSinkhorn,
                                                                           mhcPreSinkhornIsEmpty, planMhcPreSinkhorn};
const OpDefinition<MhcPreSinkhornBackwardArgs, MhcPreSinkhornBackwardPlan> kMhcPreSinkhornBackward{
    kMhcPreSinkhornBackwardApi, checkMhcPreSinkhornBackward, mhcPreSinkhornBackwardIsEmpty, planMhcPreSinkhornBackward};

}  // namespace
}  // namespace gradkit::ops

extern "C" aclnnStatus aclnnMhcPreSinkhornGetWorkspaceSize(
    const aclTensor* x, const aclTensor* phi, const aclTensor* alpha, const aclTensor* bias, int64_t hcMult,
    int64_t numIters, double hcEps, double normEps, bool needBackward, aclTensor* hin, aclTensor* hPost,
    aclTensor* hRes, aclTensor* hPre, aclTensor* hcBeforeNorm, aclTensor* invRms, aclTensor* sumOut, aclTensor* normOut,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  const gradkit::ops::MhcPreSinkhornArgs args{x,     phi,          alpha,        bias,   hcMult, numIters,
                                              hcEps, normEps,      needBackward, hin,    hPost,  hRes,
                                              hPre,  hcBeforeNorm, invRms,       sumOut, normOut};
  return gradkit::getWorkspaceSize(gradkit::ops::kMhcPreSinkhorn, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnMhcPreSinkhorn(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                           aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kMhcPreSinkhornApi, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnMhcPreSinkhornBackwardGetWorkspaceSize(
    const aclTensor* gradHin, const aclTensor* gradHPost, const aclTensor* gradHRes, const aclTensor* x,
    const aclTensor* phi, const aclTensor* alpha, const aclTensor* bias, const aclTensor* hPre,
    const aclTensor* hcBeforeNorm, const aclTensor* invRms, const aclTensor* sumOut, const aclTensor* normOut,
    double hcEps, const aclTensor* gradX, const aclTensor* gradPhi, const aclTensor* gradAlpha,
    const aclTensor* gradBias, uint64_t* workspaceSize, aclOpExecutor** executor) {
  const gradkit::ops::MhcPreSinkhornBackwardArgs args{gradHin, gradHPost, gradHRes,     x,         phi,     alpha,
                                                      bias,    hPre,      hcBeforeNorm, invRms,    sumOut,  normOut,
                                                      hcEps,   gradX,     gradPhi,      gradAlpha, gradBias};
  return gradkit::getWorkspaceSize(gradkit::ops::kMhcPreSinkhornBackward, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnMhcPreSinkhornBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                   aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kMhcPreSinkhornBackwardApi, workspace, workspaceSize, executor, stream);
}
