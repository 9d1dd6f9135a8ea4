// Golden of aclnnDropout (ops-math random/dsa_gen_bit_mask aclnn_dropout.cpp, gradkit's decisions in
// src/ops/dropout/dropout_plan.h), composed from the goldens of its parts: the mask of dropoutGenMaskStream and the
// output of dropoutDoMask.
#pragma once

#include <cstdint>
#include <vector>

#include "acl/acl_base.h"

namespace gradkit::golden {

/**
 * Dense input of `n` elements of `inDtype` -> dense out of `outDtype` (FLOAT, FLOAT16 or BF16 each). `mask` holds
 * maskOut's ceil(n/128)*16 bytes before the call and receives them after it:
 *  - train and p not exactly 0 or 1: mask = dropoutGenMaskStream(n, p, seed, offset) (no DBL_EPSILON fills);
 *    otherwise the mask is left as it was;
 *  - out = dropoutDoMask(inDtype, outDtype, input, mask, train ? p : 0): copy for |p| <= DBL_EPSILON or eval,
 *    +0 for |p - 1| <= DBL_EPSILON, else bit ? RN_out(RN32(x * RN32(1 / keep))) : +0 with keep = float(1 - p)
 *    rounded to inDtype.
 */
void dropout(aclDataType inDtype, aclDataType outDtype, const void* input, int64_t n, double p, bool train,
             int64_t seed, int64_t offset, void* out, std::vector<uint8_t>& mask);

}  // namespace gradkit::golden
