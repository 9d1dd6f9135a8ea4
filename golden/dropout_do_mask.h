// fp64 golden of the legacy DropoutDoMask arithmetic (spec dropout_threshold.md 1.4.1) and of DropoutBackward
// (1.4.2), written from the formulas: keep = float(1 - p) stored in x's dtype, r = RN32(1 / keep),
// out = bit ? RN_out(RN32(x * r)) : +0, with the host short-cuts p ~ 0 (copy) and p ~ 1 (zeros).
#pragma once

#include <cstdint>

#include "acl/acl_base.h"

namespace gradkit::golden {

/**
 * Dense row-major x of `n` elements (FLOAT, FLOAT16 or BF16), packed mask (byte i / 8, bit i % 8 from the least
 * significant, 1 = keep), drop probability `prob` in [0, 1] -> dense out of `outDtype` (FLOAT, FLOAT16 or BF16).
 * |prob| <= DBL_EPSILON: out = x (mask ignored); |prob - 1| <= DBL_EPSILON: out = +0. Otherwise k = float(1 - prob)
 * rounded to x's dtype; |k| <= float(DBL_EPSILON): +0; |k - 1| <= float(DBL_EPSILON): out = x; else the select
 * above (a dropped Inf/NaN gives +0). Every result is rounded once from its exact value to outDtype.
 */
void dropoutDoMask(aclDataType xDtype, aclDataType outDtype, const void* x, const uint8_t* mask, double prob, void* out,
                   int64_t n);

/** The drop probability aclnnDropoutBackward hands to DoMask: |scale| <= DBL_EPSILON ? 1 : 1 - 1/scale (double). */
double dropoutBackwardProb(double scale);

}  // namespace gradkit::golden
