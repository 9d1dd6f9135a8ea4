// The two aclnn entry points of DropoutV3.
#include "aclnnop/aclnn_dropout_v3.h"

#include "ops/dropout/dropout_v3_plan.h"

extern "C" aclnnStatus aclnnDropoutV3GetWorkspaceSize(const aclTensor* input, const aclTensor* optionalNoiseShape,
                                                      double p, int64_t seed, int64_t offset, aclTensor* out,
                                                      aclTensor* maskOut, uint64_t* workspaceSize,
                                                      aclOpExecutor** executor) {
  return gradkit::getWorkspaceSize(gradkit::ops::kDropoutV3, {input, optionalNoiseShape, p, seed, offset, out, maskOut},
                                   workspaceSize, executor);
}

extern "C" aclnnStatus aclnnDropoutV3(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                      aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kDropoutV3Api, workspace, workspaceSize, executor, stream);
}
