// Placeholder until the kernels land (never reached: the placeholder check rejects every call).
#include "ops/mhc/mhc_pre_backward_plan.h"

namespace gradkit::ops {

MhcPreBackwardPlan planMhcPreBackward(const MhcPreBackwardArgs& args) {
  MhcPreBackwardPlan plan;
  plan.dims = mhcDimsOf(*args.x, *args.phi);
  return plan;
}

aclnnStatus MhcPreBackwardPlan::run(void*) const { return ACLNN_ERR_INNER; }

}  // namespace gradkit::ops
