// The plans of the flash attention forward and backward: made once in GetWorkspaceSize from checked arguments
// (fa_problem.h turns them into the kernels' FaProblem), run on the stream.
#pragma once

#include "aclnn/aclnn_base.h"
#include "opapi/staged_tensor.h"
#include "opapi/workspace.h"
#include "ops/flash_attention/fa_args.h"
#include "ops/flash_attention/kernels/fa_kernel.h"

namespace gradkit::ops {

/** True for a checked forward call that computes nothing (B, N1 or S1 zero: spec 2.15). */
bool flashAttentionNothingToCompute(const FaArgs& args);

struct FaPlan {
  WorkspaceBooking workspace;
  kernels::FaProblem problem;
  kernels::FaForwardIo io;              // pointers into the caller's tensors (statistics: see below)
  StagedTensor softmaxMax, softmaxSum;  // staged when the caller's view is not dense
  WorkspaceRegion dropBits, scratch;    // a dense copy of a strided dropMask; the kernels' scratch
  int threads = 1;

  aclnnStatus run(void* memory) const;
};

FaPlan planFlashAttention(const FaArgs& args);

struct FagPlan {
  WorkspaceBooking workspace;
  kernels::FaProblem problem;
  kernels::FaBackwardIo io;
  StagedTensor softmaxMax, softmaxSum;
  WorkspaceRegion dropBits, scratch;
  int threads = 1;

  aclnnStatus run(void* memory) const;
};

FagPlan planFlashAttentionGrad(const FagArgs& args);

}  // namespace gradkit::ops
