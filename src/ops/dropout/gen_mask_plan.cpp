#include "ops/dropout/gen_mask_plan.h"

#include <cstdint>

namespace gradkit::ops {

GenMaskPlan planGenMask(const DropoutMask& mask, const aclTensor& out) {
  GenMaskPlan plan;
  plan.mask = mask;
  plan.out = StagedTensor::plan(out, !out.isContiguous(), "out staging", plan.workspace);
  return plan;
}

aclnnStatus GenMaskPlan::runWith(void* memory, const kernels::MaskStream& maskStream) const {
  mask.write(static_cast<uint8_t*>(out.target(memory)), maskStream);
  out.writeBack(memory);
  return ACLNN_SUCCESS;
}

const OpDefinition<DropoutGenMaskArgs, GenMaskPlan> kDropoutGenMask{
    kDropoutGenMaskApi, checkDropoutGenMask, [](const DropoutGenMaskArgs& args) { return args.out->isEmpty(); },
    [](const DropoutGenMaskArgs& args) {
      return planGenMask(planDropoutMask(dropoutShapeNumel(*args.shape), args.prob, args.seed, args.offset), *args.out);
    }};

const OpDefinition<DropoutGenMaskV2Args, GenMaskPlan> kDropoutGenMaskV2{
    kDropoutGenMaskV2Api, checkDropoutGenMaskV2, [](const DropoutGenMaskV2Args& args) { return args.out->isEmpty(); },
    [](const DropoutGenMaskV2Args& args) {
      return planGenMask(planDropoutMask(dropoutShapeNumel(*args.shape), args.prob, args.seed, args.offset), *args.out);
    }};

}  // namespace gradkit::ops
