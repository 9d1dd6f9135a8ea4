#include "ops/dropout/v3_grad_plan.h"

#include "base/dtype.h"
#include "core/kernel_select.h"
#include "ops/dropout/kernels/v3_grad_kernel.h"

namespace gradkit::ops {

DropoutV3GradPlan planDropoutV3Grad(const aclTensor& gradY, const aclTensor& mask, double scale,
                                    const aclTensor& gradX) {
  DropoutV3GradPlan plan;
  plan.staging = planMaskedStaging(gradY, mask, gradX, /*readInput=*/true, /*readMask=*/true);
  plan.scale = static_cast<float>(scale);  // as upstream's host code and CUDA's accscalar_t conversion
  plan.scalarKernel = scalarKernelsForced();
  return plan;
}

aclnnStatus DropoutV3GradPlan::run(void* workspace) const {
  const MaskedStaging::Dense dense = staging.prepare(workspace);
  const aclDataType inDtype = staging.input.dtype;
  const aclDataType outDtype = staging.out.dtype;
  const size_t inSize = dtypeSize(inDtype);
  const size_t outSize = dtypeSize(outDtype);
  const auto* grad = static_cast<const unsigned char*>(dense.input);
  auto* result = static_cast<unsigned char*>(dense.out);
  forEachMaskChunk(staging.out.numel(), [&](int64_t begin, int64_t end) {
    const unsigned char* from = grad + static_cast<size_t>(begin) * inSize;
    unsigned char* to = result + static_cast<size_t>(begin) * outSize;
    const uint8_t* bits = dense.mask + begin / 8;  // chunks start on whole mask bytes
    if (scalarKernel) {
      kernels::dropoutV3GradScalar(inDtype, outDtype, from, bits, scale, to, end - begin);
    } else {
      kernels::dropoutV3GradSimd(inDtype, outDtype, from, bits, scale, to, end - begin, staging.streamStores);
    }
  });
  staging.finish(dense);
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
