// The aclnn entry points of Dropout: check -> plan -> executor, then launch.
#include <memory>

#include "aclnnop/aclnn_dropout.h"
#include "ops/dropout/dropout_check.h"
#include "ops/dropout/dropout_plan.h"
#include "runtime/executor.h"

using gradkit::ops::kDropoutApi;

extern "C" aclnnStatus aclnnDropoutGetWorkspaceSize(const aclTensor* input, double p, bool train, int64_t seed,
                                                    int64_t offset, aclTensor* out, aclTensor* maskOut,
                                                    uint64_t* workspaceSize, aclOpExecutor** executor) {
  const aclnnStatus status = gradkit::ops::checkDropout(input, p, out, maskOut, workspaceSize, executor);
  if (status != ACLNN_SUCCESS) return status;

  aclOpExecutor* planned = gradkit::newExecutor(kDropoutApi);
  if (planned == nullptr) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
  if (!input->isEmpty()) {
    auto plan = std::make_shared<const gradkit::ops::DropoutPlan>(
        gradkit::ops::planDropout(*input, p, train, seed, offset, *out, *maskOut));
    planned->workspaceSize = plan->workspaceBytes;
    planned->body = [plan](void* workspace) { return plan->run(workspace); };
  }
  *workspaceSize = planned->workspaceSize;
  *executor = planned;
  return ACLNN_SUCCESS;
}

extern "C" aclnnStatus aclnnDropout(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                    aclrtStream stream) {
  return gradkit::launch(kDropoutApi, workspace, workspaceSize, executor, stream);
}
