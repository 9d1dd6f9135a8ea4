// The two aclnn entry points of DropoutDoMask.
#include "aclnnop/aclnn_dropout_do_mask.h"

#include "ops/dropout/do_mask_plan.h"

extern "C" aclnnStatus aclnnDropoutDoMaskGetWorkspaceSize(const aclTensor* self, const aclTensor* mask, double prob,
                                                          aclTensor* out, uint64_t* workspaceSize,
                                                          aclOpExecutor** executor) {
  return gradkit::getWorkspaceSize(gradkit::ops::kDropoutDoMask, {self, mask, prob, out}, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnDropoutDoMask(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                          aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kDropoutDoMaskApi, workspace, workspaceSize, executor, stream);
}
