// The plan of aclnnSparseFlashMla: made once in GetWorkspaceSize (sizes, lengths and block tables read, the tile path
// chosen, the schedule and scratch booked), run on the stream.
#pragma once

#include "aclnn/aclnn_base.h"
#include "opapi/staged_tensor.h"
#include "opapi/workspace.h"
#include "ops/sparse_attention/kernels/smla_kernel.h"
#include "ops/sparse_attention/smla_args.h"

namespace gradkit::ops {

struct SmlaPlan {
  WorkspaceBooking workspace;
  StagedTensor q, oriKv, cmpKv, oriIndices, cmpIndices, oriLengths, cmpLengths, sinks, out, lse;
  bool returnsLse = false;
  int64_t oriTableOffset = 0, cmpTableOffset = 0;  // where each block table starts in problem.blockTables
  kernels::SmlaProblem problem;                    // the run fills in the buffers
  kernels::SmlaSchedule schedule;
  WorkspaceRegion scratch;

  aclnnStatus run(void* memory) const;
};

/** Plans a checked call (smlaWithEmptyOptionalsAbsent applied). */
SmlaPlan planSparseFlashMla(const SmlaArgs& args);

}  // namespace gradkit::ops
