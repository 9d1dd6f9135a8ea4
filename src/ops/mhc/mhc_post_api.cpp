// The aclnn entry points of MhcPost and MhcPostBackward.
#include "aclnnop/aclnn_mhc_post.h"
#include "aclnnop/aclnn_mhc_post_backward.h"
#include "opapi/op_definition.h"
#include "ops/mhc/mhc_post_check.h"
#include "ops/mhc/mhc_post_plan.h"

namespace gradkit::ops {
namespace {

// mHC rejects empty tensors, so a checked call always computes something.
template <class Args>
bool nothingToCompute(const Args&) {
  return false;
}

const OpDefinition<MhcPostArgs, MhcPostPlan> kMhcPost{kMhcPostApi, checkMhcPost, nothingToCompute<MhcPostArgs>,
                                                      planMhcPost};
const OpDefinition<MhcPostBackwardArgs, MhcPostBackwardPlan> kMhcPostBackward{
    kMhcPostBackwardApi, checkMhcPostBackward, nothingToCompute<MhcPostBackwardArgs>, planMhcPostBackward};

}  // namespace
}  // namespace gradkit::ops

extern "C" aclnnStatus aclnnMhcPostGetWorkspaceSize(const aclTensor* x, const aclTensor* hRes, const aclTensor* hOut,
                                                    const aclTensor* hPost, aclTensor* out, uint64_t* workspaceSize,
                                                    aclOpExecutor** executor) {
  const gradkit::ops::MhcPostArgs args{x, hRes, hOut, hPost, out};
  return gradkit::getWorkspaceSize(gradkit::ops::kMhcPost, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnMhcPost(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                    aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kMhcPostApi, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnMhcPostBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* x,
                                                            const aclTensor* hRes, const aclTensor* hOut,
                                                            const aclTensor* hPost, aclTensor* gradX,
                                                            aclTensor* gradHRes, aclTensor* gradHOut,
                                                            aclTensor* gradHPost, uint64_t* workspaceSize,
                                                            aclOpExecutor** executor) {
  const gradkit::ops::MhcPostBackwardArgs args{gradOutput, x, hRes, hOut, hPost, gradX, gradHRes, gradHOut, gradHPost};
  return gradkit::getWorkspaceSize(gradkit::ops::kMhcPostBackward, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnMhcPostBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                            const aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kMhcPostBackwardApi, workspace, workspaceSize, executor, stream);
}
