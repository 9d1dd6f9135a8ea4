#include "ops/dropout/v3_grad_plan.h"

#include "base/dtype.h"
#include "core/kernel_select.h"

namespace gradkit::ops {

DropoutV3GradPlan planDropoutV3Grad(const DropoutV3GradArgs& args) {
  DropoutV3GradPlan plan;
  plan.staging =
      planMaskedStaging(*args.gradY, *args.mask, *args.gradX, /*readInput=*/true, /*readMask=*/true, plan.workspace);
  plan.scale = static_cast<float>(args.scale);  // as upstream's host code and CUDA's accscalar_t conversion
  plan.kernels = &chooseKernels(kernels::kV3GradSimdKernels, kernels::kV3GradScalarKernels);
  return plan;
}

aclnnStatus DropoutV3GradPlan::run(void* memory) const {
  const MaskedStaging::Dense dense = staging.prepare(memory);
  const aclDataType inDtype = staging.input.view.dtype;
  const aclDataType outDtype = staging.out.view.dtype;
  const size_t inSize = dtypeSize(inDtype);
  const size_t outSize = dtypeSize(outDtype);
  const auto* grad = static_cast<const unsigned char*>(dense.input);
  auto* result = static_cast<unsigned char*>(dense.out);
  forEachMaskChunk(staging.out.view.numel(), [&](int64_t begin, int64_t end) {
    const unsigned char* from = grad + static_cast<size_t>(begin) * inSize;
    unsigned char* to = result + static_cast<size_t>(begin) * outSize;
    const uint8_t* bits = dense.mask + begin / 8;  // chunks start on whole mask bytes
    kernels->apply(inDtype, outDtype, from, bits, scale, to, end - begin, staging.streamStores);
  });
  staging.finish(memory);
  return ACLNN_SUCCESS;
}

const OpDefinition<DropoutV3GradArgs, DropoutV3GradPlan> kDropoutV3Grad{
    kDropoutV3GradApi, checkDropoutV3Grad, [](const DropoutV3GradArgs& args) { return args.gradY->isEmpty(); },
    planDropoutV3Grad};

}  // namespace gradkit::ops
