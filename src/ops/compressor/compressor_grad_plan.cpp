// SKELETON (replaced by the real plan and kernels).
#include "ops/compressor/compressor_grad_plan.h"

namespace gradkit::ops {

aclnnStatus CompressorGradPlan::run(void*) const { return ACLNN_ERR_INNER; }

CompressorGradPlan planCompressorGrad(const CompressorGradArgs&) { return {}; }

}  // namespace gradkit::ops
