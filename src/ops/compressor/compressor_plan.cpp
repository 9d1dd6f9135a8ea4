// SKELETON (replaced by the real plan and kernels).
#include "ops/compressor/compressor_plan.h"

namespace gradkit::ops {

aclnnStatus CompressorPlan::run(void*) const { return ACLNN_ERR_INNER; }

CompressorPlan planCompressor(const CompressorArgs&) { return {}; }

}  // namespace gradkit::ops

namespace gradkit::ops {
bool compressorHasNoWork(const CompressorArgs&) { return false; }
}  // namespace gradkit::ops
