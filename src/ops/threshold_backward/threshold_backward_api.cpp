// The two aclnn entry points of ThresholdBackward: check -> plan -> executor, then launch.
#include "aclnnop/aclnn_threshold_backward.h"

#include <memory>

#include "base/error.h"
#include "ops/threshold_backward/threshold_backward_check.h"
#include "ops/threshold_backward/threshold_backward_plan.h"
#include "runtime/executor.h"

using gradkit::ops::kThresholdBackwardApi;

extern "C" aclnnStatus aclnnThresholdBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* self,
                                                              const aclScalar* threshold, aclTensor* out,
                                                              uint64_t* workspaceSize, aclOpExecutor** executor) {
  const aclnnStatus status =
      gradkit::ops::checkThresholdBackward(gradOutput, self, threshold, out, workspaceSize, executor);
  if (status != ACLNN_SUCCESS) return status;

  aclOpExecutor* planned = gradkit::newExecutor(kThresholdBackwardApi);
  if (planned == nullptr) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
  if (!out->isEmpty()) {  // out is empty exactly when gradOutput or self is: nothing to compute
    auto plan = std::make_shared<const gradkit::ops::ThresholdBackwardPlan>(
        gradkit::ops::planThresholdBackward(*gradOutput, *self, *threshold, *out));
    planned->workspaceSize = plan->workspaceBytes;
    planned->body = [plan](void* workspace) { return plan->run(workspace); };
  }
  *workspaceSize = planned->workspaceSize;
  *executor = planned;
  return ACLNN_SUCCESS;
}

extern "C" aclnnStatus aclnnThresholdBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                              const aclrtStream stream) {
  return gradkit::launch(kThresholdBackwardApi, workspace, workspaceSize, executor, stream);
}
