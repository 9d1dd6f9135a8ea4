#include "ops/mhc/block_residuals_plan.h"

#include <algorithm>
#include <cstring>

#include "base/dtype.h"
#include "core/kernel_select.h"
#include "core/parallel.h"
#include "opapi/tensor.h"

namespace gradkit::ops {
namespace {

// Forward tokens per parallel task: each token is independent, so the split changes no bit.
constexpr int64_t kTokenGrain = 16;

uint64_t paddedHidden(int64_t hidden) { return static_cast<uint64_t>(kernels::blockResidualsPaddedHidden(hidden)); }

}  // namespace

BlockResidualsPlan planBlockResiduals(const BlockResidualsArgs& args) {
  BlockResidualsPlan plan;
  WorkspaceBooking& booking = plan.workspace;
  plan.saves = args.needBackward;
  plan.partialBlock = StagedTensor::planUnlessDense(*args.partialBlock, "partialBlock staging", booking);
  plan.blockRes = StagedTensor::planUnlessDense(*args.blockRes, "blockRes staging", booking);
  plan.projWeight = StagedTensor::planUnlessDense(*args.projWeight, "projWeight staging", booking);
  plan.normWeight = StagedTensor::planUnlessDense(*args.normWeight, "normWeight staging", booking);
  plan.hiddenStates = StagedTensor::planUnlessDense(*args.hiddenStates, "hiddenStates staging", booking);
  if (plan.saves) {
    plan.invNorm = StagedTensor::planUnlessDense(*args.invNorm, "invNorm staging", booking);
    plan.probs = StagedTensor::planUnlessDense(*args.probs, "probs staging", booking);
  }
  const BlockResidualsDims dims = blockResidualsDimsOf(*args.partialBlock, *args.blockRes);
  plan.weight = booking.bookArray("score weight", paddedHidden(dims.hidden), sizeof(float));
  kernels::BlockResidualsProblem& p = plan.problem;
  p.tokens = dims.tokens;
  p.blocks = dims.blocks;
  p.hidden = dims.hidden;
  p.dtype = args.partialBlock->dtype;
  p.normEps = static_cast<float>(args.normEps);
  plan.kernels = &chooseKernels(kernels::kBlockResidualsSimdKernels, kernels::kBlockResidualsScalarKernels);
  return plan;
}

aclnnStatus BlockResidualsPlan::run(void* memory) const {
  kernels::BlockResidualsProblem p = problem;
  p.partialBlock = partialBlock.read(memory);
  p.blockRes = blockRes.read(memory);
  float* w = weight.in<float>(memory);
  kernels::blockResidualsScoreWeight(p.dtype, normWeight.read(memory), projWeight.read(memory), p.hidden, w);
  p.weight = w;
  p.hiddenStates = hiddenStates.target(memory);
  if (saves) {
    p.invNorm = static_cast<float*>(invNorm.target(memory));
    p.probs = static_cast<float*>(probs.target(memory));
  }
  parallelFor(p.tokens, kTokenGrain, [&](int64_t begin, int64_t end) { kernels->forward(p, begin, end - begin); });
  hiddenStates.writeBack(memory);
  if (saves) {
    invNorm.writeBack(memory);
    probs.writeBack(memory);
  }
  return ACLNN_SUCCESS;
}

BlockResidualsGradPlan planBlockResidualsGrad(const BlockResidualsGradArgs& args) {
  BlockResidualsGradPlan plan;
  WorkspaceBooking& booking = plan.workspace;
  plan.partialBlock = StagedTensor::planUnlessDense(*args.partialBlock, "partialBlock staging", booking);
  plan.blockRes = StagedTensor::planUnlessDense(*args.blockRes, "blockRes staging", booking);
  plan.projWeight = StagedTensor::planUnlessDense(*args.projWeight, "projWeight staging", booking);
  plan.normWeight = StagedTensor::planUnlessDense(*args.normWeight, "normWeight staging", booking);
  plan.gradHidden = StagedTensor::planUnlessDense(*args.gradHiddenStates, "gradHiddenStates staging", booking);
  plan.invNorm = StagedTensor::planUnlessDense(*args.invNorm, "invNorm staging", booking);
  plan.probs = StagedTensor::planUnlessDense(*args.probs, "probs staging", booking);
  plan.gradPartialBlock = StagedTensor::planUnlessDense(*args.gradPartialBlock, "gradPartialBlock staging", booking);
  plan.gradBlockRes = StagedTensor::planUnlessDense(*args.gradBlockRes, "gradBlockRes staging", booking);
  plan.gradProjWeight = StagedTensor::planUnlessDense(*args.gradProjWeight, "gradProjWeight staging", booking);
  plan.gradNormWeight = StagedTensor::planUnlessDense(*args.gradNormWeight, "gradNormWeight staging", booking);
  const BlockResidualsDims dims = blockResidualsDimsOf(*args.partialBlock, *args.blockRes);
  plan.chunks = (dims.tokens + kBlockResidualsGradChunk - 1) / kBlockResidualsGradChunk;
  if (dims.tokens > 0) {  // T = 0 only zero-fills the weight gradients
    const uint64_t padded = paddedHidden(dims.hidden);
    const uint64_t slots = static_cast<uint64_t>(std::min(plan.chunks, kBlockResidualsGradGroup));
    plan.weight = booking.bookArray("score weight", padded, sizeof(float));
    plan.partials = booking.bookArray("chunk weight sums", slots * padded, sizeof(float));  // slots <= 64
    plan.total = booking.bookArray("weight sum", padded, sizeof(float));
  }
  kernels::BlockResidualsGradProblem& p = plan.problem;
  p.tokens = dims.tokens;
  p.blocks = dims.blocks;
  p.hidden = dims.hidden;
  p.dtype = args.partialBlock->dtype;
  plan.kernels = &chooseKernels(kernels::kBlockResidualsSimdKernels, kernels::kBlockResidualsScalarKernels);
  return plan;
}

aclnnStatus BlockResidualsGradPlan::run(void* memory) const {
  kernels::BlockResidualsGradProblem p = problem;
  void* gradProj = gradProjWeight.target(memory);
  void* gradNorm = gradNormWeight.target(memory);
  if (p.tokens == 0) {
    const size_t bytes = static_cast<size_t>(p.hidden) * dtypeSize(p.dtype);
    std::memset(gradProj, 0, bytes);
    std::memset(gradNorm, 0, bytes);
  } else {
    const void* proj = projWeight.read(memory);
    const void* norm = normWeight.read(memory);
    float* w = weight.in<float>(memory);
    kernels::blockResidualsScoreWeight(p.dtype, norm, proj, p.hidden, w);
    p.weight = w;
    p.partialBlock = partialBlock.read(memory);
    p.blockRes = blockRes.read(memory);
    p.gradHidden = gradHidden.read(memory);
    p.invNorm = static_cast<const float*>(invNorm.read(memory));
    p.probs = static_cast<const float*>(probs.read(memory));
    p.gradPartialBlock = gradPartialBlock.target(memory);
    p.gradBlockRes = gradBlockRes.target(memory);
    const int64_t padded = kernels::blockResidualsPaddedHidden(p.hidden);
    float* slots = partials.in<float>(memory);
    float* sum = total.in<float>(memory);
    std::fill(sum, sum + padded, 0.0f);
    // Groups of chunks: each chunk's partial sum in its own slot, then added to the total in chunk order, so the
    // sequence of additions is the same for any thread count and any group size.
    for (int64_t group = 0; group < chunks; group += kBlockResidualsGradGroup) {
      const int64_t count = std::min(kBlockResidualsGradGroup, chunks - group);
      parallelFor(count, 1, [&](int64_t begin, int64_t end) {
        for (int64_t c = begin; c < end; ++c) {
          float* slot = slots + c * padded;
          std::fill(slot, slot + padded, 0.0f);
          const int64_t first = (group + c) * kBlockResidualsGradChunk;
          kernels->backward(p, first, std::min(kBlockResidualsGradChunk, p.tokens - first), slot);
        }
      });
      kernels::blockResidualsAddPartials(slots, count, p.hidden, sum);
    }
    kernels::blockResidualsWeightGrads(p.dtype, sum, proj, norm, p.hidden, gradProj, gradNorm);
    gradPartialBlock.writeBack(memory);
    gradBlockRes.writeBack(memory);
  }
  gradProjWeight.writeBack(memory);
  gradNormWeight.writeBack(memory);
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
