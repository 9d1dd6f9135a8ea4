#include "ops/dropout/dropout_v3_plan.h"

#include <algorithm>
#include <cstring>

#include "base/dtype.h"
#include "core/kernel_select.h"
#include "core/parallel.h"
#include "opapi/tensor_copy.h"
#include "ops/dropout/gen_mask_stream.h"
#include "ops/dropout/kernels/gen_mask_kernel.h"
#include "ops/dropout/kernels/v3_grad_kernel.h"
#include "ops/dropout/mask_format.h"

namespace gradkit::ops {
namespace {

// Reserves a dense staging area of `bytes` when `staged`.
void reserve(bool staged, uint64_t bytes, uint64_t& at, uint64_t& workspaceBytes) {
  if (!staged) return;
  at = workspaceBytes;
  workspaceBytes += alignWorkspace(bytes);
}

bool sameView(const aclTensor& a, const aclTensor& b) {
  return a.data == b.data && a.offset == b.offset && a.viewDims == b.viewDims && a.strides == b.strides;
}

}  // namespace

DropoutV3Plan planDropoutV3(const aclTensor& input, double p, int64_t seed, int64_t offset, const aclTensor& out,
                            const aclTensor& mask) {
  DropoutV3Plan plan;
  plan.input = input;
  plan.out = out;
  plan.mask = mask;
  plan.n = input.numel();
  plan.mode = p == 0.0   ? DropoutV3Plan::Mode::kCopy
              : p == 1.0 ? DropoutV3Plan::Mode::kZeros
                         : DropoutV3Plan::Mode::kDropout;
  plan.maskPlan = planDropoutGenMask(plan.n, p, seed, offset, mask);
  const float keep = dropoutKeepProbability(p);
  plan.scale = 1.0f / keep;

  const uint64_t dataBytes = static_cast<uint64_t>(plan.n) * dtypeSize(input.dtype);
  const bool dropout = plan.mode == DropoutV3Plan::Mode::kDropout;
  // A copy reads any input layout and writes out densely in one pass when out is contiguous.
  plan.stageInput = dropout && !input.isContiguous();
  plan.stageOut = !out.isContiguous() && (dropout || plan.mode == DropoutV3Plan::Mode::kZeros || !input.isContiguous());
  plan.stageMask = !mask.isContiguous();
  reserve(plan.stageInput, dataBytes, plan.inputAt, plan.workspaceBytes);
  reserve(plan.stageOut, dataBytes, plan.outAt, plan.workspaceBytes);
  reserve(plan.stageMask, static_cast<uint64_t>(plan.maskPlan.maskBytes), plan.maskAt, plan.workspaceBytes);
  plan.streamStores = dropout && !plan.stageOut && dataBytes >= kStreamingStoreBytes;
  plan.scalarKernel = scalarKernelsForced();
  return plan;
}

void DropoutV3Plan::runDropout(const void* x, void* y, uint8_t* bits) const {
  const aclDataType dtype = input.dtype;
  const size_t size = dtypeSize(dtype);
  const auto* from = static_cast<const unsigned char*>(x);
  auto* to = static_cast<unsigned char*>(y);
  // One pass per chunk of whole mask bytes: its mask, then its elements while the mask is in cache.
  parallelFor(maskPlan.maskBytes, kMaskChunkBytes, [&](int64_t begin, int64_t end) {
    uint8_t* chunkBits = bits + begin;
    if (maskPlan.fill) {
      std::memset(chunkBits, maskPlan.fillByte, static_cast<size_t>(end - begin));
    } else if (scalarKernel) {
      kernels::genMaskBytesScalar(maskPlan.stream, n, begin, end - begin, chunkBits);
    } else {
      kernels::genMaskBytesSimd(maskPlan.stream, n, begin, end - begin, chunkBits);
    }
    const int64_t first = begin * 8, last = std::min(n, end * 8);
    if (first >= last) return;
    const size_t at = static_cast<size_t>(first) * size;
    if (scalarKernel) {
      kernels::dropoutV3GradScalar(dtype, dtype, from + at, chunkBits, scale, to + at, last - first);
    } else {
      kernels::dropoutV3GradSimd(dtype, dtype, from + at, chunkBits, scale, to + at, last - first, streamStores);
    }
  });
}

aclnnStatus DropoutV3Plan::run(void* workspace) const {
  auto* scratch = static_cast<unsigned char*>(workspace);
  auto* bits = stageMask ? scratch + maskAt : static_cast<uint8_t*>(mask.firstElement());
  void* y = stageOut ? scratch + outAt : out.firstElement();
  const uint64_t dataBytes = static_cast<uint64_t>(n) * dtypeSize(input.dtype);

  switch (mode) {
    case Mode::kCopy:
      fillDropoutMask(bits, maskPlan.maskBytes, 0xFF);
      if (stageOut) {
        copyToContiguous(input, y);
        copyFromContiguous(y, out);
      } else if (!out.isContiguous()) {
        copyFromContiguous(input.firstElement(), out);  // input is contiguous here
      } else if (!sameView(input, out)) {
        copyToContiguous(input, y);
      }
      break;
    case Mode::kZeros:
      fillDropoutMask(bits, maskPlan.maskBytes, 0x00);
      fillDropoutMask(static_cast<uint8_t*>(y), static_cast<int64_t>(dataBytes), 0x00);  // +0 in every dtype
      if (stageOut) copyFromContiguous(y, out);
      break;
    case Mode::kDropout: {
      const void* x = input.firstElement();
      if (stageInput) {
        copyToContiguous(input, scratch + inputAt);
        x = scratch + inputAt;
      }
      runDropout(x, y, bits);
      if (stageOut) copyFromContiguous(y, out);
      break;
    }
  }
  if (stageMask) copyFromContiguous(bits, mask);
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
