// The four aclnn entry points of MhcPre (V1 and V2). V1 is V2 with opImplMode 0.
#include "aclnnop/aclnn_mhc_pre.h"
#include "aclnnop/aclnn_mhc_pre_v2.h"
#include "opapi/op_definition.h"
#include "ops/mhc/mhc_pre_check.h"
#include "ops/mhc/mhc_pre_plan.h"

namespace gradkit::ops {
namespace {

// mHC rejects empty tensors (spec mhc.md 2.8), so a checked call always computes something.
bool nothingToCompute(const MhcPreArgs&) { return false; }

const OpDefinition<MhcPreArgs, MhcPrePlan> kMhcPre{kMhcPreApi, checkMhcPre, nothingToCompute, planMhcPre};
const OpDefinition<MhcPreArgs, MhcPrePlan> kMhcPreV2{kMhcPreV2Api, checkMhcPre, nothingToCompute, planMhcPre};

}  // namespace
}  // namespace gradkit::ops

using gradkit::ops::MhcPreArgs;

extern "C" aclnnStatus aclnnMhcPreGetWorkspaceSize(const aclTensor* x, const aclTensor* phi, const aclTensor* alpha,
                                                   const aclTensor* bias, const aclTensor* gammaOptional,
                                                   double normEps, double hcEps, aclTensor* hIn, aclTensor* hPost,
                                                   aclTensor* hRes, aclTensor* invRmsOptional, aclTensor* hMixOptional,
                                                   aclTensor* hPreOptional, uint64_t* workspaceSize,
                                                   aclOpExecutor** executor) {
  const MhcPreArgs args{
      gradkit::ops::kMhcPreApi,     x,   phi,   alpha, bias,           gammaOptional, normEps,     hcEps,
      gradkit::ops::kMhcFp32Matmul, hIn, hPost, hRes,  invRmsOptional, hMixOptional,  hPreOptional};
  return gradkit::getWorkspaceSize(gradkit::ops::kMhcPre, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnMhcPre(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                   aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kMhcPreApi, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnMhcPreV2GetWorkspaceSize(const aclTensor* x, const aclTensor* phi, const aclTensor* alpha,
                                                     const aclTensor* bias, const aclTensor* gammaOptional,
                                                     double normEps, double hcEps, int64_t opImplMode, aclTensor* hIn,
                                                     aclTensor* hPost, aclTensor* hRes, aclTensor* invRmsOptional,
                                                     aclTensor* hMixOptional, aclTensor* hPreOptional,
                                                     uint64_t* workspaceSize, aclOpExecutor** executor) {
  const MhcPreArgs args{gradkit::ops::kMhcPreV2Api,
                        x,
                        phi,
                        alpha,
                        bias,
                        gammaOptional,
                        normEps,
                        hcEps,
                        opImplMode,
                        hIn,
                        hPost,
                        hRes,
                        invRmsOptional,
                        hMixOptional,
                        hPreOptional};
  return gradkit::getWorkspaceSize(gradkit::ops::kMhcPreV2, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnMhcPreV2(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                     aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kMhcPreV2Api, workspace, workspaceSize, executor, stream);
}
