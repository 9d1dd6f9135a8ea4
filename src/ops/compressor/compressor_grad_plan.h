// The plan of one aclnnCompressorGrad call: made once in GetWorkspaceSize, run on the stream.
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "opapi/workspace.h"
#include "ops/compressor/compressor_args.h"

namespace gradkit::ops {

struct CompressorGradPlan {
  WorkspaceBooking workspace;
  CompressorProblem problem;

  /** Runs the op with the caller's workspace memory (at least workspace.totalBytes()). */
  aclnnStatus run(void* memory) const;
};

/** Plans a checked call (CompressorGrad rejects empty tensors, so every checked call computes something). */
CompressorGradPlan planCompressorGrad(const CompressorGradArgs& args);

}  // namespace gradkit::ops
