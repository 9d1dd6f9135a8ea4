// Argument validation of aclnnMhcPre[V2]GetWorkspaceSize: spec mhc.md 2.8 in upstream's order, the platform
// rules of the emulated SoC (DECISIONS.md), and gradkit's own rules (overlaps, allocation fit).
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "ops/mhc/mhc_args.h"

namespace gradkit::ops {

/** ACLNN_SUCCESS or the first failing rule's code, with its message recorded. */
aclnnStatus checkMhcPre(const MhcPreArgs& args, const uint64_t* workspaceSize, aclOpExecutor* const* executor);

}  // namespace gradkit::ops
