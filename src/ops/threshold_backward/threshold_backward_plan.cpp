#include "ops/threshold_backward/threshold_backward_plan.h"

#include "core/dtype.h"
#include "core/kernel_select.h"
#include "core/parallel.h"
#include "core/strided.h"
#include "ops/threshold_backward/kernels/threshold_backward_kernel.h"

namespace gradkit::ops {
namespace {

// Elements per parallel chunk: large enough to amortise scheduling, a multiple of 64 so every chunk
// starts at the same vector alignment.
constexpr int64_t kChunkElements = int64_t{1} << 16;

// Reserves a dense staging area for `tensor` when it is not contiguous.
void reserveStaging(const aclTensor& tensor, bool& staged, uint64_t& at, uint64_t& workspaceBytes) {
  staged = !tensor.isContiguous();
  if (!staged) return;
  at = workspaceBytes;
  workspaceBytes += alignWorkspace(static_cast<uint64_t>(tensor.numel()) * dtypeSize(tensor.dtype));
}

}  // namespace

ThresholdBackwardPlan planThresholdBackward(const aclTensor& gradOutput, const aclTensor& self, const aclTensor& out) {
  ThresholdBackwardPlan plan{gradOutput, self, out};
  reserveStaging(gradOutput, plan.stageGradOutput, plan.gradOutputAt, plan.workspaceBytes);
  reserveStaging(self, plan.stageSelf, plan.selfAt, plan.workspaceBytes);
  reserveStaging(out, plan.stageOut, plan.outAt, plan.workspaceBytes);
  const uint64_t outBytes = static_cast<uint64_t>(out.numel()) * dtypeSize(out.dtype);
  plan.streamStores = !plan.stageOut && outBytes >= kStreamingStoreBytes;
  plan.scalarKernel = scalarKernelsForced();
  return plan;
}

aclnnStatus ThresholdBackwardPlan::run(void* workspace) const {
  auto* scratch = static_cast<unsigned char*>(workspace);
  const void* grad = gradOutput.firstElement();
  const void* features = self.firstElement();
  void* result = out.firstElement();
  if (stageGradOutput) {
    copyToContiguous(gradOutput, scratch + gradOutputAt);
    grad = scratch + gradOutputAt;
  }
  if (stageSelf) {
    copyToContiguous(self, scratch + selfAt);
    features = scratch + selfAt;
  }
  if (stageOut) result = scratch + outAt;

  const aclDataType dtype = gradOutput.dtype;
  const size_t size = dtypeSize(dtype);
  const auto* g = static_cast<const unsigned char*>(grad);
  const auto* s = static_cast<const unsigned char*>(features);
  auto* o = static_cast<unsigned char*>(result);
  parallelFor(gradOutput.numel(), kChunkElements, [&](int64_t begin, int64_t end) {
    const int64_t at = begin * static_cast<int64_t>(size);
    if (scalarKernel) {
      kernels::thresholdBackwardScalar(dtype, g + at, s + at, o + at, end - begin);
    } else {
      kernels::thresholdBackwardSimd(dtype, g + at, s + at, o + at, end - begin, streamStores);
    }
  });

  if (stageOut) copyFromContiguous(result, out);
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
