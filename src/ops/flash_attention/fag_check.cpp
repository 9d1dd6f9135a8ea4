// Placeholder: the checks arrive with the API work (issue 12).
#include "ops/flash_attention/fag_check.h"

namespace gradkit::ops {

aclnnStatus checkFlashAttentionGrad(const FagArgs&, const uint64_t*, aclOpExecutor* const*) { return ACLNN_SUCCESS; }

bool flashAttentionGradNothingToCompute(const FagArgs&) { return false; }

}  // namespace gradkit::ops
