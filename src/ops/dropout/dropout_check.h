// Argument validation of aclnnDropoutGetWorkspaceSize in upstream's order (ops-math
// random/dsa_gen_bit_mask/op_host/op_api/aclnn_dropout.cpp, CheckParams).
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"

namespace gradkit::ops {

inline constexpr const char* kDropoutApi = "aclnnDropout";

/** The arguments of one call, as the caller gave them. */
struct DropoutArgs {
  const aclTensor* input;
  double p;
  bool train;
  int64_t seed;
  int64_t offset;
  aclTensor* out;
  aclTensor* maskOut;
};

/**
 * Returns ACLNN_SUCCESS or the first failing rule's code (with its message recorded): input / out / maskOut /
 * workspaceSize / executor null (161001); then 161002 for out not castable from input (gradkit: out FLOAT, FLOAT16
 * or BFLOAT16), input dtype outside {FLOAT, FLOAT16, BFLOAT16}, maskOut not UINT8, p outside [0, 1] or NaN,
 * rank(input) > 8, shape(out) != shape(input), numel(maskOut) != ceil(n/128)*16.
 */
aclnnStatus checkDropout(const DropoutArgs& args, const uint64_t* workspaceSize, aclOpExecutor* const* executor);

}  // namespace gradkit::ops
