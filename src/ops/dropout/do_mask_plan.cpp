#include "ops/dropout/do_mask_plan.h"

#include <cfloat>
#include <cmath>
#include <cstring>

#include "base/dtype.h"
#include "core/kernel_select.h"
#include "gradkit/float_convert.h"
#include "ops/dropout/kernels/do_mask_kernel.h"

namespace gradkit::ops {
namespace {

// Upstream's host helper compares prob with DBL_EPSILON in double; its kernel compares keep with the same
// constant narrowed to float.
constexpr float kKernelEpsilon = static_cast<float>(DBL_EPSILON);

DoMaskMode modeFor(double prob, float keep) {
  if (std::fabs(prob) <= DBL_EPSILON) return DoMaskMode::Copy;
  if (std::fabs(prob - 1.0) <= DBL_EPSILON) return DoMaskMode::Zeros;
  if (std::fabs(keep) <= kKernelEpsilon) return DoMaskMode::Zeros;
  if (std::fabs(keep - 1.0f) <= kKernelEpsilon) return DoMaskMode::Copy;
  return DoMaskMode::Apply;
}

}  // namespace

float doMaskKeep(double prob, aclDataType dtype) {
  const auto keep = static_cast<float>(1.0 - prob);
  switch (dtype) {
    case ACL_FLOAT16:
      return halfToFloat(floatToHalf(keep));
    case ACL_BF16:
      return bf16ToFloat(floatToBf16(keep));
    default:
      return keep;
  }
}

DoMaskPlan planDoMask(const DropoutDoMaskArgs& args) {
  const double prob = args.prob;
  const float keep = doMaskKeep(prob, args.self->dtype);
  DoMaskPlan plan;
  plan.mode = modeFor(prob, keep);
  if (plan.mode == DoMaskMode::Apply) plan.reciprocal = 1.0f / keep;
  plan.staging = planMaskedStaging(*args.self, *args.mask, *args.out, /*readInput=*/plan.mode != DoMaskMode::Zeros,
                                   /*readMask=*/plan.mode == DoMaskMode::Apply, plan.workspace);
  plan.kernels = &chooseKernels(kernels::kDoMaskSimdKernels, kernels::kDoMaskScalarKernels);
  return plan;
}

aclnnStatus DoMaskPlan::run(void* memory) const {
  const MaskedStaging::Dense dense = staging.prepare(memory);
  const aclDataType inDtype = staging.input.view.dtype;
  const aclDataType outDtype = staging.out.view.dtype;
  const size_t inSize = dtypeSize(inDtype);
  const size_t outSize = dtypeSize(outDtype);
  const auto* x = static_cast<const unsigned char*>(dense.input);
  auto* y = static_cast<unsigned char*>(dense.out);
  forEachMaskChunk(staging.out.view.numel(), [&](int64_t begin, int64_t end) {
    unsigned char* to = y + static_cast<size_t>(begin) * outSize;
    const int64_t count = end - begin;
    switch (mode) {
      case DoMaskMode::Zeros:
        std::memset(to, 0, static_cast<size_t>(count) * outSize);  // +0 is all-zero bits in every dtype
        return;
      case DoMaskMode::Copy:
        kernels::dropoutCopyConvert(inDtype, outDtype, x + static_cast<size_t>(begin) * inSize, to, count);
        return;
      case DoMaskMode::Apply: {
        const unsigned char* from = x + static_cast<size_t>(begin) * inSize;
        const uint8_t* bits = dense.mask + begin / 8;
        kernels->apply(inDtype, outDtype, from, bits, reciprocal, to, count, staging.streamStores);
        return;
      }
    }
  });
  staging.finish(memory);
  return ACLNN_SUCCESS;
}

const OpDefinition<DropoutDoMaskArgs, DoMaskPlan> kDropoutDoMask{
    kDropoutDoMaskApi, checkDropoutDoMask,
    // An empty self, or an empty mask (upstream's quirk), computes and writes nothing.
    [](const DropoutDoMaskArgs& args) { return args.self->isEmpty() || args.mask->isEmpty(); }, planDoMask};

const OpDefinition<DropoutBackwardArgs, DoMaskPlan> kDropoutBackward{
    kDropoutBackwardApi, checkDropoutBackward,
    [](const DropoutBackwardArgs& args) { return args.gradOutput->isEmpty(); },
    [](const DropoutBackwardArgs& args) {
      return planDoMask({args.gradOutput, args.mask, dropoutBackwardProb(args.scale), args.out});
    }};

}  // namespace gradkit::ops
