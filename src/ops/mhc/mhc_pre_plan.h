// The plan of one aclnnMhcPre[V2] call: made once in GetWorkspaceSize, run on the stream.
#pragma once

#include "aclnn/aclnn_base.h"
#include "opapi/workspace.h"
#include "ops/mhc/mhc_args.h"

namespace gradkit::ops {

struct MhcPrePlan {
  WorkspaceBooking workspace;
  MhcDims dims;

  /** Runs the op with the caller's workspace memory (at least workspace.totalBytes()). */
  aclnnStatus run(void* memory) const;
};

/** Plans a checked call (mHC rejects empty tensors, so every checked call computes something). */
MhcPrePlan planMhcPre(const MhcPreArgs& args);

}  // namespace gradkit::ops
