// The plan of one DropoutV3Grad call: made once in GetWorkspaceSize, run on the stream.
#pragma once

#include "aclnn/aclnn_base.h"
#include "opapi/op_definition.h"
#include "opapi/tensor.h"
#include "opapi/workspace.h"
#include "ops/dropout/kernels/v3_grad_kernel.h"
#include "ops/dropout/masked_dropout_staging.h"
#include "ops/dropout/v3_grad_check.h"

namespace gradkit::ops {

struct DropoutV3GradPlan {
  WorkspaceBooking workspace;
  MaskedStaging staging;
  float scale = 1.0f;  // static_cast<float>(the caller's double): no range check, NaN and Inf pass
  const kernels::V3GradKernels* kernels = nullptr;

  /** Runs the op with the caller's workspace memory (at least workspace.totalBytes()). */
  aclnnStatus run(void* memory) const;
};

/** Plans a checked call with a non-empty gradY. */
DropoutV3GradPlan planDropoutV3Grad(const DropoutV3GradArgs& args);

/** aclnnDropoutV3Grad's first phase (opapi/op_definition.h). */
extern const OpDefinition<DropoutV3GradArgs, DropoutV3GradPlan> kDropoutV3Grad;

}  // namespace gradkit::ops
