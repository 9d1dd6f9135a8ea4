// Argument validation of aclnnThresholdBackwardGetWorkspaceSize, in upstream's order (spec 2.3).
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"

namespace gradkit::ops {

inline constexpr const char* kThresholdBackwardApi = "aclnnThresholdBackward";

/** Returns ACLNN_SUCCESS or the first failing rule's code (with its message recorded). */
aclnnStatus checkThresholdBackward(const aclTensor* gradOutput, const aclTensor* self, const aclScalar* threshold,
                                   const aclTensor* out, const uint64_t* workspaceSize, aclOpExecutor* const* executor);

}  // namespace gradkit::ops
