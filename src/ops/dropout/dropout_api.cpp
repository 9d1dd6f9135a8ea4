// The two aclnn entry points of Dropout.
#include "aclnnop/aclnn_dropout.h"

#include "ops/dropout/dropout_plan.h"

extern "C" aclnnStatus aclnnDropoutGetWorkspaceSize(const aclTensor* input, double p, bool train, int64_t seed,
                                                    int64_t offset, aclTensor* out, aclTensor* maskOut,
                                                    uint64_t* workspaceSize, aclOpExecutor** executor) {
  return gradkit::getWorkspaceSize(gradkit::ops::kDropout, {input, p, train, seed, offset, out, maskOut}, workspaceSize,
                                   executor);
}

extern "C" aclnnStatus aclnnDropout(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                    aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kDropoutApi, workspace, workspaceSize, executor, stream);
}
