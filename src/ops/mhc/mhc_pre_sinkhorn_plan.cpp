#include "ops/mhc/mhc_pre_sinkhorn_plan.h"

#include <algorithm>

#include "core/int_math.h"
#include "core/kernel_select.h"
#include "core/parallel.h"
#include "ops/mhc/kernels/mhc_pre_kernel.h"
#include "ops/mhc/kernels/mhc_pre_token.h"
#include "ops/mhc/mhc_pre_sinkhorn_check.h"
#include "runtime/runtime.h"

namespace gradkit::ops {
namespace {

/** Tokens per block of the backward's Sinkhorn pass (MhcPre's block in the forward). */
constexpr int64_t kStepBlockTokens = kernels::kMhcPreBlockTokens;

const kernels::SinkhornKernels& sinkhornKernels() {
  return chooseKernels(kernels::kSinkhornSimdKernels, kernels::kSinkhornScalarKernels);
}

}  // namespace

MhcPreSinkhornPlan planMhcPreSinkhorn(const MhcPreSinkhornArgs& args) {
  MhcPreSinkhornPlan plan;
  plan.saving = args.needBackward;
  // The NPU's cube unit multiplies x and phi as HF32 in every profile (upstream's kernels set HF32 mode 1).
  const MhcPreArgs pre{kMhcPreApi,
                       args.x,
                       args.phi,
                       args.alpha,
                       args.bias,
                       nullptr,
                       args.normEps,
                       args.hcEps,
                       kMhcHf32Matmul,
                       args.hin,
                       args.hPost,
                       args.hRes,
                       plan.saving ? args.invRms : nullptr,
                       plan.saving ? args.hcBeforeNorm : nullptr,
                       plan.saving ? args.hPre : nullptr};
  plan.pre = planMhcPre(pre);
  plan.preRegion = plan.workspace.bookNested("MhcPre", plan.pre.workspace);
  const MhcPreSinkhornDims dims = mhcPreSinkhornDimsOf(args);
  plan.steps.tokens = dims.mhc.tokens;
  plan.steps.n = dims.mhc.streams;
  plan.steps.iters = dims.iters;
  plan.steps.eps = static_cast<float>(args.hcEps);
  if (plan.saving) {
    plan.sumOut = StagedTensor::planUnlessDense(*args.sumOut, "sumOut staging", plan.workspace);
    plan.normOut = StagedTensor::planUnlessDense(*args.normOut, "normOut staging", plan.workspace);
  }
  const int64_t blockTokens = std::min(kernels::kMhcPreBlockTokens, dims.mhc.tokens);
  plan.scratchFloats =
      plan.saving ? roundUp(kernels::preSinkhornScratchFloats(blockTokens, plan.steps.n, plan.steps.iters), 16) : 0;
  plan.stepScratch = plan.workspace.bookArray("Sinkhorn steps of a block (per slot)",
                                              static_cast<uint64_t>(plan.pre.slots * plan.scratchFloats), 4);
  plan.sinkhorn = &sinkhornKernels();
  return plan;
}

aclnnStatus MhcPreSinkhornPlan::run(void* memory) const {
  float* sums = saving ? static_cast<float*>(sumOut.target(memory)) : nullptr;
  float* norms = saving ? static_cast<float*>(normOut.target(memory)) : nullptr;
  float* scratch = stepScratch.in<float>(memory);
  const MhcPreBlockHook project = [&](const kernels::MhcPreProblem& p, int64_t slot, int64_t first, int64_t count) {
    kernels::preSinkhornForwardBlock(*sinkhorn, steps, norms, sums, p.hRes, first, count,
                                     scratch + slot * scratchFloats);
  };
  const aclnnStatus status = pre.run(preRegion.in(memory), project);
  if (status != ACLNN_SUCCESS) return status;
  if (saving) {
    sumOut.writeBack(memory);
    normOut.writeBack(memory);
  }
  return ACLNN_SUCCESS;
}

MhcPreSinkhornBackwardPlan planMhcPreSinkhornBackward(const MhcPreSinkhornBackwardArgs& args) {
  MhcPreSinkhornBackwardPlan plan;
  WorkspaceBooking& booking = plan.workspace;
  plan.gradHin = StagedTensor::planUnlessDense(*args.gradHin, "gradHin staging", booking);
  plan.gradHPost = StagedTensor::planUnlessDense(*args.gradHPost, "gradHPost staging", booking);
  plan.gradHRes = StagedTensor::planUnlessDense(*args.gradHRes, "gradHRes staging", booking);
  plan.x = StagedTensor::planUnlessDense(*args.x, "x staging", booking);
  plan.phi = StagedTensor::planUnlessDense(*args.phi, "phi staging", booking);
  plan.alpha = StagedTensor::planUnlessDense(*args.alpha, "alpha staging", booking);
  plan.bias = StagedTensor::planUnlessDense(*args.bias, "bias staging", booking);
  plan.hPre = StagedTensor::planUnlessDense(*args.hPre, "hPre staging", booking);
  plan.hcBeforeNorm = StagedTensor::planUnlessDense(*args.hcBeforeNorm, "hcBeforeNorm staging", booking);
  plan.invRms = StagedTensor::planUnlessDense(*args.invRms, "invRms staging", booking);
  plan.sumOut = StagedTensor::planUnlessDense(*args.sumOut, "sumOut staging", booking);
  plan.normOut = StagedTensor::planUnlessDense(*args.normOut, "normOut staging", booking);
  plan.gradX = StagedTensor::planUnlessDense(*args.gradX, "gradX staging", booking);
  plan.gradPhi = StagedTensor::planUnlessDense(*args.gradPhi, "gradPhi staging", booking);
  plan.gradAlpha = StagedTensor::planUnlessDense(*args.gradAlpha, "gradAlpha staging", booking);
  plan.gradBias = StagedTensor::planUnlessDense(*args.gradBias, "gradBias staging", booking);

  const MhcPreSinkhornDims dims = mhcPreSinkhornBackwardDimsOf(args);
  const MhcDims& d = dims.mhc;
  plan.steps.tokens = d.tokens;
  plan.steps.n = d.streams;
  plan.steps.iters = dims.iters;
  plan.steps.eps = static_cast<float>(args.hcEps);
  plan.hPost = booking.bookArray("hPost (recomputed)", static_cast<uint64_t>(d.tokens * d.streams), 4);
  plan.gradLogits = booking.bookArray("gradient of the hRes logits", static_cast<uint64_t>(d.tokens * d.residual), 4);
  const int64_t blocks = ceilDiv(d.tokens, kStepBlockTokens);
  plan.slots = std::max<int64_t>(1, std::min<int64_t>(threadCount(), blocks));
  plan.scratchFloats =
      roundUp(kernels::preSinkhornScratchFloats(std::min(kStepBlockTokens, d.tokens), d.streams, dims.iters), 16);
  plan.stepScratch = booking.bookArray("Sinkhorn steps of a block (per slot)",
                                       static_cast<uint64_t>(plan.slots * plan.scratchFloats), 4);
  plan.sinkhorn = &sinkhornKernels();
  // Upstream's Ascend950 backward multiplies in fp32; the A2/A3 kernel rounds the operands to HF32.
  const bool hf32 = rt::currentSoc() != rt::Soc::Ascend950;
  plan.passes = planMhcPreBackwardPasses(d, args.x->dtype, static_cast<float>(args.hcEps), hf32, false, booking);
  return plan;
}

aclnnStatus MhcPreSinkhornBackwardPlan::run(void* memory) const {
  const auto* alphaValues = static_cast<const float*>(alpha.read(memory));
  const auto* biasValues = static_cast<const float*>(bias.read(memory));
  const auto* mix = static_cast<const float*>(hcBeforeNorm.read(memory));
  const auto* inv = static_cast<const float*>(invRms.read(memory));
  const auto* gradRes = static_cast<const float*>(gradHRes.read(memory));
  const auto* norms = static_cast<const float*>(normOut.read(memory));
  const auto* sums = static_cast<const float*>(sumOut.read(memory));
  float* post = hPost.in<float>(memory);
  float* logits = gradLogits.in<float>(memory);
  float* scratch = stepScratch.in<float>(memory);
  const int64_t n = steps.n, f = n * n + 2 * n, tokens = steps.tokens;
  const int64_t blocks = ceilDiv(tokens, kStepBlockTokens);
  // Slot q runs blocks [q * blocks / slots, (q + 1) * blocks / slots): per-token work, so any split gives the bits.
  parallelFor(slots, 1, [&](int64_t begin, int64_t end) {
    for (int64_t slot = begin; slot < end; ++slot) {
      for (int64_t block = slot * blocks / slots; block < (slot + 1) * blocks / slots; ++block) {
        const int64_t first = block * kStepBlockTokens, count = std::min(kStepBlockTokens, tokens - first);
        for (int64_t t = first; t < first + count; ++t) {  // hPost in the forward's order (mhc_pre_gates.cpp)
          for (int64_t i = 0; i < n; ++i) {
            const float w = mix[t * f + n + i] * inv[t];
            const float z = w * alphaValues[1] + biasValues[n + i];
            post[t * n + i] = 2.0f * kernels::mhc_pre::gateSigmoid(z);
          }
        }
        kernels::preSinkhornBackwardBlock(*sinkhorn, steps, norms, sums, gradRes, logits, first, count,
                                          scratch + slot * scratchFloats);
      }
    }
  });

  MhcPreBackwardIn in{};
  in.x = static_cast<const unsigned char*>(x.read(memory));
  in.phi = static_cast<const float*>(phi.read(memory));
  in.alpha = alphaValues;
  in.gradHIn = static_cast<const unsigned char*>(gradHin.read(memory));
  in.gradHPost = static_cast<const float*>(gradHPost.read(memory));
  in.gradHRes = logits;
  in.invRms = inv;
  in.hMix = mix;
  in.hPre = static_cast<const float*>(hPre.read(memory));
  in.hPost = post;
  MhcPreBackwardOut out{};
  out.gradX = static_cast<unsigned char*>(gradX.target(memory));
  out.gradPhi = static_cast<float*>(gradPhi.target(memory));
  out.gradAlpha = static_cast<float*>(gradAlpha.target(memory));
  out.gradBias = static_cast<float*>(gradBias.target(memory));
  runMhcPreBackwardPasses(passes, in, out, memory);
  gradX.writeBack(memory);
  gradPhi.writeBack(memory);
  gradAlpha.writeBack(memory);
  gradBias.writeBack(memory);
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
