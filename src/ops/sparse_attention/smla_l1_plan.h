// The plan of aclnnSparseFlashMlaSoftmaxL1Norm: made once in GetWorkspaceSize (the compressed-only sparse MLA problem
// with its sizes, lengths and tile path, the lse and output staging, the schedule and scratch), run on the stream.
#pragma once

#include "aclnn/aclnn_base.h"
#include "opapi/staged_tensor.h"
#include "opapi/workspace.h"
#include "ops/sparse_attention/kernels/smla_l1_kernel.h"
#include "ops/sparse_attention/smla_l1_args.h"
#include "ops/sparse_attention/smla_plan.h"

namespace gradkit::ops {

struct SmlaL1Plan {
  WorkspaceBooking workspace;
  StagedTensor q, k, indices, lengths, lse, out;
  int64_t tableOffset = 0;       // smlaKvSourceOf's out-parameter (k is never paged)
  int64_t width = 0;             // columns of an output row
  kernels::SmlaProblem problem;  // the run fills in the buffers
  kernels::SmlaSchedule schedule;
  WorkspaceRegion scratch;

  aclnnStatus run(void* memory) const;
};

/** Plans a checked call (smlaL1WithEmptyOptionalsAbsent applied). */
SmlaL1Plan planSparseFlashMlaSoftmaxL1Norm(const SmlaL1Args& args);

}  // namespace gradkit::ops
