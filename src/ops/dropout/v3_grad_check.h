// Argument validation of aclnnDropoutV3GradGetWorkspaceSize, in upstream's order (spec dropout_threshold.md 1.5).
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"

namespace gradkit::ops {

inline constexpr const char* kDropoutV3GradApi = "aclnnDropoutV3Grad";

/** The arguments of one call, as the caller gave them. */
struct DropoutV3GradArgs {
  const aclTensor* gradY;
  const aclTensor* mask;
  double scale;
  aclTensor* gradX;
};

/**
 * Returns ACLNN_SUCCESS or the first failing rule's code (with its message recorded): the profile (Ascend950 only,
 * and not disabled by GRADKIT_DISABLE_OPS) before any null check, then null pointers, dtypes, rank, shapes and the
 * mask size (exactly ceil(n/128)*16 elements). An empty gradY passes.
 */
aclnnStatus checkDropoutV3Grad(const DropoutV3GradArgs& args, const uint64_t* workspaceSize,
                               aclOpExecutor* const* executor);

}  // namespace gradkit::ops
