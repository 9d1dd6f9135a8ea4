// The plans of the flash attention forward and backward: made once in GetWorkspaceSize from checked arguments
// (fa_problem.h turns them into the kernels' FaProblem), run on the stream.
#pragma once

#include "aclnn/aclnn_base.h"
#include "opapi/staged_tensor.h"
#include "opapi/workspace.h"
#include "ops/flash_attention/fa_args.h"
#include "ops/flash_attention/kernels/fa_kernel.h"

namespace gradkit::ops {

/** True for a checked forward call that computes nothing: B, N1 or S1 is zero (spec 2.15). */
bool flashAttentionNothingToCompute(const FaArgs& args);

/** What both plans keep besides their tensors. */
struct FaPlanCommon {
  WorkspaceBooking workspace;
  kernels::FaProblem problem;                     // the packed dropout bits come with each run's io
  StagedTensor softmaxMax, softmaxSum, dropMask;  // dense views: staged when the caller's is not
  bool packedDropout = false;
  kernels::FaSchedule schedule;  // kernel table, workers, tasks: the run decides nothing
  WorkspaceRegion scratch;       // the kernels' scratch
};

struct FaPlan : FaPlanCommon {
  kernels::FaForwardIo io;  // q, k, v, out views into the caller's tensors

  aclnnStatus run(void* memory) const;
};

FaPlan planFlashAttention(const FaArgs& args);

struct FagPlan : FaPlanCommon {
  kernels::FaBackwardIo io;
  bool fp8 = false;                // FLOAT8 query / key / value / dy (GradV4): faBackwardFp8
  kernels::FaFp8Scales fp8Scales;  // their de-quant scales (fp8 only)

  aclnnStatus run(void* memory) const;
};

FagPlan planFlashAttentionGrad(const FagArgs& args);

}  // namespace gradkit::ops
