// Argument validation of aclnnDropoutDoMaskGetWorkspaceSize in upstream's order (spec dropout_threshold.md 1.4.1).
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"

namespace gradkit::ops {

inline constexpr const char* kDropoutDoMaskApi = "aclnnDropoutDoMask";

/** The arguments of one call, as the caller gave them. */
struct DropoutDoMaskArgs {
  const aclTensor* self;
  const aclTensor* mask;
  double prob;
  aclTensor* out;
};

/**
 * Returns ACLNN_SUCCESS or the first failing rule's code (with its message recorded). Upstream's order: null
 * pointers; an empty self or an empty mask passes at once (nothing is computed or written, even when self is not
 * empty); out castable from self; dtypes; prob in [0, 1] (NaN is rejected too); rank, shapes, mask size
 * (at least ceil(n/128)*16 elements).
 */
aclnnStatus checkDropoutDoMask(const DropoutDoMaskArgs& args, const uint64_t* workspaceSize,
                               aclOpExecutor* const* executor);

}  // namespace gradkit::ops
