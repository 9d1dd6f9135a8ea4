// The plan of one aclnnDropout call, upstream's composition (ops-math aclnn_dropout.cpp) of gradkit's own pieces:
//  - mask: train and p not exactly 0 or 1 -> the GenMaskV2 Philox stream for (numel, p, seed, offset) written into
//    maskOut, without GenMask's DBL_EPSILON fills (upstream calls the stateless generator directly); otherwise
//    maskOut is not written at all;
//  - out: the DoMask plan for (input, maskOut, train ? p : 0, out), run after the mask (same executor, in order).
// Each part books its own workspace layout; this plan books both, nested, one after the other.
#pragma once

#include "aclnn/aclnn_base.h"
#include "opapi/op_definition.h"
#include "opapi/workspace.h"
#include "ops/dropout/do_mask_plan.h"
#include "ops/dropout/dropout_check.h"
#include "ops/dropout/gen_mask_plan.h"

namespace gradkit::ops {

struct DropoutPlan {
  WorkspaceBooking workspace;
  bool generateMask = false;
  GenMaskPlan mask;  // when generateMask
  WorkspaceRegion maskRegion;
  DoMaskPlan output;
  WorkspaceRegion outputRegion;

  /** Runs the op with the caller's workspace memory (at least workspace.totalBytes()). */
  aclnnStatus run(void* memory) const;
};

/** Plans a checked call with a non-empty input. */
DropoutPlan planDropout(const DropoutArgs& args);

/** aclnnDropout's first phase (opapi/op_definition.h). */
extern const OpDefinition<DropoutArgs, DropoutPlan> kDropout;

}  // namespace gradkit::ops
