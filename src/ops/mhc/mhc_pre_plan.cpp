#include "ops/mhc/mhc_pre_plan.h"

#include <algorithm>

#include "core/kernel_select.h"
#include "core/parallel.h"
#include "opapi/tensor.h"

namespace gradkit::ops {
namespace {

// K values of phi one packing task handles.
constexpr int64_t kPackGrain = 1024;

}  // namespace

MhcPrePlan planMhcPre(const MhcPreArgs& args) {
  MhcPrePlan plan;
  plan.dims = mhcDimsOf(*args.x, *args.phi);
  const MhcDims& dims = plan.dims;
  WorkspaceBooking& booking = plan.workspace;
  plan.hasGamma = args.gamma != nullptr;
  plan.hasResidual = args.alpha->numel() == 3;
  plan.hasCaches = args.invRms != nullptr;

  plan.x = StagedTensor::planUnlessDense(*args.x, "x staging", booking);
  plan.phi = StagedTensor::planUnlessDense(*args.phi, "phi staging", booking);
  plan.alpha = StagedTensor::planUnlessDense(*args.alpha, "alpha staging", booking);
  plan.bias = StagedTensor::planUnlessDense(*args.bias, "bias staging", booking);
  if (plan.hasGamma) plan.gamma = StagedTensor::planUnlessDense(*args.gamma, "gamma staging", booking);
  plan.hIn = StagedTensor::planUnlessDense(*args.hIn, "hIn staging", booking);
  plan.hPost = StagedTensor::planUnlessDense(*args.hPost, "hPost staging", booking);
  if (plan.hasResidual) plan.hRes = StagedTensor::planUnlessDense(*args.hRes, "hRes staging", booking);
  if (plan.hasCaches) {
    plan.invRms = StagedTensor::planUnlessDense(*args.invRms, "invRms staging", booking);
    plan.hMix = StagedTensor::planUnlessDense(*args.hMix, "hMix staging", booking);
    plan.hPre = StagedTensor::planUnlessDense(*args.hPre, "hPre staging", booking);
  }

  kernels::MhcPreProblem& p = plan.problem;
  p.tokens = dims.tokens;
  p.streams = dims.streams;
  p.hidden = dims.hidden;
  p.fusion = dims.fusion;
  p.noResidual = !plan.hasResidual;
  p.hf32 = args.opImplMode == kMhcHf32Matmul;
  p.xDtype = args.x->dtype;
  p.normEps = static_cast<float>(args.normEps);
  p.hcEps = static_cast<float>(args.hcEps);
  p.inverseWidth = 1.0f / static_cast<float>(dims.width());
  const uint64_t hInBytes = static_cast<uint64_t>(dims.tokens * dims.hidden) * 2;
  p.streamHIn = !plan.hIn.staged() && hInBytes >= kStreamingStoreBytes;

  plan.kernels = &chooseKernels(kernels::kMhcPreSimdKernels, kernels::kMhcPreScalarKernels);
  p.pairedPhi = plan.kernels->pairedPhi();
  plan.packedPhi =
      booking.bookArray("packed phi", static_cast<uint64_t>(kernels::mhcPrePackedPhiFloats(p)), sizeof(float));
  const int64_t blocks = (dims.tokens + kernels::kMhcPreBlockTokens - 1) / kernels::kMhcPreBlockTokens;
  plan.slots = std::max<int64_t>(1, std::min<int64_t>(threadCount(), blocks));
  plan.slotFloats = (kernels::mhcPreScratchFloats(p) + 15) / 16 * 16;  // each slot 64-byte aligned
  plan.scratch = booking.bookArray("block scratch (per thread)", static_cast<uint64_t>(plan.slots * plan.slotFloats),
                                   sizeof(float));
  return plan;
}

aclnnStatus MhcPrePlan::run(void* memory, const MhcPreBlockHook& afterBlock) const {
  kernels::MhcPreProblem p = problem;
  p.x = x.read(memory);
  const auto* phiValues = static_cast<const float*>(phi.read(memory));
  const auto* alphaValues = static_cast<const float*>(alpha.read(memory));
  std::copy(alphaValues, alphaValues + (hasResidual ? 3 : 2), p.alpha);
  p.bias = static_cast<const float*>(bias.read(memory));
  p.gamma = hasGamma ? static_cast<const float*>(gamma.read(memory)) : nullptr;
  p.hIn = hIn.target(memory);
  p.hPost = static_cast<float*>(hPost.target(memory));
  p.hRes = hasResidual ? static_cast<float*>(hRes.target(memory)) : nullptr;
  if (hasCaches) {
    p.invRms = static_cast<float*>(invRms.target(memory));
    p.hMix = static_cast<float*>(hMix.target(memory));
    p.hPre = static_cast<float*>(hPre.target(memory));
  }

  auto* packed = packedPhi.in<float>(memory);
  parallelFor(p.width(), kPackGrain,
              [&](int64_t begin, int64_t end) { kernels::mhcPrePackPhi(p, phiValues, begin, end, packed); });
  p.packedPhi = packed;

  // Slot s runs blocks [s * blocks / slots, (s + 1) * blocks / slots); a block's bits do not depend on its slot.
  const int64_t blocks = (p.tokens + kernels::kMhcPreBlockTokens - 1) / kernels::kMhcPreBlockTokens;
  float* slotBase = scratch.in<float>(memory);
  parallelFor(slots, 1, [&](int64_t begin, int64_t end) {
    for (int64_t slot = begin; slot < end; ++slot) {
      float* slotScratch = slotBase + slot * slotFloats;
      for (int64_t block = slot * blocks / slots; block < (slot + 1) * blocks / slots; ++block) {
        const int64_t first = block * kernels::kMhcPreBlockTokens;
        const int64_t count = std::min(kernels::kMhcPreBlockTokens, p.tokens - first);
        kernels->block(p, first, count, slotScratch);
        if (afterBlock) afterBlock(p, slot, first, count);
      }
    }
  });

  hIn.writeBack(memory);
  hPost.writeBack(memory);
  if (hasResidual) hRes.writeBack(memory);
  if (hasCaches) {
    invRms.writeBack(memory);
    hMix.writeBack(memory);
    hPre.writeBack(memory);
  }
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
