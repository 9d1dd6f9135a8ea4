// The size model of aclnnSparseFlashMla: what the layouts mean (which dim is the batch, the tokens, the heads), and the
// per-batch lengths read from the INT32 tensors. Read by the check (which adds the rules and messages) and the plan.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ops/sparse_attention/kernels/smla_kernel.h"
#include "ops/sparse_attention/smla_args.h"

namespace gradkit::ops {

enum class SmlaLayout { Bsnd, Tnd, PaBbnd };

/** "BSND", "TND", "PA_BBND"; nothing for another name. A null name is upstream's default, "BSND". */
std::optional<SmlaLayout> smlaLayoutOf(const char* name);
const char* smlaLayoutName(SmlaLayout layout);

/** The call with its optional tensors of zero elements made absent (upstream: "nullptr or empty"). */
SmlaArgs smlaWithEmptyOptionalsAbsent(const SmlaArgs& args);

/** The shape facts of a call whose layouts, ranks and required tensors were checked. */
struct SmlaShape {
  SmlaLayout layoutQ = SmlaLayout::Bsnd, layoutKv = SmlaLayout::Bsnd;
  int64_t batch = 0;   // BSND q dim 0, TND cuSeqlensQ size - 1
  int64_t tokens = 0;  // query rows of q: B * S1 or T1
  int64_t s1 = 0;      // BSND q dim 1 (0 for TND)
  int64_t n1 = 0, d = 0;
  bool hasCmp = false;
};

SmlaShape smlaShapeOf(const SmlaArgs& args);

/** Rows a KV tensor holds per batch (BSND dim 1), in all (TND dim 0), or per block (PA_BBND dim 1). */
int64_t smlaKvRows(const aclTensor& kv, SmlaLayout layout);

/** The INT32 values a call's sizes come from, read once. */
struct SmlaLengths {
  std::vector<int64_t> cuQ, cuOri, cuCmp, seqQ, seqOri, seqCmp, residual;
};
SmlaLengths smlaLengthsOf(const SmlaArgs& args);

/**
 * The batches of a call whose lengths passed their checks: query rows (seqused_q, else the batch's rows), ori and cmp
 * rows (seqused, else the batch's rows; paged without seqused: the block table's capacity), residual and the
 * restored length. Without oriKv (aclnnSparseFlashMlaSoftmaxL1Norm's problem) a batch has no ori rows.
 */
std::vector<kernels::SmlaBatch> smlaBatchesOf(const SmlaArgs& args, const SmlaShape& shape, const SmlaLengths& lengths);

}  // namespace gradkit::ops
