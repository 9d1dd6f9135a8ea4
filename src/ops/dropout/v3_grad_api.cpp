// The two aclnn entry points of DropoutV3Grad: check -> plan -> executor, then launch.
#include "aclnnop/aclnn_dropout_v3_grad.h"

#include <memory>

#include "ops/dropout/v3_grad_check.h"
#include "ops/dropout/v3_grad_plan.h"
#include "runtime/executor.h"

using gradkit::ops::kDropoutV3GradApi;

extern "C" aclnnStatus aclnnDropoutV3GradGetWorkspaceSize(const aclTensor* gradY, const aclTensor* mask, double scale,
                                                          aclTensor* gradX, uint64_t* workspaceSize,
                                                          aclOpExecutor** executor) {
  const aclnnStatus status = gradkit::ops::checkDropoutV3Grad(gradY, mask, gradX, workspaceSize, executor);
  if (status != ACLNN_SUCCESS) return status;

  aclOpExecutor* planned = gradkit::newExecutor(kDropoutV3GradApi);
  if (planned == nullptr) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
  if (!gradY->isEmpty()) {
    auto plan = std::make_shared<const gradkit::ops::DropoutV3GradPlan>(
        gradkit::ops::planDropoutV3Grad(*gradY, *mask, scale, *gradX));
    planned->workspaceSize = plan->staging.workspaceBytes;
    planned->body = [plan](void* workspace) { return plan->run(workspace); };
  }
  *workspaceSize = planned->workspaceSize;
  *executor = planned;
  return ACLNN_SUCCESS;
}

extern "C" aclnnStatus aclnnDropoutV3Grad(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                          aclrtStream stream) {
  return gradkit::launch(kDropoutV3GradApi, workspace, workspaceSize, executor, stream);
}
