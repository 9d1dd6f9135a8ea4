#include "ops/sparse_attention/smla_plan.h"

#include "core/parallel.h"
#include "core/tile_path.h"
#include "opapi/tensor.h"
#include "opapi/tensor_copy.h"
#include "ops/sparse_attention/smla_sizes.h"

namespace gradkit::ops {
namespace {

/** Row-major strides of `dims`. */
std::vector<int64_t> denseStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t k = dims.size(); k-- > 1;) strides[k - 1] = strides[k] * dims[k];
  return strides;
}

}  // namespace

kernels::SmlaKvSource smlaKvSourceOf(const aclTensor& kv, SmlaLayout layout, const aclTensor* table,
                                     std::vector<int64_t>& tables, int64_t* tableOffset, StagedTensor& staged,
                                     const char* name, WorkspaceBooking& booking) {
  const bool stage = kv.strides.back() != 1;
  staged = StagedTensor::plan(kv, stage, name, booking);
  const std::vector<int64_t> strides = stage ? denseStrides(kv.viewDims) : kv.strides;
  kernels::SmlaKvSource source;
  if (layout == SmlaLayout::Tnd) {
    source.rowStride = strides[0];
  } else {
    source.rowStride = strides[1];
    source.batchStride = strides[0];
  }
  if (layout == SmlaLayout::PaBbnd) {
    source.blockSize = kv.viewDims[1];
    source.blockStride = strides[0];
    source.batchStride = 0;
    source.tableColumns = table->viewDims[1];
    *tableOffset = static_cast<int64_t>(tables.size());
    const std::vector<int64_t> ids = readInt32Values(table);
    tables.insert(tables.end(), ids.begin(), ids.end());
  }
  return source;
}

kernels::SmlaIndexList smlaIndexListOf(const aclTensor* indices, const aclTensor* lengths, StagedTensor& stagedIndices,
                                       StagedTensor& stagedLengths, const char* name, const char* lengthsName,
                                       WorkspaceBooking& booking) {
  kernels::SmlaIndexList list;
  if (indices == nullptr) return list;
  stagedIndices = StagedTensor::planUnlessDense(*indices, name, booking);
  list.k = indices->viewDims.back();
  list.rowStride = list.k;
  if (lengths != nullptr) {
    stagedLengths = StagedTensor::planUnlessDense(*lengths, lengthsName, booking);
    list.lengthStride = 1;
  }
  return list;
}

kernels::SmlaProblem smlaProblemOf(const SmlaArgs& a, const SmlaShape& shape) {
  kernels::SmlaProblem p;
  p.ioType = a.q->dtype;
  p.tokens = shape.tokens;
  p.n1 = shape.n1;
  p.d = shape.d;
  p.scale = static_cast<float>(a.softmaxScale);
  p.batches = smlaBatchesOf(a, shape, smlaLengthsOf(a));
  p.tokenBatch.assign(static_cast<size_t>(p.tokens), -1);
  for (size_t b = 0; b < p.batches.size(); ++b) {
    const kernels::SmlaBatch& x = p.batches[b];
    for (int64_t r = x.qRow0; r < x.qRow0 + x.qRows; ++r)
      p.tokenBatch[static_cast<size_t>(r)] = static_cast<int32_t>(b);
  }
  p.hasCmp = shape.hasCmp;
  p.oriMaskMode = a.oriMaskMode;
  p.oriWinLeft = a.oriWinLeft;
  p.oriWinRight = a.oriWinRight;
  p.cmpMaskMode = a.cmpMaskMode;
  p.cmpRatio = a.cmpRatio;
  if (p.ioType == ACL_BF16) {
    const TilePathChoice choice = chooseTilePath(ACL_BF16);
    p.tilePath = choice.path;
    p.tileSums = choice.tileSums;
  }
  return p;
}

SmlaPlan planSparseFlashMla(const SmlaArgs& a) {
  SmlaPlan plan;
  WorkspaceBooking& booking = plan.workspace;
  const SmlaShape shape = smlaShapeOf(a);
  plan.problem = smlaProblemOf(a, shape);
  kernels::SmlaProblem& p = plan.problem;
  plan.q = StagedTensor::planUnlessDense(*a.q, "q staging", booking);
  int64_t oriTable = 0, cmpTable = 0;
  p.ori = smlaKvSourceOf(*a.oriKv, shape.layoutKv, a.oriBlockTable, p.blockTables, &oriTable, plan.oriKv,
                         "oriKv staging", booking);
  if (p.hasCmp) {
    p.cmp = smlaKvSourceOf(*a.cmpKv, shape.layoutKv, a.cmpBlockTable, p.blockTables, &cmpTable, plan.cmpKv,
                           "cmpKv staging", booking);
  }
  plan.oriTableOffset = oriTable;
  plan.cmpTableOffset = cmpTable;
  p.oriIndices = smlaIndexListOf(a.oriSparseIndices, a.oriTopkLength, plan.oriIndices, plan.oriLengths,
                                 "oriSparseIndices staging", "oriTopkLength staging", booking);
  p.cmpIndices = smlaIndexListOf(a.cmpSparseIndices, a.cmpTopkLength, plan.cmpIndices, plan.cmpLengths,
                                 "cmpSparseIndices staging", "cmpTopkLength staging", booking);
  plan.sinks = StagedTensor::planUnlessDense(*a.sinks, "sinks staging", booking);
  plan.out = StagedTensor::planUnlessDense(*a.attnOut, "attnOut staging", booking);
  plan.returnsLse = a.softmaxLse != nullptr;
  if (plan.returnsLse) plan.lse = StagedTensor::planUnlessDense(*a.softmaxLse, "softmaxLse staging", booking);
  plan.schedule = kernels::smlaForwardSchedule(p, threadCount());
  plan.scratch = booking.book("kernel scratch", kernels::smlaScratchBytes(plan.schedule));
  return plan;
}

aclnnStatus SmlaPlan::run(void* memory) const {
  kernels::SmlaProblem p = problem;
  p.ori.data = oriKv.read(memory);
  if (p.ori.blockSize > 0) p.ori.blockTable = p.blockTables.data() + oriTableOffset;
  if (p.hasCmp) {
    p.cmp.data = cmpKv.read(memory);
    if (p.cmp.blockSize > 0) p.cmp.blockTable = p.blockTables.data() + cmpTableOffset;
  }
  if (p.oriIndices.k > 0) {
    p.oriIndices.data = static_cast<const int32_t*>(oriIndices.read(memory));
    if (p.oriIndices.lengthStride > 0) p.oriIndices.lengths = static_cast<const int32_t*>(oriLengths.read(memory));
  }
  if (p.cmpIndices.k > 0) {
    p.cmpIndices.data = static_cast<const int32_t*>(cmpIndices.read(memory));
    if (p.cmpIndices.lengthStride > 0) p.cmpIndices.lengths = static_cast<const int32_t*>(cmpLengths.read(memory));
  }
  kernels::SmlaForwardIo io;
  io.q = q.read(memory);
  io.sinks = static_cast<const float*>(sinks.read(memory));
  io.out = out.target(memory);
  io.lse = returnsLse ? static_cast<float*>(lse.target(memory)) : nullptr;
  kernels::smlaForward(p, schedule, io, scratch.in(memory));
  out.writeBack(memory);
  if (returnsLse) lse.writeBack(memory);
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
