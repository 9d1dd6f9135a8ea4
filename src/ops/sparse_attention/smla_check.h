// The check of aclnnSparseFlashMla (docs/sparse_attention.md, "Checks, in order"): null required tensors (161001), then
// upstream's phases (single arguments, existence, features, cross-tensor shapes), the A2/A3 profile's narrower rules,
// the values of the INT32 tensors read on the host (gradkit's addition, DECISIONS.md "Check early and clearly") and the
// memory rules; every failure after the null checks is 161002 with "<api>: argument '<name>': expected ..., given ...".
#pragma once

#include <initializer_list>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "ops/sparse_attention/smla_args.h"
#include "ops/sparse_attention/smla_sizes.h"

namespace gradkit::ops {

/** Checks a call whose empty optional tensors were made absent (smlaWithEmptyOptionalsAbsent). */
aclnnStatus checkSparseFlashMla(const SmlaArgs& args, const uint64_t* workspaceSize, aclOpExecutor* const* executor);

/** The API and the query's argument name a shared rule's messages carry (the forward's "q", the gradient's "query"). */
struct SmlaCheckNames {
  const char* api;
  const char* q;
};

/**
 * The cross-tensor shapes the forward and the gradient share: N1, D, the KV tensors, the counts of the INT32 length
 * tensors and the per-token index lists and top-k lengths.
 */
aclnnStatus checkSmlaCommonShapes(const SmlaCheckNames& names, const SmlaArgs& args, const SmlaShape& shape);

/** t's dtype among `types` and its rank `rank` (`why` says which shape); absent passes. */
aclnnStatus checkSmlaTyped(const char* api, const char* name, const aclTensor* t,
                           std::initializer_list<aclDataType> types, int64_t rank, const char* why);

/** A FLOAT16 / BFLOAT16 tensor of `rank` dims (the q-like and KV tensors); absent passes. */
aclnnStatus checkSmlaIo(const char* api, const char* name, const aclTensor* t, int64_t rank);

/** oriMaskMode 0 / 3 / 4, cmpMaskMode 0 / 3, each window -1 (unbounded) or 0 .. INT32_MAX. */
aclnnStatus checkSmlaModesAndWindows(const char* api, const SmlaArgs& args);

/** `expected` elements in t (absent passes). */
aclnnStatus checkSmlaCount(const char* api, const char* name, const aclTensor* t, int64_t expected, const char* why);

/** The lse's dims: [B, 1, S1, N1] (BSND) or [1, T1, N1] (TND). */
std::vector<int64_t> smlaLseDims(const SmlaShape& shape);

/** The value rules (lengths, residuals, block tables, topk lengths) of a call that passed the shape rules. */
aclnnStatus checkSmlaValues(const SmlaCheckNames& names, const SmlaArgs& args, const SmlaShape& shape);

}  // namespace gradkit::ops
