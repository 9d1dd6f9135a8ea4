// Argument validation of aclnnCompressorGetWorkspaceSize: spec compressor.md 3.1 in upstream's order, the value
// rules upstream leaves unchecked (DECISIONS.md "Compressor"), and gradkit's memory rules (overlaps, allocation fit).
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "ops/compressor/compressor_args.h"

namespace gradkit::ops {

/** ACLNN_SUCCESS or the first failing rule's code, with its message recorded. */
aclnnStatus checkCompressor(const CompressorArgs& args, const uint64_t* workspaceSize, aclOpExecutor* const* executor);

}  // namespace gradkit::ops
