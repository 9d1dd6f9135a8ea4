// The plan of one DropoutV3Grad call: made once in GetWorkspaceSize, run on the stream.
#pragma once

#include "aclnn/aclnn_base.h"
#include "opapi/tensor.h"
#include "ops/dropout/do_mask_staging.h"

namespace gradkit::ops {

struct DropoutV3GradPlan {
  MaskedStaging staging;
  float scale = 1.0f;  // static_cast<float>(the caller's double): no range check, NaN and Inf pass
  bool scalarKernel = false;

  /** Runs the op with `workspace` (at least staging.workspaceBytes). */
  aclnnStatus run(void* workspace) const;
};

/** Plans a checked call with a non-empty gradY. */
DropoutV3GradPlan planDropoutV3Grad(const aclTensor& gradY, const aclTensor& mask, double scale,
                                    const aclTensor& gradX);

}  // namespace gradkit::ops
