// The checks of aclnnMhcPost and aclnnMhcPostBackward, in upstream's order (docs/mhc.md, "MhcPost").
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "ops/mhc/mhc_post_args.h"

namespace gradkit::ops {

aclnnStatus checkMhcPost(const MhcPostArgs& args, const uint64_t* workspaceSize, aclOpExecutor* const* executor);

aclnnStatus checkMhcPostBackward(const MhcPostBackwardArgs& args, const uint64_t* workspaceSize,
                                 aclOpExecutor* const* executor);

}  // namespace gradkit::ops
