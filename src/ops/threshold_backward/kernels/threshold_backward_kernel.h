// ThresholdBackward kernels on rows of raw elements. They know nothing about aclTensor.
#pragma once

#include <cstdint>

#include "acl/acl_base.h"

namespace gradkit::kernels {

/**
 * The threshold as a kernel reads it (the plan resolves the aclScalar once, docs/threshold_backward.md):
 *  - FLOAT, FLOAT16, BF16: keep = !(float(self) <= asFloat); a NaN asFloat keeps every element.
 *  - INT8, UINT8, INT32, INT64: keep = keepAll || self > asInt, where asInt is in the dtype's range.
 */
struct ThresholdValue {
  float asFloat = 0.0f;
  int64_t asInt = 0;
  bool keepAll = false;
};

/**
 * One row of n elements: out[i] = keep(self[i * selfStride]) ? gradOutput[i * gradStride] : +0, i in [0, n).
 * gradStride and selfStride are 0 (the value broadcasts along the row) or 1; out is dense. SIMD through
 * Highway's dynamic dispatch. `streamStores` writes `out` with non-temporal stores (for outputs much larger
 * than the last-level cache). `out` may alias a dense input exactly; no other overlap. dtype: FLOAT, FLOAT16,
 * BF16, INT8, UINT8, INT32, INT64. Single-threaded: the caller splits the work.
 */
void thresholdBackwardSimd(aclDataType dtype, const void* gradOutput, int64_t gradStride, const void* self,
                           int64_t selfStride, void* out, int64_t n, const ThresholdValue& threshold,
                           bool streamStores);

/** The plain scalar path with the same contract (fallback and cross-check of the SIMD path). */
void thresholdBackwardScalar(aclDataType dtype, const void* gradOutput, int64_t gradStride, const void* self,
                             int64_t selfStride, void* out, int64_t n, const ThresholdValue& threshold);

/** The kernels of one plan (core/kernel_select.h chooses the table once). */
struct ThresholdBackwardKernels {
  /** One row, thresholdBackwardSimd's contract; the scalar table ignores `streamStores`. */
  void (*row)(aclDataType dtype, const void* gradOutput, int64_t gradStride, const void* self, int64_t selfStride,
              void* out, int64_t n, const ThresholdValue& threshold, bool streamStores);
};
extern const ThresholdBackwardKernels kThresholdBackwardSimdKernels;
extern const ThresholdBackwardKernels kThresholdBackwardScalarKernels;

}  // namespace gradkit::kernels
