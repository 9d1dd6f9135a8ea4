#include "ops/mhc/mhc_sinkhorn_plan.h"

#include "core/kernel_select.h"
#include "core/parallel.h"
#include "opapi/tensor.h"

namespace gradkit::ops {
namespace {

// Tokens per parallel task: each token is independent, so the split changes no bit; 16 tokens of 20 iterations
// write ~80 KB of saved steps (n = 4), enough to amortise a task.
constexpr int64_t kTokenGrain = 16;

kernels::SinkhornLayout layoutOf(const MhcSinkhornDims& dims) {
  kernels::SinkhornLayout layout;
  layout.tokens = dims.tokens;
  layout.n = dims.n;
  layout.iters = dims.iters;
  layout.split = kernels::ascend950SinkhornSplit(dims.tokens, dims.n);
  return layout;
}

}  // namespace

MhcSinkhornPlan planMhcSinkhorn(const MhcSinkhornArgs& args) {
  MhcSinkhornPlan plan;
  WorkspaceBooking& booking = plan.workspace;
  plan.saves = mhcSinkhornSaves(args);
  plan.x = StagedTensor::planUnlessDense(*args.x, "x staging", booking);
  plan.output = StagedTensor::planUnlessDense(*args.output, "output staging", booking);
  if (plan.saves) {
    plan.normOut = StagedTensor::planUnlessDense(*args.normOut, "normOut staging", booking);
    plan.sumOut = StagedTensor::planUnlessDense(*args.sumOut, "sumOut staging", booking);
  }
  plan.problem.layout = layoutOf(mhcSinkhornDimsOf(args));
  plan.problem.eps = args.eps;
  // Saved steps this large are read back only by the backward, long after: they would only evict x from the cache.
  plan.problem.streamSaved = plan.saves && !plan.normOut.staged() && !plan.sumOut.staged() &&
                             static_cast<uint64_t>(args.normOut->numel()) * sizeof(float) >= kStreamingStoreBytes;
  plan.kernels = &chooseKernels(kernels::kSinkhornSimdKernels, kernels::kSinkhornScalarKernels);
  return plan;
}

aclnnStatus MhcSinkhornPlan::run(void* memory) const {
  kernels::SinkhornProblem p = problem;
  p.x = static_cast<const float*>(x.read(memory));
  p.output = static_cast<float*>(output.target(memory));
  p.normOut = saves ? static_cast<float*>(normOut.target(memory)) : nullptr;
  p.sumOut = saves ? static_cast<float*>(sumOut.target(memory)) : nullptr;
  parallelFor(p.layout.tokens, kTokenGrain,
              [&](int64_t begin, int64_t end) { kernels->forward(p, begin, end - begin); });
  output.writeBack(memory);
  if (saves) {
    normOut.writeBack(memory);
    sumOut.writeBack(memory);
  }
  return ACLNN_SUCCESS;
}

MhcSinkhornBackwardPlan planMhcSinkhornBackward(const MhcSinkhornBackwardArgs& args) {
  MhcSinkhornBackwardPlan plan;
  WorkspaceBooking& booking = plan.workspace;
  plan.gradOutput = StagedTensor::planUnlessDense(*args.gradOutput, "gradOutput staging", booking);
  plan.normOut = StagedTensor::planUnlessDense(*args.normOut, "normOut staging", booking);
  plan.sumOut = StagedTensor::planUnlessDense(*args.sumOut, "sumOut staging", booking);
  plan.out = StagedTensor::planUnlessDense(*args.out, "out staging", booking);
  plan.problem.layout = layoutOf(mhcSinkhornBackwardDimsOf(args));
  plan.kernels = &chooseKernels(kernels::kSinkhornSimdKernels, kernels::kSinkhornScalarKernels);
  return plan;
}

aclnnStatus MhcSinkhornBackwardPlan::run(void* memory) const {
  kernels::SinkhornBackwardProblem p = problem;
  p.gradOutput = static_cast<const float*>(gradOutput.read(memory));
  p.normOut = static_cast<const float*>(normOut.read(memory));
  p.sumOut = static_cast<const float*>(sumOut.read(memory));
  p.out = static_cast<float*>(out.target(memory));
  parallelFor(p.layout.tokens, kTokenGrain,
              [&](int64_t begin, int64_t end) { kernels->backward(p, begin, end - begin); });
  out.writeBack(memory);
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
