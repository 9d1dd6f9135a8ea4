// DropoutV3Grad kernels on dense buffers and a packed mask. They know nothing about aclTensor.
#pragma once

#include <cstdint>

#include "acl/acl_base.h"

namespace gradkit::kernels {

/**
 * out[i] = RN_out(RN32(RN32(float(grad[i]) * m) * scale)) for i in [0, n), m = 1.0f when bit i of `mask` is set
 * (byte i / 8, bit i % 8, LSB first) else 0.0f: a multiply, so a dropped Inf/NaN gives NaN and a dropped negative
 * gives -0. gradDtype and outDtype: FLOAT, FLOAT16 or BF16 (rounded once, to nearest even). `mask` holds at least
 * ceil(n / 8) bytes. `streamStores` writes `out` with non-temporal stores when it is 64-byte aligned. `out` may
 * alias `grad` exactly when the dtypes agree. SIMD through Highway's dynamic dispatch; single-threaded.
 */
void dropoutV3GradSimd(aclDataType gradDtype, aclDataType outDtype, const void* grad, const uint8_t* mask, float scale,
                       void* out, int64_t n, bool streamStores);

/** The plain scalar path with the same contract (fallback and cross-check of the SIMD path). */
void dropoutV3GradScalar(aclDataType gradDtype, aclDataType outDtype, const void* grad, const uint8_t* mask,
                         float scale, void* out, int64_t n);

/** The V3Grad kernel a plan runs with (DropoutV3Grad and DropoutV3), chosen once (core/kernel_select.h). */
struct V3GradKernels {
  void (*apply)(aclDataType gradDtype, aclDataType outDtype, const void* grad, const uint8_t* mask, float scale,
                void* out, int64_t n, bool streamStores);
};
extern const V3GradKernels kV3GradSimdKernels;
extern const V3GradKernels kV3GradScalarKernels;  // ignores streamStores

}  // namespace gradkit::kernels
