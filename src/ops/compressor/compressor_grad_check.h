// Argument validation of aclnnCompressorGradGetWorkspaceSize: spec compressor.md 5.4 in upstream's order, the value
// rules upstream leaves unchecked (spec 9 #5), and gradkit's memory rules (overlaps, allocation fit).
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "ops/compressor/compressor_args.h"

namespace gradkit::ops {

/** ACLNN_SUCCESS or the first failing rule's code, with its message recorded. */
aclnnStatus checkCompressorGrad(const CompressorGradArgs& args, const uint64_t* workspaceSize,
                                aclOpExecutor* const* executor);

}  // namespace gradkit::ops
