// The two aclnn entry points of ThresholdBackward.
#include "aclnnop/aclnn_threshold_backward.h"

#include "ops/threshold_backward/threshold_backward_plan.h"

extern "C" aclnnStatus aclnnThresholdBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* self,
                                                              const aclScalar* threshold, aclTensor* out,
                                                              uint64_t* workspaceSize, aclOpExecutor** executor) {
  return gradkit::getWorkspaceSize(gradkit::ops::kThresholdBackward, {gradOutput, self, threshold, out}, workspaceSize,
                                   executor);
}

extern "C" aclnnStatus aclnnThresholdBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                              const aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kThresholdBackwardApi, workspace, workspaceSize, executor, stream);
}
