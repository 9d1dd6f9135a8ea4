// The plan of one DropoutGenMask / DropoutGenMaskV2 call: the mask (ops/dropout/dropout_mask.h) written into out's
// view. aclnnDropout runs the same plan for its maskOut.
#pragma once

#include "aclnn/aclnn_base.h"
#include "opapi/op_definition.h"
#include "opapi/staged_tensor.h"
#include "opapi/tensor.h"
#include "opapi/workspace.h"
#include "ops/dropout/dropout_mask.h"
#include "ops/dropout/gen_mask_check.h"
#include "ops/dropout/kernels/gen_mask_kernel.h"

namespace gradkit::ops {

struct GenMaskPlan {
  WorkspaceBooking workspace;
  DropoutMask mask;
  StagedTensor out;  // UINT8, mask.maskBytes elements; a non-contiguous view is written densely, then copied

  /** Runs the op with the caller's workspace memory (at least workspace.totalBytes()). */
  aclnnStatus run(void* memory) const { return runWith(memory, mask.stream); }

  /**
   * Runs the op with `maskStream` instead of the planned stream (GenMaskV2Tensor, whose seed and offset are only
   * known at run time); a fill ignores it.
   */
  aclnnStatus runWith(void* memory, const kernels::MaskStream& maskStream) const;
};

/** The plan that writes `mask` into `out` (a checked, non-empty view of mask.maskBytes UINT8 elements). */
GenMaskPlan planGenMask(const DropoutMask& mask, const aclTensor& out);

/** aclnnDropoutGenMask's and aclnnDropoutGenMaskV2's first phases (opapi/op_definition.h). V2's probDataType only
 *  steers the A2/A3 hardware generator, which gradkit does not reproduce: both produce the Ascend950 stream. */
extern const OpDefinition<DropoutGenMaskArgs, GenMaskPlan> kDropoutGenMask;
extern const OpDefinition<DropoutGenMaskV2Args, GenMaskPlan> kDropoutGenMaskV2;

}  // namespace gradkit::ops
