// Placeholder plans (issue 12): the problem builder replaces them.
#include "ops/flash_attention/fa_plan.h"

namespace gradkit::ops {

bool flashAttentionNothingToCompute(const FaArgs&) { return true; }

aclnnStatus FaPlan::run(void*) const { return ACLNN_SUCCESS; }

FaPlan planFlashAttention(const FaArgs&) { return FaPlan{}; }

aclnnStatus FagPlan::run(void*) const { return ACLNN_SUCCESS; }

FagPlan planFlashAttentionGrad(const FagArgs&) { return FagPlan{}; }

}  // namespace gradkit::ops
