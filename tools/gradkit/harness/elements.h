// Element access in dense buffers of any supported aclDataType, through double. The harness uses it to
// generate values and to measure errors; it never decides an operator's result.
#pragma once

#include <cstdint>

#include "acl/acl_base.h"

namespace gradkit::cli {

/**
 * Element `index` of the dense buffer `data` of `dtype`, widened to double (exact, except int64/uint64
 * beyond 2^53). Throws HarnessError for a dtype without a value (string, complex, sub-byte).
 */
double loadAsDouble(aclDataType dtype, const void* data, int64_t index);

/**
 * Writes `value` into element `index`. Narrow floats go through fp32 (double -> float -> narrow, each
 * round-to-nearest-even), keeping the sign of zero and of NaN; integers are truncated toward zero and
 * saturated to the type's range (NaN -> 0); bool is value != 0.
 */
void storeFromDouble(aclDataType dtype, void* data, int64_t index, double value);

/** `value` as an element of `dtype` holds it (storeFromDouble, then loadAsDouble). */
double roundToDtype(aclDataType dtype, double value);

/** True for the dtypes whose elements can hold NaN, Inf and -0. */
bool holdsSpecialValues(aclDataType dtype);

}  // namespace gradkit::cli
