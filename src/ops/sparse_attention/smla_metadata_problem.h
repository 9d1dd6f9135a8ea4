// The metadata operators' size model: which layout each call has, and the planners' input (per-batch lengths, topk
// lengths) from a checked call's arguments and int32 values, with upstream's source priorities (its AI CPU kernels;
// docs/sparse_attention.md, "What they write"): seqused, else cu_seqlens (TND), else the max seqlen argument; PA_BBND
// kv without seqused on a top-k sparse side is an unknown length.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "ops/sparse_attention/smla_metadata_args.h"
#include "ops/sparse_attention/smla_metadata_planner.h"

namespace gradkit::ops {

inline bool smlaIsLayout(const char* layout, const char* name) {
  return layout != nullptr && std::strcmp(layout, name) == 0;
}

/**
 * The query side of a checked call's batches (qRows, rowStart; kv fields 0): `batch` entries from seqused_q, else the
 * cu_seqlens_q lengths (TND), else maxSeqlenQ each.
 */
std::vector<SmlaMetaBatch> smlaQueryBatches(const aclTensor* cuSeqlensQ, const aclTensor* sequsedQ, bool tndQ,
                                            int64_t batch, int64_t maxSeqlenQ);

/** The planners' input for a checked forward or gradient metadata call. */
SmlaMetaProblem smlaMetaProblemOf(const SmlaMetaArgs& args, bool ascend950);

/** The query rows of a checked L1-norm metadata call: sum of seqUsedQ, else cuSeqLensQ[B] (TND), else B maxSeqLenQ. */
int64_t smlaL1TotalRows(const SmlaL1MetaArgs& args);

}  // namespace gradkit::ops
