#include "ops/sparse_attention/smla_l1_plan.h"

#include "core/parallel.h"
#include "ops/sparse_attention/smla_l1_check.h"
#include "ops/sparse_attention/smla_sizes.h"

namespace gradkit::ops {

SmlaL1Plan planSparseFlashMlaSoftmaxL1Norm(const SmlaL1Args& a) {
  SmlaL1Plan plan;
  WorkspaceBooking& booking = plan.workspace;
  const SmlaArgs problem = smlaL1ProblemArgs(a);  // the compressed part only: no ori rows, so no ori source
  const SmlaShape shape = smlaShapeOf(problem);
  plan.problem = smlaProblemOf(problem, shape);
  kernels::SmlaProblem& p = plan.problem;
  plan.q = StagedTensor::planUnlessDense(*a.q, "q staging", booking);
  p.cmp = smlaKvSourceOf(*a.k, shape.layoutKv, nullptr, p.blockTables, &plan.tableOffset, plan.k, "k staging", booking);
  p.cmpIndices = smlaIndexListOf(a.sparseIndices, a.topkLength, plan.indices, plan.lengths, "sparseIndices staging",
                                 "topkLength staging", booking);
  plan.width = smlaL1Width(a);
  plan.lse = StagedTensor::planUnlessDense(*a.softmaxLse, "softmaxLse staging", booking);
  plan.out = StagedTensor::planUnlessDense(*a.softmaxL1Norm, "softmaxL1Norm staging", booking);
  plan.schedule = kernels::smlaL1Schedule(p, threadCount());
  plan.scratch = booking.book("kernel scratch", kernels::smlaScratchBytes(plan.schedule));
  return plan;
}

aclnnStatus SmlaL1Plan::run(void* memory) const {
  kernels::SmlaProblem p = problem;
  p.cmp.data = k.read(memory);
  if (p.cmpIndices.k > 0) {
    p.cmpIndices.data = static_cast<const int32_t*>(indices.read(memory));
    if (p.cmpIndices.lengthStride > 0) p.cmpIndices.lengths = static_cast<const int32_t*>(lengths.read(memory));
  }
  kernels::SmlaL1Io io;
  io.q = q.read(memory);
  io.lse = static_cast<const float*>(lse.read(memory));
  io.out = static_cast<float*>(out.target(memory));
  io.width = width;
  kernels::smlaSoftmaxL1Norm(p, schedule, io, scratch.in(memory));
  out.writeBack(memory);
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
