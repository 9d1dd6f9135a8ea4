#include "ops/mhc/mhc_post_plan.h"

#include "core/kernel_select.h"
#include "core/parallel.h"
#include "core/tile_path.h"
#include "opapi/tensor.h"

namespace gradkit::ops {
namespace {

// Tokens per parallel task: each token is independent, so the split changes no bit; 8 tokens of N = 4, D = 2560
// move ~300 KB, enough to amortise a task.
constexpr int64_t kTokenGrain = 8;

/** A written output this large takes non-temporal stores: it would only evict the inputs from the cache. */
bool streamedBytes(const aclTensor& output) {
  return static_cast<uint64_t>(output.numel()) * 2 >= kStreamingStoreBytes;
}

template <class Problem>
void setSizes(Problem& problem, const aclTensor& x) {
  const MhcPostDims dims = mhcPostDimsOf(x);
  problem.tokens = dims.tokens;
  problem.streams = dims.streams;
  problem.hidden = dims.hidden;
  problem.dtype = x.dtype;
  problem.bf16Convert = cpuMatrixFeatures().avx512bf16;
}

}  // namespace

MhcPostPlan planMhcPost(const MhcPostArgs& args) {
  MhcPostPlan plan;
  WorkspaceBooking& booking = plan.workspace;
  plan.hasHRes = args.hRes != nullptr;
  plan.x = StagedTensor::planUnlessDense(*args.x, "x staging", booking);
  if (plan.hasHRes) plan.hRes = StagedTensor::planUnlessDense(*args.hRes, "hRes staging", booking);
  plan.hOut = StagedTensor::planUnlessDense(*args.hOut, "hOut staging", booking);
  plan.hPost = StagedTensor::planUnlessDense(*args.hPost, "hPost staging", booking);
  plan.out = StagedTensor::planUnlessDense(*args.out, "out staging", booking);
  setSizes(plan.problem, *args.x);
  plan.problem.streamOut = !plan.out.staged() && streamedBytes(*args.out);
  plan.kernels = &chooseKernels(kernels::kMhcPostSimdKernels, kernels::kMhcPostScalarKernels);
  return plan;
}

aclnnStatus MhcPostPlan::run(void* memory) const {
  kernels::MhcPostProblem p = problem;
  p.x = static_cast<const uint16_t*>(x.read(memory));
  p.hRes = hasHRes ? static_cast<const float*>(hRes.read(memory)) : nullptr;
  p.hOut = static_cast<const uint16_t*>(hOut.read(memory));
  p.hPost = static_cast<const float*>(hPost.read(memory));
  p.out = static_cast<uint16_t*>(out.target(memory));
  parallelFor(p.tokens, kTokenGrain, [&](int64_t begin, int64_t end) { kernels->forward(p, begin, end - begin); });
  out.writeBack(memory);
  return ACLNN_SUCCESS;
}

MhcPostBackwardPlan planMhcPostBackward(const MhcPostBackwardArgs& args) {
  MhcPostBackwardPlan plan;
  WorkspaceBooking& booking = plan.workspace;
  plan.hasHRes = args.hRes != nullptr;
  plan.gradOutput = StagedTensor::planUnlessDense(*args.gradOutput, "gradOutput staging", booking);
  plan.x = StagedTensor::planUnlessDense(*args.x, "x staging", booking);
  if (plan.hasHRes) plan.hRes = StagedTensor::planUnlessDense(*args.hRes, "hRes staging", booking);
  plan.hOut = StagedTensor::planUnlessDense(*args.hOut, "hOut staging", booking);
  plan.hPost = StagedTensor::planUnlessDense(*args.hPost, "hPost staging", booking);
  plan.gradX = StagedTensor::planUnlessDense(*args.gradX, "gradX staging", booking);
  plan.gradHRes = StagedTensor::planUnlessDense(*args.gradHRes, "gradHRes staging", booking);
  plan.gradHOut = StagedTensor::planUnlessDense(*args.gradHOut, "gradHOut staging", booking);
  plan.gradHPost = StagedTensor::planUnlessDense(*args.gradHPost, "gradHPost staging", booking);
  setSizes(plan.problem, *args.x);
  plan.problem.streamGrads = !plan.gradX.staged() && !plan.gradHOut.staged() && streamedBytes(*args.gradX);
  plan.kernels = &chooseKernels(kernels::kMhcPostSimdKernels, kernels::kMhcPostScalarKernels);
  return plan;
}

aclnnStatus MhcPostBackwardPlan::run(void* memory) const {
  kernels::MhcPostBackwardProblem p = problem;
  p.gradOutput = static_cast<const uint16_t*>(gradOutput.read(memory));
  p.x = static_cast<const uint16_t*>(x.read(memory));
  p.hRes = hasHRes ? static_cast<const float*>(hRes.read(memory)) : nullptr;
  p.hOut = static_cast<const uint16_t*>(hOut.read(memory));
  p.hPost = static_cast<const float*>(hPost.read(memory));
  p.gradX = static_cast<uint16_t*>(gradX.target(memory));
  p.gradHRes = static_cast<float*>(gradHRes.target(memory));
  p.gradHOut = static_cast<uint16_t*>(gradHOut.target(memory));
  p.gradHPost = static_cast<float*>(gradHPost.target(memory));
  parallelFor(p.tokens, kTokenGrain, [&](int64_t begin, int64_t end) { kernels->backward(p, begin, end - begin); });
  gradX.writeBack(memory);
  gradHRes.writeBack(memory);
  gradHOut.writeBack(memory);
  gradHPost.writeBack(memory);
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
