#include "ops/dropout/kernels/mask_format.h"
#include "ops/dropout/kernels/masked_elements.h"
#include "ops/dropout/kernels/v3_grad_kernel.h"

namespace gradkit::kernels {

void dropoutV3GradScalar(aclDataType gradDtype, aclDataType outDtype, const void* grad, const uint8_t* mask,
                         float scale, void* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float m = ops::dropoutMaskBit(mask, i) ? 1.0f : 0.0f;  // multiplied, never selected (Inf * 0 = NaN)
    const float kept = masked::loadFloat(gradDtype, grad, i) * m;
    masked::storeFloat(outDtype, out, i, kept * scale);
  }
}

const V3GradKernels kV3GradScalarKernels{
    [](aclDataType gradDtype, aclDataType outDtype, const void* grad, const uint8_t* mask, float scale, void* out,
       int64_t n, bool /*streamStores*/) { dropoutV3GradScalar(gradDtype, outDtype, grad, mask, scale, out, n); }};

}  // namespace gradkit::kernels
