// The two aclnn entry points of DropoutBackward: its check, then DoMask's plan with p = 1 - 1/scale.
#include "aclnnop/aclnn_dropout_backward.h"

#include "ops/dropout/do_mask_plan.h"

extern "C" aclnnStatus aclnnDropoutBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* mask,
                                                            double scale, aclTensor* out, uint64_t* workspaceSize,
                                                            aclOpExecutor** executor) {
  return gradkit::getWorkspaceSize(gradkit::ops::kDropoutBackward, {gradOutput, mask, scale, out}, workspaceSize,
                                   executor);
}

extern "C" aclnnStatus aclnnDropoutBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                            aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kDropoutBackwardApi, workspace, workspaceSize, executor, stream);
}
