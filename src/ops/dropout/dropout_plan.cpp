#include "ops/dropout/dropout_plan.h"

#include "core/kernel_select.h"

namespace gradkit::ops {

DropoutPlan planDropout(const aclTensor& input, double p, bool train, int64_t seed, int64_t offset,
                        const aclTensor& out, const aclTensor& maskOut) {
  DropoutPlan plan;
  plan.generateMask = train && p != 0.0 && p != 1.0;  // upstream compares exactly here
  if (plan.generateMask) {
    plan.mask = planDropoutGenMask(input.numel(), p, seed, offset, maskOut, /*epsilonFills=*/false);
    plan.outputAt = alignWorkspace(plan.mask.workspaceBytes);
  }
  // Eval is DoMask's copy (p = 0: the mask is not read); p == 1 its zeros.
  plan.output = planDoMask(input, maskOut, train ? p : 0.0, out);
  plan.workspaceBytes = plan.outputAt + plan.output.staging.workspaceBytes;
  return plan;
}

aclnnStatus DropoutPlan::run(void* workspace) const {
  auto* scratch = static_cast<unsigned char*>(workspace);
  if (generateMask) {
    const aclnnStatus status = mask.run(scratch);
    if (status != ACLNN_SUCCESS) return status;
  }
  return output.run(scratch == nullptr ? nullptr : scratch + outputAt);
}

}  // namespace gradkit::ops
