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

/** The staged inputs of a sparse MLA problem (q, the KV tensors, the index lists and their lengths). */
struct SmlaInputs {
  StagedTensor q, oriKv, cmpKv, oriIndices, cmpIndices, oriLengths, cmpLengths;
  int64_t oriTableOffset = 0, cmpTableOffset = 0;  // where each block table starts in problem.blockTables

  /** Points p's sources and lists at the run's buffers; returns q's dense elements. */
  const void* bind(void* memory, kernels::SmlaProblem& p) const;
};

/**
 * The kernels' problem of a checked call (sizes, batches, the tokens' batches, sources, index lists, modes, the tile
 * path of BF16 inputs), its inputs planned into `inputs`. Without oriKv the problem has no ori part.
 */
kernels::SmlaProblem smlaProblemOf(const SmlaArgs& args, SmlaInputs& inputs, WorkspaceBooking& booking);

struct SmlaPlan {
  WorkspaceBooking workspace;
  SmlaInputs inputs;
  StagedTensor sinks, out, lse;
  bool returnsLse = false;
  kernels::SmlaProblem problem;  // the run fills in the buffers
  kernels::SmlaSchedule schedule;
  WorkspaceRegion scratch;

  aclnnStatus run(void* memory) const;
};

/**
 * A KV tensor as the kernels address it: in place when its rows are contiguous (any row, batch or block strides),
 * else staged dense (`staged`, booked as `name`). A paged tensor's block table values are appended to `tables`, their
 * start written to tableOffset (the run points the source at them).
 */
kernels::SmlaKvSource smlaKvSourceOf(const aclTensor& kv, SmlaLayout layout, const aclTensor* table,
                                     std::vector<int64_t>& tables, int64_t* tableOffset, StagedTensor& staged,
                                     const char* name, WorkspaceBooking& booking);

/** An index list [tokens][K] and its optional lengths, staged unless dense (nothing when `indices` is null). */
kernels::SmlaIndexList smlaIndexListOf(const aclTensor* indices, const aclTensor* lengths, StagedTensor& stagedIndices,
                                       StagedTensor& stagedLengths, const char* name, const char* lengthsName,
                                       WorkspaceBooking& booking);

/** Plans a checked call (smlaWithEmptyOptionalsAbsent applied). */
SmlaPlan planSparseFlashMla(const SmlaArgs& args);

}  // namespace gradkit::ops
