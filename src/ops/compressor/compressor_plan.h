// The plan of one aclnnCompressor call: made once in GetWorkspaceSize, run on the stream.
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "opapi/workspace.h"
#include "ops/compressor/compressor_args.h"

namespace gradkit::ops {

struct CompressorPlan {
  WorkspaceBooking workspace;
  CompressorProblem problem;

  /** Runs the op with the caller's workspace memory (at least workspace.totalBytes()). */
  aclnnStatus run(void* memory) const;
};

/** True when a checked call has nothing to compute (an empty x: B, S or T = 0). */
bool compressorHasNoWork(const CompressorArgs& args);

/** Plans a checked call that computes something. */
CompressorPlan planCompressor(const CompressorArgs& args);

}  // namespace gradkit::ops
