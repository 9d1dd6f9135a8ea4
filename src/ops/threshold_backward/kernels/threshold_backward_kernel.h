// ThresholdBackward kernels on dense row-major buffers. They know nothing about aclTensor.
#pragma once

#include <cstdint>

#include "acl/acl_base.h"

namespace gradkit::kernels {

/**
 * out[i] = gradOutput[i] if self[i] > 0 (floating dtypes: or self[i] is NaN), else +0, for i in [0, n).
 * SIMD through Highway's dynamic dispatch. `streamStores` writes `out` with non-temporal stores (for outputs much
 * larger than the last-level cache). `out` may alias `gradOutput` or `self` exactly; no other overlap.
 * dtype: FLOAT, FLOAT16, BF16, INT8, UINT8, INT32, INT64. Single-threaded: the caller splits the range.
 */
void thresholdBackwardSimd(aclDataType dtype, const void* gradOutput, const void* self, void* out, int64_t n,
                           bool streamStores);

/** The plain scalar path with the same contract (fallback and cross-check of the SIMD path). */
void thresholdBackwardScalar(aclDataType dtype, const void* gradOutput, const void* self, void* out, int64_t n);

}  // namespace gradkit::kernels
