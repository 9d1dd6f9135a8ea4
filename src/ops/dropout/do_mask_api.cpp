// The two aclnn entry points of DropoutDoMask: check -> plan -> executor, then launch.
#include "aclnnop/aclnn_dropout_do_mask.h"

#include <memory>

#include "ops/dropout/do_mask_check.h"
#include "ops/dropout/do_mask_plan.h"
#include "runtime/executor.h"

using gradkit::ops::kDropoutDoMaskApi;

extern "C" aclnnStatus aclnnDropoutDoMaskGetWorkspaceSize(const aclTensor* self, const aclTensor* mask, double prob,
                                                          aclTensor* out, uint64_t* workspaceSize,
                                                          aclOpExecutor** executor) {
  const aclnnStatus status = gradkit::ops::checkDropoutDoMask(self, mask, prob, out, workspaceSize, executor);
  if (status != ACLNN_SUCCESS) return status;

  aclOpExecutor* planned = gradkit::newExecutor(kDropoutDoMaskApi);
  if (planned == nullptr) return ACLNN_ERR_INNER_CREATE_EXECUTOR;
  // An empty self, or an empty mask (upstream's quirk), computes and writes nothing.
  if (!self->isEmpty() && !mask->isEmpty()) {
    auto plan = std::make_shared<const gradkit::ops::DoMaskPlan>(gradkit::ops::planDoMask(*self, *mask, prob, *out));
    planned->workspaceSize = plan->staging.workspaceBytes;
    planned->body = [plan](void* workspace) { return plan->run(workspace); };
  }
  *workspaceSize = planned->workspaceSize;
  *executor = planned;
  return ACLNN_SUCCESS;
}

extern "C" aclnnStatus aclnnDropoutDoMask(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                          aclrtStream stream) {
  return gradkit::launch(kDropoutDoMaskApi, workspace, workspaceSize, executor, stream);
}
