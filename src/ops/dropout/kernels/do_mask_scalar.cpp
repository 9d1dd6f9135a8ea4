#include <cstring>

#include "ops/dropout/kernels/do_mask_kernel.h"
#include "ops/dropout/kernels/mask_format.h"
#include "ops/dropout/kernels/masked_elements.h"

namespace gradkit::kernels {

void dropoutDoMaskScalar(aclDataType xDtype, aclDataType outDtype, const void* x, const uint8_t* mask, float reciprocal,
                         void* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float scaled = masked::loadFloat(xDtype, x, i) * reciprocal;
    masked::storeFloat(outDtype, out, i, ops::dropoutMaskBit(mask, i) ? scaled : 0.0f);  // select: dropped -> +0
  }
}

const DoMaskKernels kDoMaskScalarKernels{
    [](aclDataType xDtype, aclDataType outDtype, const void* x, const uint8_t* mask, float reciprocal, void* out,
       int64_t n, bool /*streamStores*/) { dropoutDoMaskScalar(xDtype, outDtype, x, mask, reciprocal, out, n); }};

void dropoutCopyConvert(aclDataType xDtype, aclDataType outDtype, const void* x, void* out, int64_t n) {
  if (xDtype == outDtype) {  // memmove: out may be x itself
    std::memmove(out, x, static_cast<size_t>(n) * (xDtype == ACL_FLOAT ? 4u : 2u));
    return;
  }
  for (int64_t i = 0; i < n; ++i) masked::storeFloat(outDtype, out, i, masked::loadFloat(xDtype, x, i));
}

}  // namespace gradkit::kernels
