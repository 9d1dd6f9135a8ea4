// Argument validation of aclnnDropoutV3GetWorkspaceSize (spec dropout_threshold.md 1.3). Rules that upstream only
// enforces at tiling time (offset % 4) are checked here too (DECISIONS.md, "check early").
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"

namespace gradkit::ops {

inline constexpr const char* kDropoutV3Api = "aclnnDropoutV3";

/** The arguments of one call, as the caller gave them. */
struct DropoutV3Args {
  const aclTensor* input;
  const aclTensor* optionalNoiseShape;
  double p;
  int64_t seed;
  int64_t offset;
  aclTensor* out;
  aclTensor* maskOut;
};

/**
 * Returns ACLNN_SUCCESS or the first failing rule's code (with its message recorded), in this order:
 * input / out / maskOut / workspaceSize / executor null (161001); then 161002 for optionalNoiseShape not null,
 * input dtype outside {FLOAT, FLOAT16, BFLOAT16}, out dtype != input dtype, maskOut not UINT8, p outside [0, 1]
 * or NaN, offset not a multiple of 4, rank > 8, shape(out) != shape(input), numel(maskOut) != ceil(n/128)*16.
 */
aclnnStatus checkDropoutV3(const DropoutV3Args& args, const uint64_t* workspaceSize, aclOpExecutor* const* executor);

}  // namespace gradkit::ops
