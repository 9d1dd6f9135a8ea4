// The two aclnn entry points of DropoutBackward: check, then DoMask's plan with p = 1 - 1/scale.
#include "aclnnop/aclnn_dropout_backward.h"

#include <memory>

#include "ops/dropout/do_mask_plan.h"
#include "ops/dropout/dropout_backward_check.h"
#include "runtime/executor.h"

using gradkit::ops::kDropoutBackwardApi;

extern "C" aclnnStatus aclnnDropoutBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* mask,
                                                            double scale, aclTensor* out, uint64_t* workspaceSize,
                                                            aclOpExecutor** executor) {
  const aclnnStatus status = gradkit::ops::checkDropoutBackward(gradOutput, mask, scale, out, workspaceSize, executor);
  if (status != ACLNN_SUCCESS) return status;

  aclOpExecutor* planned = gradkit::newExecutor(kDropoutBackwardApi);
  if (planned == nullptr) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
  if (!gradOutput->isEmpty()) {
    const double prob = gradkit::ops::dropoutBackwardProb(scale);
    auto plan =
        std::make_shared<const gradkit::ops::DoMaskPlan>(gradkit::ops::planDoMask(*gradOutput, *mask, prob, *out));
    planned->workspaceSize = plan->staging.workspaceBytes;
    planned->body = [plan](void* workspace) { return plan->run(workspace); };
  }
  *workspaceSize = planned->workspaceSize;
  *executor = planned;
  return ACLNN_SUCCESS;
}

extern "C" aclnnStatus aclnnDropoutBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                            aclrtStream stream) {
  return gradkit::launch(kDropoutBackwardApi, workspace, workspaceSize, executor, stream);
}
