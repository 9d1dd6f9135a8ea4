// DropoutDoMask kernels (the legacy arithmetic) on dense buffers and a packed mask. They know nothing about aclTensor.
#pragma once

#include <cstdint>

#include "acl/acl_base.h"

namespace gradkit::kernels {

/**
 * out[i] = bit i ? RN_out(RN32(float(x[i]) * reciprocal)) : +0 for i in [0, n): a select, so a dropped Inf/NaN
 * gives +0. `reciprocal` is RN32(1 / keep) computed by the caller. Bit i of `mask` is byte i / 8, bit i % 8 (LSB
 * first); `mask` holds at least ceil(n / 8) bytes. xDtype and outDtype: FLOAT, FLOAT16 or BF16 (rounded once, to
 * nearest even). `streamStores` writes `out` with non-temporal stores when it is 64-byte aligned. `out` may alias
 * `x` exactly when the dtypes agree. SIMD through Highway's dynamic dispatch; single-threaded.
 */
void dropoutDoMaskSimd(aclDataType xDtype, aclDataType outDtype, const void* x, const uint8_t* mask, float reciprocal,
                       void* out, int64_t n, bool streamStores);

/** The plain scalar path with the same contract (fallback and cross-check of the SIMD path). */
void dropoutDoMaskScalar(aclDataType xDtype, aclDataType outDtype, const void* x, const uint8_t* mask, float reciprocal,
                         void* out, int64_t n);

/** The DoMask kernel a plan runs with, chosen once (core/kernel_select.h): the SIMD or the scalar instance. */
struct DoMaskKernels {
  void (*apply)(aclDataType xDtype, aclDataType outDtype, const void* x, const uint8_t* mask, float reciprocal,
                void* out, int64_t n, bool streamStores);
};
extern const DoMaskKernels kDoMaskSimdKernels;
extern const DoMaskKernels kDoMaskScalarKernels;  // ignores streamStores

/**
 * out[i] = x[i] in outDtype (DoMask's copy cases): the bytes as they are when the dtypes agree, else widened
 * exactly and rounded once to nearest even (NaN stays NaN). FLOAT, FLOAT16, BF16.
 */
void dropoutCopyConvert(aclDataType xDtype, aclDataType outDtype, const void* x, void* out, int64_t n);

}  // namespace gradkit::kernels
