// The check of aclnnSparseFlashMlaSoftmaxL1Norm: null required tensors (161001), then upstream's tiling rules in their
// order (sparse_flash_mla_softmax_l1_norm_tiling.cpp: required inputs, layouts, dtypes, ranks, attributes, the
// layout's shapes, N1 / D, lse, the optional length tensors, the sparse inputs), gradkit's shape rules for what the
// kernels read and write, the values of the INT32 tensors (DECISIONS.md "Check early and clearly") and the memory
// rules; every failure after the null checks is 161002 with "<api>: argument '<name>': expected ..., given ...".
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "ops/sparse_attention/smla_l1_args.h"

namespace gradkit::ops {

/** Checks a call whose empty optional tensors were made absent (smlaL1WithEmptyOptionalsAbsent). */
aclnnStatus checkSparseFlashMlaSoftmaxL1Norm(const SmlaL1Args& args, const uint64_t* workspaceSize,
                                             aclOpExecutor* const* executor);

/**
 * Columns of a softmaxL1Norm row (upstream's infershape): K with sparseIndicesOptional, else k's S2 (BSND) or
 * maxSeqlenK (TND). For a call whose layouts and ranks were checked.
 */
int64_t smlaL1Width(const SmlaL1Args& args);

/** gradkit's rules after upstream's: shapes the kernels rely on, then the INT32 values, formats and memory. */
aclnnStatus checkSmlaL1Additions(const SmlaL1Args& args);

}  // namespace gradkit::ops
