// The plans of aclnnMhcSinkhorn and aclnnMhcSinkhornBackward: made once in GetWorkspaceSize, run on the stream.
#pragma once

#include "aclnn/aclnn_base.h"
#include "opapi/staged_tensor.h"
#include "opapi/workspace.h"
#include "ops/mhc/kernels/mhc_sinkhorn_kernel.h"
#include "ops/mhc/mhc_sinkhorn_args.h"

namespace gradkit::ops {

/** Every tensor as the kernels see it: dense views in place, any other view staged through the workspace. */
struct MhcSinkhornPlan {
  WorkspaceBooking workspace;
  StagedTensor x, output, normOut, sumOut;
  bool saves = false;
  kernels::SinkhornProblem problem;  // sizes, eps and layout; the run fills in the buffers
  const kernels::SinkhornKernels* kernels = nullptr;

  aclnnStatus run(void* memory) const;
};

struct MhcSinkhornBackwardPlan {
  WorkspaceBooking workspace;
  StagedTensor gradOutput, normOut, sumOut, out;
  kernels::SinkhornBackwardProblem problem;
  const kernels::SinkhornKernels* kernels = nullptr;

  aclnnStatus run(void* memory) const;
};

/** Plans a checked forward call (x is never empty). */
MhcSinkhornPlan planMhcSinkhorn(const MhcSinkhornArgs& args);
/** Plans a checked backward call with at least one token. */
MhcSinkhornBackwardPlan planMhcSinkhornBackward(const MhcSinkhornBackwardArgs& args);

}  // namespace gradkit::ops
