#include "ops/dropout/do_mask_staging.h"

#include "base/dtype.h"
#include "core/kernel_select.h"
#include "core/parallel.h"
#include "opapi/tensor_copy.h"

namespace gradkit::ops {
namespace {

// Elements per parallel chunk: large enough to amortise scheduling, a multiple of 128 (16 mask bytes).
constexpr int64_t kChunkElements = int64_t{1} << 16;

uint64_t tensorBytes(const aclTensor& tensor) {
  return static_cast<uint64_t>(tensor.numel()) * dtypeSize(tensor.dtype);
}

// Reserves a dense staging area for `tensor` when it is used and not contiguous.
void reserveStaging(const aclTensor& tensor, bool used, bool& staged, uint64_t& at, uint64_t& workspaceBytes) {
  staged = used && !tensor.isContiguous();
  if (!staged) return;
  at = workspaceBytes;
  workspaceBytes += alignWorkspace(tensorBytes(tensor));
}

}  // namespace

MaskedStaging planMaskedStaging(const aclTensor& input, const aclTensor& mask, const aclTensor& out, bool readInput,
                                bool readMask) {
  MaskedStaging plan{input, mask, out};
  plan.readInput = readInput;
  plan.readMask = readMask;
  reserveStaging(input, readInput, plan.stageInput, plan.inputAt, plan.workspaceBytes);
  reserveStaging(mask, readMask, plan.stageMask, plan.maskAt, plan.workspaceBytes);
  reserveStaging(out, true, plan.stageOut, plan.outAt, plan.workspaceBytes);
  plan.streamStores = !plan.stageOut && tensorBytes(out) >= kStreamingStoreBytes;
  return plan;
}

MaskedStaging::Dense MaskedStaging::prepare(void* workspace) const {
  auto* scratch = static_cast<unsigned char*>(workspace);
  Dense dense;
  if (readInput) {
    dense.input = input.firstElement();
    if (stageInput) {
      copyToContiguous(input, scratch + inputAt);
      dense.input = scratch + inputAt;
    }
  }
  if (readMask) {
    dense.mask = static_cast<const uint8_t*>(mask.firstElement());
    if (stageMask) {
      copyToContiguous(mask, scratch + maskAt);
      dense.mask = scratch + maskAt;
    }
  }
  dense.out = stageOut ? scratch + outAt : out.firstElement();
  return dense;
}

void MaskedStaging::finish(const Dense& dense) const {
  if (stageOut) copyFromContiguous(dense.out, out);
}

void forEachMaskChunk(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn) {
  parallelFor(n, kChunkElements, fn);
}

}  // namespace gradkit::ops
