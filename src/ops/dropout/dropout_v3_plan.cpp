#include "ops/dropout/dropout_v3_plan.h"

#include <algorithm>

#include "base/dtype.h"
#include "core/kernel_select.h"
#include "core/parallel.h"
#include "opapi/tensor_copy.h"
#include "ops/dropout/gen_mask_stream.h"

namespace gradkit::ops {
namespace {

bool sameView(const aclTensor& a, const aclTensor& b) {
  return a.data == b.data && a.offset == b.offset && a.viewDims == b.viewDims && a.strides == b.strides;
}

}  // namespace

DropoutV3Plan planDropoutV3(const DropoutV3Args& args) {
  const aclTensor& input = *args.input;
  const aclTensor& out = *args.out;
  const aclTensor& mask = *args.maskOut;
  const double p = args.p;
  DropoutV3Plan plan;
  plan.mode = p == 0.0   ? DropoutV3Plan::Mode::kCopy
              : p == 1.0 ? DropoutV3Plan::Mode::kZeros
                         : DropoutV3Plan::Mode::kDropout;
  plan.generator = planDropoutMask(input.numel(), p, args.seed, args.offset);
  const float keep = dropoutKeepProbability(p);
  plan.scale = 1.0f / keep;

  const bool dropout = plan.mode == DropoutV3Plan::Mode::kDropout;
  // A copy reads any input layout and writes out densely in one pass when out is contiguous.
  const bool stageOut =
      !out.isContiguous() && (dropout || plan.mode == DropoutV3Plan::Mode::kZeros || !input.isContiguous());
  plan.input = StagedTensor::plan(input, dropout && !input.isContiguous(), "input staging", plan.workspace);
  plan.out = StagedTensor::plan(out, stageOut, "out staging", plan.workspace);
  plan.mask = StagedTensor::plan(mask, !mask.isContiguous(), "mask staging", plan.workspace);
  const uint64_t dataBytes = static_cast<uint64_t>(input.numel()) * dtypeSize(input.dtype);
  plan.streamStores = dropout && !stageOut && dataBytes >= kStreamingStoreBytes;
  plan.kernels = &chooseKernels(kernels::kV3GradSimdKernels, kernels::kV3GradScalarKernels);
  return plan;
}

void DropoutV3Plan::runDropout(const void* x, void* y, uint8_t* bits) const {
  const aclDataType dtype = input.view.dtype;
  const size_t size = dtypeSize(dtype);
  const int64_t n = generator.n;
  const auto* from = static_cast<const unsigned char*>(x);
  auto* to = static_cast<unsigned char*>(y);
  // One pass per chunk of whole mask bytes: its mask, then its elements while the mask is in cache.
  parallelFor(generator.maskBytes, kMaskChunkBytes, [&](int64_t begin, int64_t end) {
    uint8_t* chunkBits = bits + begin;
    generator.writeBytes(begin, end, chunkBits, generator.stream);
    const int64_t first = begin * 8, last = std::min(n, end * 8);
    if (first >= last) return;
    const size_t at = static_cast<size_t>(first) * size;
    kernels->apply(dtype, dtype, from + at, chunkBits, scale, to + at, last - first, streamStores);
  });
}

aclnnStatus DropoutV3Plan::run(void* memory) const {
  auto* bits = static_cast<uint8_t*>(mask.target(memory));
  void* y = out.target(memory);
  const uint64_t dataBytes = static_cast<uint64_t>(generator.n) * dtypeSize(input.view.dtype);

  switch (mode) {
    case Mode::kCopy:
      fillDropoutMask(bits, generator.maskBytes, 0xFF);
      if (out.staged()) {
        copyToContiguous(input.view, y);
        out.writeBack(memory);
      } else if (!out.view.isContiguous()) {
        copyFromContiguous(input.view.firstElement(), out.view);  // input is contiguous here
      } else if (!sameView(input.view, out.view)) {
        copyToContiguous(input.view, y);
      }
      break;
    case Mode::kZeros:
      fillDropoutMask(bits, generator.maskBytes, 0x00);
      fillDropoutMask(static_cast<uint8_t*>(y), static_cast<int64_t>(dataBytes), 0x00);  // +0 in every dtype
      out.writeBack(memory);
      break;
    case Mode::kDropout:
      runDropout(input.read(memory), y, bits);
      out.writeBack(memory);
      break;
  }
  mask.writeBack(memory);
  return ACLNN_SUCCESS;
}

const OpDefinition<DropoutV3Args, DropoutV3Plan> kDropoutV3{
    kDropoutV3Api, checkDropoutV3, [](const DropoutV3Args& args) { return args.input->isEmpty(); }, planDropoutV3};

}  // namespace gradkit::ops
