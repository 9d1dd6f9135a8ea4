#include "ops/lightning_indexer/liv2_plan.h"

#include <cstring>

#include "core/kernel_select.h"
#include "core/parallel.h"
#include "core/tile_path.h"
#include "opapi/tensor.h"
#include "ops/lightning_indexer/liv2_check_values.h"
#include "ops/lightning_indexer/liv2_layout.h"

namespace gradkit::ops {
namespace {

constexpr int64_t kDim = kernels::kLiV2Dim;

// PA_BBND: the blocks the used keys live in, batch by batch, and each batch's first dense key row.
void planPagedKeys(const LiV2Args& args, const LiV2Dims& dims, std::vector<LiV2Batch>& batches, LiV2Plan& plan) {
  int64_t denseRow = 0;
  for (int64_t b = 0; b < dims.batch; ++b) {
    LiV2Batch& x = batches[static_cast<size_t>(b)];
    x.firstKey = denseRow;
    for (int64_t s = 0; s < x.usedKeys; s += dims.blockSize) {
      const int64_t keys = std::min(dims.blockSize, x.usedKeys - s);
      plan.pagedBlocks.push_back({liv2Int32At(*args.blockTable, {b, s / dims.blockSize}), keys, denseRow});
      denseRow += keys;
    }
  }
  plan.pagedCache = *args.k;
  plan.pagedKeys = plan.workspace.bookArray("paged keys", static_cast<uint64_t>(denseRow) * kDim, 2);
}

// Copies the used keys of a paged cache (any strides) into dense [keys, 128] rows.
void gatherPagedKeys(const aclTensor& cache, const std::vector<LiV2PagedBlock>& blocks, uint16_t* dense) {
  const auto* base = static_cast<const uint16_t*>(cache.firstElement());
  const int64_t blockStride = cache.strides[0], slotStride = cache.strides[1], dimStride = cache.strides[3];
  parallelFor(static_cast<int64_t>(blocks.size()), 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const LiV2PagedBlock& block = blocks[static_cast<size_t>(i)];
      for (int64_t slot = 0; slot < block.keys; ++slot) {
        const uint16_t* from = base + block.cacheBlock * blockStride + slot * slotStride;
        uint16_t* to = dense + (block.denseRow + slot) * kDim;
        if (dimStride == 1) {
          std::memcpy(to, from, kDim * sizeof(uint16_t));
        } else {
          for (int64_t d = 0; d < kDim; ++d) to[d] = from[d * dimStride];
        }
      }
    }
  });
}

}  // namespace

LiV2Plan planLightningIndexerV2(const LiV2Args& args) {
  LiV2Plan plan;
  WorkspaceBooking& booking = plan.workspace;
  const LiV2Layout layoutQ = *liv2LayoutFromName(args.layoutQ), layoutK = *liv2LayoutFromName(args.layoutK);
  const int64_t cuCount = args.cuSeqlensQ != nullptr ? args.cuSeqlensQ->viewDims[0] : 0;
  const int64_t columns = args.blockTable != nullptr ? args.blockTable->viewDims[1] : 0;
  const LiV2Dims dims = liv2DimsOf(layoutQ, layoutK, args.q->viewDims, args.k->viewDims, cuCount, columns, args.topk);
  std::vector<LiV2Batch> batches = liv2BatchesOf(dims, liv2ValuesOf(args));

  plan.q = StagedTensor::planUnlessDense(*args.q, "q staging", booking);
  plan.w = StagedTensor::planUnlessDense(*args.w, "w staging", booking);
  plan.paged = layoutK == LiV2Layout::PaBbnd;
  if (plan.paged) {
    planPagedKeys(args, dims, batches, plan);
  } else {
    plan.k = StagedTensor::planUnlessDense(*args.k, "k staging", booking);
  }
  plan.hasOffsets = args.outputIdxOffset != nullptr;
  if (plan.hasOffsets) plan.offsets = StagedTensor::planUnlessDense(*args.outputIdxOffset, "offset staging", booking);
  plan.indices = StagedTensor::planUnlessDense(*args.sparseIndices, "sparseIndices staging", booking);
  plan.writesValues = args.returnValue == 1;
  if (plan.writesValues)
    plan.values = StagedTensor::planUnlessDense(*args.sparseValues, "sparseValues staging", booking);

  kernels::LiV2Problem& p = plan.problem;
  p.heads = dims.heads;
  p.topk = args.topk;
  p.cmpRatio = args.cmpRatio;
  p.maskMode = args.maskMode;
  p.queryRows = dims.queryRows;
  p.dtype = args.q->dtype;
  const TilePathChoice path = chooseTilePath(p.dtype, ProductEngine::TileGemm);
  p.sums = path.path == TilePath::NativeBf16 ? path.tileSums : GemmSums::Sequential;
  for (const LiV2Batch& x : batches) {
    p.batches.push_back({x.firstRow, x.rows, x.usedRows, x.firstKey, x.usedKeys, x.residual});
  }
  const auto& table = chooseKernels(kernels::kLiV2SimdKernels, kernels::kLiV2ScalarKernels);
  plan.schedule = kernels::liv2Schedule(p, threadCount(), table);
  plan.scratch = booking.book("workers' scratch", kernels::liv2ScratchBytes(plan.schedule));
  return plan;
}

aclnnStatus LiV2Plan::run(void* memory) const {
  kernels::LiV2Problem p = problem;
  p.q = q.read(memory);
  p.w = static_cast<const float*>(w.read(memory));
  if (!paged) {
    p.k = k.read(memory);
  } else if (pagedKeys.booked()) {
    gatherPagedKeys(pagedCache, pagedBlocks, pagedKeys.in<uint16_t>(memory));
    p.k = pagedKeys.in(memory);
  }
  if (hasOffsets) p.offsets = static_cast<const int32_t*>(offsets.read(memory));
  p.indices = static_cast<int32_t*>(indices.target(memory));
  if (writesValues) p.values = static_cast<float*>(values.target(memory));
  kernels::liv2Run(p, schedule, scratch.in(memory));
  indices.writeBack(memory);
  if (writesValues) values.writeBack(memory);
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
