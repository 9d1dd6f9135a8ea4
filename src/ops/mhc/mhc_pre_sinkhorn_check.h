// Argument validation of aclnnMhcPreSinkhorn[Backward]GetWorkspaceSize: upstream's order of rules (op-api, then the
// tiling's), the emulated SoC's limits and gradkit's memory rules (mhc_pre_sinkhorn_check.cpp).
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "ops/mhc/mhc_pre_sinkhorn_args.h"

namespace gradkit::ops {

/** ACLNN_SUCCESS or the first failing rule's code, with its message recorded. */
aclnnStatus checkMhcPreSinkhorn(const MhcPreSinkhornArgs& args, const uint64_t* workspaceSize,
                                aclOpExecutor* const* executor);

/** The same for the backward. */
aclnnStatus checkMhcPreSinkhornBackward(const MhcPreSinkhornBackwardArgs& args, const uint64_t* workspaceSize,
                                        aclOpExecutor* const* executor);

/** True when a forward call has no work: x, hin, hPost or hRes is empty (upstream returns success). */
bool mhcPreSinkhornIsEmpty(const MhcPreSinkhornArgs& args);

/** The sizes of a checked, non-empty forward call. */
MhcPreSinkhornDims mhcPreSinkhornDimsOf(const MhcPreSinkhornArgs& args);

/** The sizes of a checked, non-empty backward call (iters from sumOut's first dim). */
MhcPreSinkhornDims mhcPreSinkhornBackwardDimsOf(const MhcPreSinkhornBackwardArgs& args);

}  // namespace gradkit::ops
