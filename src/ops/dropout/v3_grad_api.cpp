// The two aclnn entry points of DropoutV3Grad.
#include "aclnnop/aclnn_dropout_v3_grad.h"

#include "ops/dropout/v3_grad_plan.h"

extern "C" aclnnStatus aclnnDropoutV3GradGetWorkspaceSize(const aclTensor* gradY, const aclTensor* mask, double scale,
                                                          aclTensor* gradX, uint64_t* workspaceSize,
                                                          aclOpExecutor** executor) {
  return gradkit::getWorkspaceSize(gradkit::ops::kDropoutV3Grad, {gradY, mask, scale, gradX}, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnDropoutV3Grad(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                          aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kDropoutV3GradApi, workspace, workspaceSize, executor, stream);
}
