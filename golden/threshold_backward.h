// fp64 golden of ThresholdBackward, written from the formula (spec dropout_threshold.md 2.2, 2.4):
// out = gradOutput where self > 0 (floating dtypes: or self is NaN), else +0.
#pragma once

#include <cstdint>

#include "acl/acl_base.h"

namespace gradkit::golden {

/**
 * Dense row-major inputs of `n` elements, all of `dtype` (FLOAT, FLOAT16, BF16, INT8, UINT8, INT32, INT64).
 * Floating values are widened to double to evaluate the predicate; the kept gradient is copied bit for bit
 * (so -0 and NaN payloads survive), the dropped one is +0.
 */
void thresholdBackward(aclDataType dtype, const void* gradOutput, const void* self, void* out, int64_t n);

}  // namespace gradkit::golden
