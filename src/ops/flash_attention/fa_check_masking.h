// The flash attention rules of masking and position bias (spec fag.md 2.7-2.9): sparse modes and their masks, the
// token band, prefix widths, the pse tensor and its ALiBi forms, start indices. Part of the rule book whose other half
// is fa_check_common.h; each returns ACLNN_SUCCESS or records the standard message and returns the code.
#pragma once

#include "aclnn/aclnn_base.h"
#include "ops/flash_attention/fa_check_common.h"

namespace gradkit::ops {

/** sparseMode, innerPrecise, the mask (dtype, shape per mode), prefix, tokens (spec 2.7, 2.8, 2.10). */
aclnnStatus checkFaMaskAndTokens(const FaCall& v, const FaSizes& s);

/** pseType and the pse tensor (spec 2.9), qStartIdx / kvStartIdx. */
aclnnStatus checkFaPse(const FaCall& v, const FaSizes& s);

}  // namespace gradkit::ops
