// Placeholder until the kernels land (never reached: the placeholder check rejects every call).
#include "ops/mhc/mhc_pre_plan.h"

namespace gradkit::ops {

MhcPrePlan planMhcPre(const MhcPreArgs& args) {
  MhcPrePlan plan;
  plan.dims = mhcDimsOf(*args.x, *args.phi);
  return plan;
}

aclnnStatus MhcPrePlan::run(void*) const { return ACLNN_ERR_INNER; }

}  // namespace gradkit::ops
