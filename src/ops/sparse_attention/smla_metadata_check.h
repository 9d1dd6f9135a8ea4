// The checks of the three sparse attention metadata operators, in upstream's order (spec sparse_flash_mla.md 6.3-6.4,
// sparse_flash_mla_grad.md 7.3 and 10.2; upstream's *_metadata_check.h and the AI CPU kernels' ParamsCheck).
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "ops/sparse_attention/smla_metadata_args.h"

namespace gradkit::ops {

/** aclnnSparseFlashMlaMetadata or aclnnSparseFlashMlaGradMetadata (args.op), every rule in order. */
aclnnStatus checkSmlaMetadata(const SmlaMetaArgs& args, const uint64_t* workspaceSize, aclOpExecutor* const* executor);

/** aclnnSparseFlashMlaSoftmaxL1NormMetadata, every rule in order. */
aclnnStatus checkSmlaL1NormMetadata(const SmlaL1MetaArgs& args, const uint64_t* workspaceSize,
                                    aclOpExecutor* const* executor);

}  // namespace gradkit::ops
