// The check of aclnnSparseFlashMla (spec sparse_flash_mla.md 5): null required tensors (161001), then upstream's
// phases (single arguments, existence, features, cross-tensor shapes), the A2/A3 profile's narrower rules, the values
// of the INT32 tensors read on the host (gradkit's addition, DECISIONS #2) and the memory rules; every failure after
// the null checks is 161002 with "<api>: argument '<name>': expected ..., given ...".
#pragma once

#include "aclnn/aclnn_base.h"
#include "ops/sparse_attention/smla_args.h"
#include "ops/sparse_attention/smla_sizes.h"

namespace gradkit::ops {

/** Checks a call whose empty optional tensors were made absent (smlaWithEmptyOptionalsAbsent). */
aclnnStatus checkSparseFlashMla(const SmlaArgs& args, const uint64_t* workspaceSize, aclOpExecutor* const* executor);

/** The value rules (lengths, residuals, block tables, topk lengths) of a call that passed the shape rules. */
aclnnStatus checkSmlaValues(const SmlaArgs& args, const SmlaShape& shape);

}  // namespace gradkit::ops
