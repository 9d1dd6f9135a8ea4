// The checks of the flash attention backward (every aclnnFlashAttentionScoreGrad* / UnpaddingScoreGrad* version):
// spec fag.md 2.4 and 2.15 in upstream's order, each failure a status and a message naming the argument, the
// expected and the given value. Pure: reads the arguments (and host int arrays), allocates no tensor, runs no kernel.
#pragma once

#include "aclnn/aclnn_base.h"
#include "ops/flash_attention/fa_args.h"

namespace gradkit::ops {

aclnnStatus checkFlashAttentionGrad(const FagArgs& args, const uint64_t* workspaceSize, aclOpExecutor* const* executor);

/** True for a checked call whose dq, dk, dv are all empty and whose dpse is null or empty (spec 2.4). */
bool flashAttentionGradNothingToCompute(const FagArgs& args);

}  // namespace gradkit::ops
