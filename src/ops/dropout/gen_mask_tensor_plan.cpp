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

GenMaskTensorPlan planDropoutGenMaskV2Tensor(int64_t n, double prob, const aclTensor& seedTensor,
                                             const aclTensor& offsetTensor, int64_t offset, const aclTensor& out) {
  GenMaskTensorPlan plan;
  // Seed and offset 0 stand in until the run; only the keep threshold of this stream is used.
  plan.mask = planDropoutGenMask(n, prob, /*seed=*/0, /*offset=*/0, out);
  plan.seedTensor = seedTensor;
  plan.offsetTensor = offsetTensor;
  plan.offset = offset;
  plan.prob = prob;
  return plan;
}

aclnnStatus GenMaskTensorPlan::run(void* workspace) const {
  if (mask.fill) return mask.run(workspace);  // a fill reads neither tensor
  const kernels::MaskStream stream =
      makeMaskStream(prob, readSeedTensor(seedTensor), readOffsetTensor(offsetTensor, offset));
  return mask.runWith(workspace, stream);
}

}  // namespace gradkit::ops
