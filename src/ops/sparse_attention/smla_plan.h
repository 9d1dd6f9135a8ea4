// The plan of aclnnSparseFlashMla: made once in GetWorkspaceSize (sizes, lengths and block tables read, the tile path
// chosen, the schedule and scratch booked), run on the stream.
#pragma once

#include "aclnn/aclnn_base.h"
#include "opapi/staged_tensor.h"
#include "opapi/workspace.h"
#include "ops/sparse_attention/kernels/smla_kernel.h"
#include "ops/sparse_attention/smla_args.h"
#include "ops/sparse_attention/smla_sizes.h"

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

/** The problem's sizes, batches, modes and tile path (the KV sources and index lists are the plan's to add). */
kernels::SmlaProblem smlaProblemOf(const SmlaArgs& args, const SmlaShape& shape);

/**
 * A KV tensor as the kernels address it: in place when its rows are contiguous (any row, batch or block strides),
 * else staged dense. A paged tensor's block table values are appended to `tables` at *tableOffset.
 */
kernels::SmlaKvSource smlaKvSourceOf(const aclTensor& kv, SmlaLayout layout, const aclTensor* table,
                                     std::vector<int64_t>& tables, int64_t* tableOffset, StagedTensor& staged,
                                     const char* name, WorkspaceBooking& booking);

/** An index list (and its top-k lengths) as the kernels read it, staged dense unless it is. Absent: k = 0. */
kernels::SmlaIndexList smlaIndexListOf(const aclTensor* indices, const aclTensor* lengths, StagedTensor& stagedIndices,
                                       StagedTensor& stagedLengths, const char* name, const char* lengthsName,
                                       WorkspaceBooking& booking);

/** Plans a checked call (smlaWithEmptyOptionalsAbsent applied). */
SmlaPlan planSparseFlashMla(const SmlaArgs& args);

}  // namespace gradkit::ops
