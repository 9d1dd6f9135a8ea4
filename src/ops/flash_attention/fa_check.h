// The checks of the flash attention forward (every aclnnFlashAttentionScore* / VarLenScore* version): spec fag.md
// 2.4 and 2.15 in upstream's order, each failure a status and a message naming the argument, the expected and the
// given value. Pure: reads the arguments (and host int arrays), allocates no tensor, runs no kernel.
#pragma once

#include "aclnn/aclnn_base.h"
#include "ops/flash_attention/fa_args.h"

namespace gradkit::ops {

aclnnStatus checkFlashAttention(const FaArgs& args, const uint64_t* workspaceSize, aclOpExecutor* const* executor);

}  // namespace gradkit::ops
