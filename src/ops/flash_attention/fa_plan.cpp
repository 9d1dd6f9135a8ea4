// The flash attention plans: the problem, the tensors as strided views (kernels read and write any strides), the
// statistics and a packed dropMask made dense when they are not, and the kernels' scratch.
#include "ops/flash_attention/fa_plan.h"

#include "base/dtype.h"
#include "core/parallel.h"
#include "opapi/tensor.h"
#include "ops/flash_attention/fa_check_common.h"
#include "ops/flash_attention/fa_problem.h"

namespace gradkit::ops {
namespace {

using kernels::FaView;

/** A view of an optional tensor (empty view for null). */
FaView optionalView(const aclTensor* tensor, FaLayout layout, int64_t headDim) {
  return tensor != nullptr ? faViewOf(*tensor, layout, headDim) : FaView{};
}

/** Plans the statistics and the dropMask, shared by both directions. */
template <class Plan>
void planCommon(const FaCall& call, const FaSizes& sizes, const aclTensor& max, const aclTensor& sum, Plan& plan) {
  plan.problem = faProblemOf(call);
  plan.softmaxMax = StagedTensor::plan(max, !max.isContiguous(), "softmaxMax", plan.workspace);
  plan.softmaxSum = StagedTensor::plan(sum, !sum.isContiguous(), "softmaxSum", plan.workspace);
  plan.packedDropout = plan.problem.dropout.kind == kernels::FaDropoutKind::Packed;
  if (plan.packedDropout) {
    // The kernels read ceil(scores / 8) bytes, however many the mask claims (stride 0 included).
    const auto bytes = static_cast<int64_t>(faDropMaskBytes(sizes));
    plan.dropMask = StagedTensor::planLeading(*call.dropMask, bytes, "dropMask", plan.workspace);
  }
}

/** This run's dense packed dropMask (null without one). */
const uint8_t* runDropBits(const FaPlanCommon& plan, void* memory) {
  return plan.packedDropout ? static_cast<const uint8_t*>(plan.dropMask.read(memory)) : nullptr;
}

}  // namespace

bool flashAttentionNothingToCompute(const FaArgs& args) {
  const FaSizes sizes = faPlanSizesOf(faPlanCallOf(args));
  return sizes.b == 0 || sizes.n1 == 0 || sizes.s1 == 0;
}

FaPlan planFlashAttention(const FaArgs& args) {
  FaPlan plan;
  const FaCall call = faPlanCallOf(args);
  const FaSizes sizes = faPlanSizesOf(call);
  planCommon(call, sizes, *args.softmaxMaxOut, *args.softmaxSumOut, plan);
  plan.io.q = faViewOf(*call.query, call.layout, sizes.d);
  plan.io.k = faViewOf(*call.key, call.layout, sizes.d);
  plan.io.v = faViewOf(*call.value, call.layout, sizes.dv);
  plan.io.qRope = optionalView(call.queryRope, call.layout, sizes.dRope);
  plan.io.kRope = optionalView(call.keyRope, call.layout, sizes.dRope);
  plan.io.out = faViewOf(*args.attentionOutOut, call.layout, sizes.dv);
  plan.schedule = kernels::faForwardSchedule(plan.problem, threadCount());
  plan.scratch = plan.workspace.book("scratch", kernels::faScratchBytes(plan.schedule));
  return plan;
}

aclnnStatus FaPlan::run(void* memory) const {
  kernels::FaForwardIo buffers = io;
  buffers.softmaxMax = static_cast<float*>(softmaxMax.target(memory));
  buffers.softmaxSum = static_cast<float*>(softmaxSum.target(memory));
  buffers.dropBits = runDropBits(*this, memory);
  kernels::faForward(problem, schedule, buffers, scratch.booked() ? scratch.in(memory) : nullptr);
  softmaxMax.writeBack(memory);
  softmaxSum.writeBack(memory);
  return ACLNN_SUCCESS;
}

FagPlan planFlashAttentionGrad(const FagArgs& args) {
  FagPlan plan;
  const FaCall call = faPlanCallOf(args);
  const FaSizes sizes = faPlanSizesOf(call);
  planCommon(call, sizes, *args.softmaxMax, *args.softmaxSum, plan);
  plan.io.q = faViewOf(*call.query, call.layout, sizes.d);
  plan.io.k = faViewOf(*call.key, call.layout, sizes.d);
  plan.io.v = faViewOf(*call.value, call.layout, sizes.dv);
  plan.io.qRope = optionalView(call.queryRope, call.layout, sizes.dRope);
  plan.io.kRope = optionalView(call.keyRope, call.layout, sizes.dRope);
  plan.io.dy = faViewOf(*args.dy, call.layout, sizes.dv);
  plan.io.attentionIn = faViewOf(*args.attentionIn, call.layout, sizes.dv);
  plan.io.dq = faViewOf(*args.dqOut, call.layout, sizes.d);
  plan.io.dk = faViewOf(*args.dkOut, call.layout, sizes.d);
  plan.io.dv = faViewOf(*args.dvOut, call.layout, sizes.dv);
  plan.io.dqRope = optionalView(call.queryRope != nullptr ? args.dqRopeOut : nullptr, call.layout, sizes.dRope);
  plan.io.dkRope = optionalView(call.keyRope != nullptr ? args.dkRopeOut : nullptr, call.layout, sizes.dRope);
  plan.fp8 = isFloat8Dtype(args.query->dtype);
  if (plan.fp8) {
    // [B, N, ceil(S / 128), 1] whatever the layout: read as [batch][head][block] with the tensor's own strides.
    plan.fp8Scales.q = faViewOf(*args.dScaleQ, FaLayout::BNSD, 1);
    plan.fp8Scales.k = faViewOf(*args.dScaleK, FaLayout::BNSD, 1);
    plan.fp8Scales.v = faViewOf(*args.dScaleV, FaLayout::BNSD, 1);
    plan.fp8Scales.dy = faViewOf(*args.dScaleDy, FaLayout::BNSD, 1);
    plan.schedule = kernels::faBackwardFp8Schedule(plan.problem, threadCount());
  } else {
    plan.schedule = kernels::faBackwardSchedule(plan.problem, threadCount());
  }
  plan.scratch = plan.workspace.book("scratch", kernels::faScratchBytes(plan.schedule));
  return plan;
}

aclnnStatus FagPlan::run(void* memory) const {
  kernels::FaBackwardIo buffers = io;
  buffers.softmaxMax = static_cast<const float*>(softmaxMax.read(memory));
  buffers.softmaxSum = static_cast<const float*>(softmaxSum.read(memory));
  buffers.dropBits = runDropBits(*this, memory);
  void* kernelScratch = scratch.booked() ? scratch.in(memory) : nullptr;
  if (fp8) {
    kernels::faBackwardFp8(problem, schedule, buffers, fp8Scales, kernelScratch);
    return ACLNN_SUCCESS;
  }
  kernels::faBackward(problem, schedule, buffers, kernelScratch);
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
