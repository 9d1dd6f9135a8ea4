// The plan of aclnnSparseFlashMlaGrad: made once in GetWorkspaceSize (the forward's problem and key rules, the
// backward's chunk schedule and accumulators booked), run on the stream.
#pragma once

#include "aclnn/aclnn_base.h"
#include "opapi/staged_tensor.h"
#include "opapi/workspace.h"
#include "ops/sparse_attention/kernels/smla_grad_kernel.h"
#include "ops/sparse_attention/smla_grad_args.h"

namespace gradkit::ops {

struct SmlaGradPlan {
  WorkspaceBooking workspace;
  StagedTensor query, dOut, out, lse, oriKv, cmpKv, oriIndices, cmpIndices, oriLengths, cmpLengths, sinks;
  StagedTensor dQuery, dOriKv, dCmpKv, dSinks, oriL1, cmpL1;
  bool hasSinks = false, writesOri = false, writesCmp = false, writesSinks = false, writesOriL1 = false,
       writesCmpL1 = false;
  kernels::SmlaProblem problem;  // the run fills in the buffers
  kernels::SmlaGradSchedule schedule;
  WorkspaceRegion scratch;

  aclnnStatus run(void* memory) const;
};

/** Plans a checked call (smlaGradWithEmptyOptionalsAbsent applied). */
SmlaGradPlan planSparseFlashMlaGrad(const SmlaGradArgs& args);

}  // namespace gradkit::ops
