// The plan of one DoMask call (also what aclnnDropoutBackward runs): the legacy arithmetic decided once in
// GetWorkspaceSize (spec dropout_threshold.md 1.4.1), run on the stream.
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "opapi/op_definition.h"
#include "opapi/tensor.h"
#include "opapi/workspace.h"
#include "ops/dropout/do_mask_check.h"
#include "ops/dropout/dropout_backward_check.h"
#include "ops/dropout/kernels/do_mask_kernel.h"
#include "ops/dropout/masked_dropout_staging.h"

namespace gradkit::ops {

/** What a DoMask run computes. */
enum class DoMaskMode {
  Zeros,  // prob == 1 (within DBL_EPSILON), or the keep probability is 0 in self's dtype: out = +0
  Copy,   // prob == 0 (within DBL_EPSILON), or the keep probability is 1 in self's dtype: out = self, mask ignored
  Apply,  // out = bit ? RN_out(RN32(float(self) * reciprocal)) : +0
};

struct DoMaskPlan {
  WorkspaceBooking workspace;
  MaskedStaging staging;
  DoMaskMode mode = DoMaskMode::Apply;
  float reciprocal = 1.0f;  // RN32(1 / keep), for Apply
  const kernels::DoMaskKernels* kernels = nullptr;

  /** Runs the op with the caller's workspace memory (at least workspace.totalBytes()). */
  aclnnStatus run(void* memory) const;
};

/**
 * The keep probability as the kernel sees it: float(1 - prob) (the difference in double, rounded to fp32), stored
 * in `dtype` (FLOAT, FLOAT16 or BF16, round to nearest even) and widened back to float.
 */
float doMaskKeep(double prob, aclDataType dtype);

/** Plans a checked call whose self and mask are not empty; `prob` lies in [0, 1]. */
DoMaskPlan planDoMask(const DropoutDoMaskArgs& args);

/** aclnnDropoutDoMask's first phase (opapi/op_definition.h). */
extern const OpDefinition<DropoutDoMaskArgs, DoMaskPlan> kDropoutDoMask;

/** aclnnDropoutBackward's first phase: its check, then DoMask's plan with p = dropoutBackwardProb(scale). */
extern const OpDefinition<DropoutBackwardArgs, DoMaskPlan> kDropoutBackward;

}  // namespace gradkit::ops
