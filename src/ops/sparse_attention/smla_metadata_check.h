// The checks of the three sparse attention metadata operators, in upstream's order (upstream's *_metadata_check.h and
// the AI CPU kernels' ParamsCheck; docs/sparse_attention.md, "Checks, in upstream's order").
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
