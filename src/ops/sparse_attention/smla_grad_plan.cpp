#include "ops/sparse_attention/smla_grad_plan.h"

#include "core/parallel.h"
#include "opapi/tensor.h"
#include "ops/sparse_attention/smla_plan.h"
#include "ops/sparse_attention/smla_sizes.h"

namespace gradkit::ops {
namespace {

/** Global rows of a KV tensor (BSND B * S, TND T) and its rows per batch (BSND S; 0 for TND: cu_seqlens place them). */
int64_t globalRows(const aclTensor& kv, SmlaLayout layout) {
  return layout == SmlaLayout::Tnd ? kv.viewDims[0] : kv.viewDims[0] * kv.viewDims[1];
}
int64_t rowsPerBatch(const aclTensor& kv, SmlaLayout layout) { return layout == SmlaLayout::Tnd ? 0 : kv.viewDims[1]; }

}  // namespace

SmlaGradPlan planSparseFlashMlaGrad(const SmlaGradArgs& a) {
  SmlaGradPlan plan;
  WorkspaceBooking& booking = plan.workspace;
  const SmlaArgs view = smlaForwardViewOf(a);
  const SmlaShape shape = smlaShapeOf(view);
  plan.problem = smlaProblemOf(view, shape);
  kernels::SmlaProblem& p = plan.problem;
  std::vector<int64_t> noTables;
  int64_t noOffset = 0;
  p.ori = smlaKvSourceOf(*a.oriKv, shape.layoutKv, nullptr, noTables, &noOffset, plan.oriKv, "oriKv staging", booking);
  if (p.hasCmp) {
    p.cmp =
        smlaKvSourceOf(*a.cmpKv, shape.layoutKv, nullptr, noTables, &noOffset, plan.cmpKv, "cmpKv staging", booking);
  }
  p.oriIndices = smlaIndexListOf(a.oriSparseIndices, a.oriTopkLength, plan.oriIndices, plan.oriLengths,
                                 "oriSparseIndices staging", "oriTopkLength staging", booking);
  p.cmpIndices = smlaIndexListOf(a.cmpSparseIndices, a.cmpTopkLength, plan.cmpIndices, plan.cmpLengths,
                                 "cmpSparseIndices staging", "cmpTopkLength staging", booking);
  plan.query = StagedTensor::planUnlessDense(*a.query, "query staging", booking);
  plan.dOut = StagedTensor::planUnlessDense(*a.dOut, "dOut staging", booking);
  plan.out = StagedTensor::planUnlessDense(*a.out, "out staging", booking);
  plan.lse = StagedTensor::planUnlessDense(*a.lse, "lse staging", booking);
  plan.hasSinks = a.sinks != nullptr;
  if (plan.hasSinks) plan.sinks = StagedTensor::planUnlessDense(*a.sinks, "sinks staging", booking);
  plan.dQuery = StagedTensor::planUnlessDense(*a.dQuery, "dQueryOut staging", booking);
  plan.writesOri = a.dOriKv != nullptr;
  if (plan.writesOri) plan.dOriKv = StagedTensor::planUnlessDense(*a.dOriKv, "dOriKvOut staging", booking);
  plan.writesCmp = a.dCmpKv != nullptr;
  if (plan.writesCmp) plan.dCmpKv = StagedTensor::planUnlessDense(*a.dCmpKv, "dCmpKvOut staging", booking);
  plan.writesSinks = a.dSinks != nullptr;
  if (plan.writesSinks) plan.dSinks = StagedTensor::planUnlessDense(*a.dSinks, "dSinksOut staging", booking);
  plan.writesOriL1 = a.oriSoftmaxL1Norm != nullptr;
  if (plan.writesOriL1) plan.oriL1 = StagedTensor::planUnlessDense(*a.oriSoftmaxL1Norm, "oriL1 staging", booking);
  plan.writesCmpL1 = a.cmpSoftmaxL1Norm != nullptr;
  if (plan.writesCmpL1) plan.cmpL1 = StagedTensor::planUnlessDense(*a.cmpSoftmaxL1Norm, "cmpL1 staging", booking);
  const int64_t cmpRows = p.hasCmp ? globalRows(*a.cmpKv, shape.layoutKv) : 0;
  const int64_t cmpPerBatch = p.hasCmp ? rowsPerBatch(*a.cmpKv, shape.layoutKv) : 0;
  plan.schedule = kernels::smlaGradSchedule(p, globalRows(*a.oriKv, shape.layoutKv), cmpRows,
                                            rowsPerBatch(*a.oriKv, shape.layoutKv), cmpPerBatch, plan.writesOri,
                                            plan.writesCmp, threadCount());
  plan.scratch = booking.book("kernel scratch and gradient accumulators", kernels::smlaGradScratchBytes(plan.schedule));
  return plan;
}

aclnnStatus SmlaGradPlan::run(void* memory) const {
  kernels::SmlaProblem p = problem;
  p.ori.data = oriKv.read(memory);
  if (p.hasCmp) p.cmp.data = cmpKv.read(memory);
  if (p.oriIndices.k > 0) {
    p.oriIndices.data = static_cast<const int32_t*>(oriIndices.read(memory));
    if (p.oriIndices.lengthStride > 0) p.oriIndices.lengths = static_cast<const int32_t*>(oriLengths.read(memory));
  }
  if (p.cmpIndices.k > 0) {
    p.cmpIndices.data = static_cast<const int32_t*>(cmpIndices.read(memory));
    if (p.cmpIndices.lengthStride > 0) p.cmpIndices.lengths = static_cast<const int32_t*>(cmpLengths.read(memory));
  }
  kernels::SmlaGradIo io;
  io.q = query.read(memory);
  io.dOut = dOut.read(memory);
  io.out = out.read(memory);
  io.lse = static_cast<const float*>(lse.read(memory));
  io.sinks = hasSinks ? static_cast<const float*>(sinks.read(memory)) : nullptr;
  io.dq = dQuery.target(memory);
  io.dOri = writesOri ? dOriKv.target(memory) : nullptr;
  io.dCmp = writesCmp ? dCmpKv.target(memory) : nullptr;
  io.dSinks = writesSinks ? static_cast<float*>(dSinks.target(memory)) : nullptr;
  io.oriL1 = writesOriL1 ? static_cast<float*>(oriL1.target(memory)) : nullptr;
  io.cmpL1 = writesCmpL1 ? static_cast<float*>(cmpL1.target(memory)) : nullptr;
  kernels::smlaBackward(p, schedule, io, scratch.in(memory));
  dQuery.writeBack(memory);
  for (const auto& [writes, staged] :
       {std::pair{writesOri, &dOriKv}, std::pair{writesCmp, &dCmpKv}, std::pair{writesSinks, &dSinks},
        std::pair{writesOriL1, &oriL1}, std::pair{writesCmpL1, &cmpL1}}) {
    if (writes) staged->writeBack(memory);
  }
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
