#include "ops/dropout/gen_mask_plan.h"

#include <cfloat>
#include <cmath>
#include <cstring>

#include "core/kernel_select.h"
#include "core/parallel.h"
#include "opapi/tensor_copy.h"
#include "ops/dropout/gen_mask_stream.h"
#include "ops/dropout/mask_format.h"

namespace gradkit::ops {

void writeDropoutMask(const kernels::MaskStream& stream, int64_t n, int64_t maskBytes, uint8_t* mask,
                      bool scalarKernel) {
  parallelFor(maskBytes, kMaskChunkBytes, [&](int64_t begin, int64_t end) {
    if (scalarKernel) {
      kernels::genMaskBytesScalar(stream, n, begin, end - begin, mask + begin);
    } else {
      kernels::genMaskBytesSimd(stream, n, begin, end - begin, mask + begin);
    }
  });
}

void fillDropoutMask(uint8_t* mask, int64_t bytes, uint8_t value) {
  parallelFor(bytes, kMaskChunkBytes * 32,
              [&](int64_t begin, int64_t end) { std::memset(mask + begin, value, static_cast<size_t>(end - begin)); });
}

GenMaskPlan planDropoutGenMask(int64_t n, double prob, int64_t seed, int64_t offset, const aclTensor& out,
                               bool epsilonFills) {
  GenMaskPlan plan;
  plan.out = out;
  plan.n = n;
  plan.maskBytes = dropoutMaskBytes(n);
  // Upstream's short-cuts: a probability within DBL_EPSILON of 0 keeps everything, of 1 drops everything,
  // padding bits included.
  if (epsilonFills && std::fabs(prob) <= DBL_EPSILON) {
    plan.fill = true;
    plan.fillByte = 0xFF;
  } else if (epsilonFills && std::fabs(prob - 1.0) <= DBL_EPSILON) {
    plan.fill = true;
    plan.fillByte = 0x00;
  } else {
    plan.stream = makeMaskStream(prob, seed, offset);
  }
  plan.stageOut = !out.isContiguous();
  if (plan.stageOut) plan.workspaceBytes = alignWorkspace(static_cast<uint64_t>(plan.maskBytes));
  plan.scalarKernel = scalarKernelsForced();
  return plan;
}

aclnnStatus GenMaskPlan::runWith(void* workspace, const kernels::MaskStream& maskStream) const {
  auto* mask = static_cast<uint8_t*>(stageOut ? workspace : out.firstElement());
  if (fill) {
    fillDropoutMask(mask, maskBytes, fillByte);
  } else {
    writeDropoutMask(maskStream, n, maskBytes, mask, scalarKernel);
  }
  if (stageOut) copyFromContiguous(mask, out);
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
