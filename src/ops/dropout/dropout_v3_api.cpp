// The aclnn entry points of DropoutV3: check -> plan -> executor, then launch.
#include <memory>

#include "aclnnop/aclnn_dropout_v3.h"
#include "ops/dropout/dropout_v3_check.h"
#include "ops/dropout/dropout_v3_plan.h"
#include "runtime/executor.h"

using gradkit::ops::kDropoutV3Api;

extern "C" aclnnStatus aclnnDropoutV3GetWorkspaceSize(const aclTensor* input, const aclTensor* optionalNoiseShape,
                                                      double p, int64_t seed, int64_t offset, aclTensor* out,
                                                      aclTensor* maskOut, uint64_t* workspaceSize,
                                                      aclOpExecutor** executor) {
  const aclnnStatus status =
      gradkit::ops::checkDropoutV3(input, optionalNoiseShape, p, offset, out, maskOut, workspaceSize, executor);
  if (status != ACLNN_SUCCESS) return status;

  aclOpExecutor* planned = gradkit::newExecutor(kDropoutV3Api);
  if (planned == nullptr) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
  if (!input->isEmpty()) {
    auto plan = std::make_shared<const gradkit::ops::DropoutV3Plan>(
        gradkit::ops::planDropoutV3(*input, p, seed, offset, *out, *maskOut));
    planned->workspaceSize = plan->workspaceBytes;
    planned->body = [plan](void* workspace) { return plan->run(workspace); };
  }
  *workspaceSize = planned->workspaceSize;
  *executor = planned;
  return ACLNN_SUCCESS;
}

extern "C" aclnnStatus aclnnDropoutV3(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                      aclrtStream stream) {
  return gradkit::launch(kDropoutV3Api, workspace, workspaceSize, executor, stream);
}
