#include "ops/lightning_indexer/kl_grad_plan.h"

#include "core/kernel_select.h"
#include "core/parallel.h"
#include "core/tile_path.h"
#include "ops/lightning_indexer/kl_grad_check.h"
#include "ops/lightning_indexer/kl_grad_check_values.h"
#include "ops/lightning_indexer/kl_grad_layout.h"

namespace gradkit::ops {

KlGradPlan planKlGrad(const KlGradArgs& args) {
  KlGradPlan plan;
  WorkspaceBooking& booking = plan.workspace;
  plan.q = StagedTensor::planUnlessDense(*args.q, "q staging", booking);
  plan.k = StagedTensor::planUnlessDense(*args.k, "k staging", booking);
  plan.w = StagedTensor::planUnlessDense(*args.w, "w staging", booking);
  plan.indices = StagedTensor::planUnlessDense(*args.sparseIndices, "sparseIndices staging", booking);
  plan.target = StagedTensor::planUnlessDense(*args.attnSoftmaxL1Norm, "attnSoftmaxL1Norm staging", booking);
  plan.dq = StagedTensor::planUnlessDense(*args.dq, "dq staging", booking);
  plan.dk = StagedTensor::planUnlessDense(*args.dk, "dk staging", booking);
  plan.dw = StagedTensor::planUnlessDense(*args.dw, "dw staging", booking);
  plan.softmaxOut = StagedTensor::planUnlessDense(*args.softmaxOut, "softmaxOut staging", booking);
  const KlDims dims = klDimsOfArgs(args);
  plan.problem = klProblemOf(dims, klSequencesOf(args, dims), args.maskMode, args.cmpRatio, args.q->dtype);
  if (args.q->dtype == ACL_BF16) {  // the native tile path changes only the order of the bf16 products' sums
    const TilePathChoice choice = chooseTilePath(ACL_BF16);
    if (choice.path == TilePath::NativeBf16) plan.problem.sums = choice.tileSums;
  }
  const int64_t partialFloats = kernels::klGradPartialFloats(plan.problem);
  plan.schedule = kernels::klGradSchedule(
      plan.problem, chooseKernels(kernels::kKlGradSimdKernels, kernels::kKlGradScalarKernels), threadCount());
  plan.partials = booking.bookArray("dk partials", static_cast<uint64_t>(partialFloats), sizeof(float));
  plan.scratch = booking.bookArray("row scratch", static_cast<uint64_t>(plan.schedule.workers),
                                   static_cast<uint64_t>(plan.schedule.slotBytes));
  return plan;
}

aclnnStatus KlGradPlan::run(void* memory) const {
  kernels::KlGradIo io;
  io.q = q.read(memory);
  io.k = k.read(memory);
  io.w = static_cast<const float*>(w.read(memory));
  io.indices = static_cast<const int32_t*>(indices.read(memory));
  io.target = static_cast<const float*>(target.read(memory));
  io.dq = dq.target(memory);
  io.dk = dk.target(memory);
  io.dw = static_cast<float*>(dw.target(memory));
  io.softmaxOut = static_cast<float*>(softmaxOut.target(memory));
  io.partials = partials.in<float>(memory);
  io.scratch = scratch.in(memory);
  kernels::klGradRun(problem, schedule, io);
  dq.writeBack(memory);
  dk.writeBack(memory);
  dw.writeBack(memory);
  softmaxOut.writeBack(memory);
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
