// The checks of aclnnMhcSinkhorn and aclnnMhcSinkhornBackward, in upstream's order (docs/mhc_sinkhorn.md).
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "ops/mhc/mhc_sinkhorn_args.h"

namespace gradkit::ops {

aclnnStatus checkMhcSinkhorn(const MhcSinkhornArgs& args, const uint64_t* workspaceSize,
                             aclOpExecutor* const* executor);

aclnnStatus checkMhcSinkhornBackward(const MhcSinkhornBackwardArgs& args, const uint64_t* workspaceSize,
                                     aclOpExecutor* const* executor);

}  // namespace gradkit::ops
