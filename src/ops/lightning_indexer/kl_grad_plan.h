// The plan of aclnnSparseLightningIndexerKLLossGrad: made once in GetWorkspaceSize (batches from the int32 tensors,
// dk tasks and partials, products, worker scratch), run on the stream. The run allocates nothing: every buffer beyond
// the outputs is a booked workspace region.
#pragma once

#include "aclnn/aclnn_base.h"
#include "opapi/staged_tensor.h"
#include "opapi/workspace.h"
#include "ops/lightning_indexer/kernels/kl_grad_kernel.h"
#include "ops/lightning_indexer/kl_grad_args.h"

namespace gradkit::ops {

struct KlGradPlan {
  WorkspaceBooking workspace;
  StagedTensor q, k, w, indices, target, dq, dk, dw, softmaxOut;  // dense views in place, any other staged
  WorkspaceRegion partials;                                       // the dk partials (floats)
  WorkspaceRegion scratch;                                        // schedule.workers * schedule.slotBytes
  kernels::KlGradProblem problem;
  kernels::KlGradSchedule schedule;

  aclnnStatus run(void* memory) const;
};

/** Plans a checked call (every tensor non-empty). */
KlGradPlan planKlGrad(const KlGradArgs& args);

}  // namespace gradkit::ops
