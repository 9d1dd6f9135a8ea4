// Golden of DropoutV3 (spec dropout_threshold.md 1.3 with gradkit's decisions, src/ops/dropout/dropout_v3_plan.h):
// the mask is golden::dropoutGenMask(n, p, seed, offset); p == 0: out = input; p == 1: out = +0; otherwise
// out = RN_T(RN32(RN32(x * m) * scaleF)), m = 1 or 0 from the mask, keepF = float(1 - p), scaleF = RN32(1 / keepF).
#pragma once

#include <cstdint>
#include <vector>

#include "acl/acl_base.h"

namespace gradkit::golden {

/**
 * Dense row-major input of `n` elements of `dtype` (FLOAT, FLOAT16 or BF16) -> dense out of the same dtype; returns
 * the ceil(n / 128) * 16 mask bytes. Products of two floats are formed exactly in double and rounded once to float
 * (what an fp32 multiply does), the fp32 result once more to the dtype (nearest even).
 */
std::vector<uint8_t> dropoutV3(aclDataType dtype, const void* input, int64_t n, double p, int64_t seed, int64_t offset,
                               void* out);

}  // namespace gradkit::golden
