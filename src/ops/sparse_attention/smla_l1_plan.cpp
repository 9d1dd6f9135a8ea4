#include "ops/sparse_attention/smla_l1_plan.h"

#include "core/parallel.h"
#include "ops/sparse_attention/smla_l1_check.h"

namespace gradkit::ops {

SmlaL1Plan planSparseFlashMlaSoftmaxL1Norm(const SmlaL1Args& a) {
  SmlaL1Plan plan;
  WorkspaceBooking& booking = plan.workspace;
  plan.problem = smlaProblemOf(smlaL1ProblemArgs(a), plan.inputs, booking);
  plan.width = smlaL1Width(a);
  plan.lse = StagedTensor::planUnlessDense(*a.softmaxLse, "softmaxLse staging", booking);
  plan.out = StagedTensor::planUnlessDense(*a.softmaxL1Norm, "softmaxL1Norm staging", booking);
  plan.schedule = kernels::smlaL1Schedule(plan.problem, threadCount());
  plan.scratch = booking.book("kernel scratch", kernels::smlaScratchBytes(plan.schedule));
  return plan;
}

aclnnStatus SmlaL1Plan::run(void* memory) const {
  kernels::SmlaProblem p = problem;
  kernels::SmlaL1Io io;
  io.q = inputs.bind(memory, p);
  io.lse = static_cast<const float*>(lse.read(memory));
  io.out = static_cast<float*>(out.target(memory));
  io.width = width;
  kernels::smlaSoftmaxL1Norm(p, schedule, io, scratch.in(memory));
  out.writeBack(memory);
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
