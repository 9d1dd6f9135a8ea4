// Argument validation of aclnnDropoutBackwardGetWorkspaceSize (spec dropout_threshold.md 1.4.2).
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"

namespace gradkit::ops {

inline constexpr const char* kDropoutBackwardApi = "aclnnDropoutBackward";

/** The arguments of one call, as the caller gave them. */
struct DropoutBackwardArgs {
  const aclTensor* gradOutput;
  const aclTensor* mask;
  double scale;
  aclTensor* out;
};

/** The drop probability the legacy backward hands to DoMask: (|scale| <= DBL_EPSILON) ? 1 : 1 - 1/scale in double. */
double dropoutBackwardProb(double scale);

/**
 * Returns ACLNN_SUCCESS or the first failing rule's code (with its message recorded): null pointers; an empty
 * gradOutput passes at once; dtypes as DoMask; p = dropoutBackwardProb(scale) in [0, 1], i.e. scale 0 or >= 1
 * (gradkit also rejects a NaN scale, which upstream lets through); rank, shapes, mask size (exactly
 * ceil(n/128)*16 elements).
 */
aclnnStatus checkDropoutBackward(const DropoutBackwardArgs& args, const uint64_t* workspaceSize,
                                 aclOpExecutor* const* executor);

}  // namespace gradkit::ops
