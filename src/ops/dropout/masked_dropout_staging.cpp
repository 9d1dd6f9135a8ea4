#include "ops/dropout/masked_dropout_staging.h"

#include "base/dtype.h"
#include "core/kernel_select.h"
#include "core/parallel.h"

namespace gradkit::ops {
namespace {

// Elements per parallel chunk: large enough to amortise scheduling, a multiple of 128 (16 mask bytes).
constexpr int64_t kChunkElements = int64_t{1} << 16;

}  // namespace

MaskedStaging planMaskedStaging(const aclTensor& input, const aclTensor& mask, const aclTensor& out, bool readInput,
                                bool readMask, WorkspaceBooking& booking) {
  MaskedStaging plan;
  plan.readInput = readInput;
  plan.readMask = readMask;
  plan.input = StagedTensor::plan(input, readInput && !input.isContiguous(), "input staging", booking);
  plan.mask = StagedTensor::plan(mask, readMask && !mask.isContiguous(), "mask staging", booking);
  plan.out = StagedTensor::plan(out, !out.isContiguous(), "out staging", booking);
  const uint64_t outBytes = static_cast<uint64_t>(out.numel()) * dtypeSize(out.dtype);
  plan.streamStores = !plan.out.staged() && outBytes >= kStreamingStoreBytes;
  return plan;
}

MaskedStaging::Dense MaskedStaging::prepare(void* memory) const {
  Dense dense;
  if (readInput) dense.input = input.read(memory);
  if (readMask) dense.mask = static_cast<const uint8_t*>(mask.read(memory));
  dense.out = out.target(memory);
  return dense;
}

void forEachMaskChunk(int64_t n, const std::function<void(int64_t begin, int64_t end)>& fn) {
  parallelFor(n, kChunkElements, fn);
}

}  // namespace gradkit::ops
