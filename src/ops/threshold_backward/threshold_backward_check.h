// Argument validation of aclnnThresholdBackwardGetWorkspaceSize, as the mainline op (spec 2.5): nullness,
// dtypes (by GRADKIT_SOC profile), the threshold of INT64 calls, ranks, broadcast shapes.
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"

namespace gradkit::ops {

inline constexpr const char* kThresholdBackwardApi = "aclnnThresholdBackward";

/** The arguments of one call, as the caller gave them. */
struct ThresholdBackwardArgs {
  const aclTensor* gradOutput;
  const aclTensor* self;
  const aclScalar* threshold;
  aclTensor* out;
};

/** Returns ACLNN_SUCCESS or the first failing rule's code (with its message recorded). */
aclnnStatus checkThresholdBackward(const ThresholdBackwardArgs& args, const uint64_t* workspaceSize,
                                   aclOpExecutor* const* executor);

}  // namespace gradkit::ops
