// The checks of aclnnBlockAttentionResiduals and aclnnBlockAttentionResidualsGrad, in upstream's order
// (block_residuals_check.cpp).
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "ops/mhc/block_residuals_args.h"

namespace gradkit::ops {

/** Forward: blockRes' N in [1, kBlockResidualsMaxBlocks]; gradient: N in [0, kBlockResidualsGradMaxBlocks]. */
inline constexpr int64_t kBlockResidualsMaxBlocks = 100;
inline constexpr int64_t kBlockResidualsGradMaxBlocks = 128;

/** ACLNN_SUCCESS or the first failing rule's code, with its message recorded. */
aclnnStatus checkBlockResiduals(const BlockResidualsArgs& args, const uint64_t* workspaceSize,
                                aclOpExecutor* const* executor);

/** The same for the gradient. */
aclnnStatus checkBlockResidualsGrad(const BlockResidualsGradArgs& args, const uint64_t* workspaceSize,
                                    aclOpExecutor* const* executor);

}  // namespace gradkit::ops
