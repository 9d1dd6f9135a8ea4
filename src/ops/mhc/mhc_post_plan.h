// The plans of aclnnMhcPost and aclnnMhcPostBackward: made once in GetWorkspaceSize, run on the stream.
#pragma once

#include "aclnn/aclnn_base.h"
#include "opapi/staged_tensor.h"
#include "opapi/workspace.h"
#include "ops/mhc/kernels/mhc_post_kernel.h"
#include "ops/mhc/mhc_post_args.h"

namespace gradkit::ops {

/** Every tensor as the kernels see it: dense views in place, any other view staged through the workspace. */
struct MhcPostPlan {
  WorkspaceBooking workspace;
  StagedTensor x, hRes, hOut, hPost, out;
  bool hasHRes = false;
  kernels::MhcPostProblem problem;  // sizes and dtype; the run fills in the buffers
  const kernels::MhcPostKernels* kernels = nullptr;

  aclnnStatus run(void* memory) const;
};

struct MhcPostBackwardPlan {
  WorkspaceBooking workspace;
  StagedTensor gradOutput, x, hRes, hOut, hPost, gradX, gradHRes, gradHOut, gradHPost;
  bool hasHRes = false;
  kernels::MhcPostBackwardProblem problem;
  const kernels::MhcPostKernels* kernels = nullptr;

  aclnnStatus run(void* memory) const;
};

/** Plans a checked call (mHC rejects empty tensors, so every checked call computes something). */
MhcPostPlan planMhcPost(const MhcPostArgs& args);
MhcPostBackwardPlan planMhcPostBackward(const MhcPostBackwardArgs& args);

}  // namespace gradkit::ops
