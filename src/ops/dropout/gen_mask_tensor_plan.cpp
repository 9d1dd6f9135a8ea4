#include "ops/dropout/gen_mask_tensor_plan.h"

#include <cstring>

#include "ops/dropout/gen_mask_stream.h"

namespace gradkit::ops {

int64_t readSeedTensor(const aclTensor& seedTensor) {
  if (seedTensor.dtype == ACL_INT32) {
    int32_t value;
    std::memcpy(&value, seedTensor.firstElement(), sizeof(value));
    return value;
  }
  int64_t value;
  std::memcpy(&value, seedTensor.firstElement(), sizeof(value));
  return value;
}

int64_t readOffsetTensor(const aclTensor& offsetTensor, int64_t offset) {
  uint64_t value;
  std::memcpy(&value, offsetTensor.firstElement(), sizeof(value));
  return static_cast<int64_t>(value + static_cast<uint64_t>(offset));
}

GenMaskTensorPlan planDropoutGenMaskV2Tensor(const DropoutGenMaskV2TensorArgs& args) {
  GenMaskTensorPlan plan;
  // Seed and offset 0 stand in until the run; only the keep threshold of this stream is used.
  plan.genMask =
      planGenMask(planDropoutMask(dropoutShapeNumel(*args.shape), args.prob, /*seed=*/0, /*offset=*/0), *args.out);
  plan.genMaskRegion = plan.workspace.bookNested("gen mask", plan.genMask.workspace);
  plan.seedTensor = *args.seedTensor;
  plan.offsetTensor = *args.offsetTensor;
  plan.offset = args.offset;
  plan.prob = args.prob;
  return plan;
}

aclnnStatus GenMaskTensorPlan::run(void* memory) const {
  void* base = genMaskRegion.in(memory);
  if (genMask.mask.fill) return genMask.run(base);  // a fill reads neither tensor
  const kernels::MaskStream stream =
      makeMaskStream(prob, readSeedTensor(seedTensor), readOffsetTensor(offsetTensor, offset));
  return genMask.runWith(base, stream);
}

const OpDefinition<DropoutGenMaskV2TensorArgs, GenMaskTensorPlan> kDropoutGenMaskV2Tensor{
    kDropoutGenMaskV2TensorApi, checkDropoutGenMaskV2Tensor,
    [](const DropoutGenMaskV2TensorArgs& args) { return args.out->isEmpty(); }, planDropoutGenMaskV2Tensor};

}  // namespace gradkit::ops
