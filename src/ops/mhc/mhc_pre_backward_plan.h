// The plan of one aclnnMhcPreBackward[V2] call: made once in GetWorkspaceSize, run on the stream.
#pragma once

#include "aclnn/aclnn_base.h"
#include "opapi/workspace.h"
#include "ops/mhc/mhc_args.h"

namespace gradkit::ops {

struct MhcPreBackwardPlan {
  WorkspaceBooking workspace;
  MhcDims dims;

  /** Runs the op with the caller's workspace memory (at least workspace.totalBytes()). */
  aclnnStatus run(void* memory) const;
};

/** Plans a checked call (mHC rejects empty tensors, so every checked call computes something). */
MhcPreBackwardPlan planMhcPreBackward(const MhcPreBackwardArgs& args);

}  // namespace gradkit::ops
