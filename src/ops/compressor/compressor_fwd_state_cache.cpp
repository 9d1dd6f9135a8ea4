#include "ops/compressor/compressor_fwd_state_cache.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace gradkit::ops {

PositionRange compressorHistoryRange(const CompressorProblem& problem, int64_t b) {
  const int64_t sp = problem.start(b);
  if (problem.blocks(b) == 0) return {sp, sp};
  const int64_t cr = problem.cmpRatio;
  return {std::max<int64_t>(0, (sp / cr - (problem.coff - 1)) * cr), sp};
}

PositionRange compressorWriteRange(const CompressorProblem& problem, int64_t cacheMode, int64_t b) {
  const int64_t sp = problem.start(b);
  const int64_t end = sp + problem.used(b);
  if (cacheMode != kCompressorRingCache) return {sp, end};
  const int64_t cr = problem.cmpRatio;
  const int64_t limit = end / cr * cr;
  return {std::max(sp, limit - (problem.coff - 1) * cr), end};
}

aclTensor compressorEffectiveStateCache(const aclTensor& stateCache, int64_t stateCacheStrideDim0) {
  aclTensor view = stateCache;
  if (stateCacheStrideDim0 == 0 || stateCacheStrideDim0 == view.strides[0]) return view;
  view.strides[0] = stateCacheStrideDim0;
  int64_t reach = view.offset + 1;  // the last element reached, plus one
  for (int64_t d = 0; d < view.dim(); ++d) reach += (view.viewDims[d] - 1) * view.strides[d];
  view.storageDims = {view.isEmpty() ? view.offset : reach};
  return view;
}

int64_t compressorCacheBlockExtent(const aclTensor& stateCache) {
  return (stateCache.viewDims[1] - 1) * stateCache.strides[1] + (stateCache.viewDims[2] - 1) * stateCache.strides[2] +
         1;
}

int64_t CompressorCacheMap::entry(int64_t b, int64_t p) const {
  if (cacheMode == kCompressorRingCache) return table[b];
  return table[b * tableColumns + p / blockSize];
}

bool CompressorCacheMap::writes(int64_t b, int64_t p) const {
  if (cacheMode == kCompressorRingCache) return true;
  const int64_t block = entry(b, p);
  return block > 0 && block < blockNum;
}

CompressorCacheMap compressorCacheMapOf(const aclTensor& stateCache, const aclTensor& stateBlockTable,
                                        int64_t cacheMode) {
  CompressorCacheMap map;
  map.cacheMode = cacheMode;
  map.blockNum = stateCache.viewDims[0];
  map.blockSize = stateCache.viewDims[1];
  const int64_t rows = stateBlockTable.dim() == 0 ? 1 : stateBlockTable.viewDims[0];
  map.tableColumns = stateBlockTable.dim() == 2 ? stateBlockTable.viewDims[1] : 1;
  const int64_t rowStride = stateBlockTable.dim() == 0 ? 0 : stateBlockTable.strides[0];
  const int64_t columnStride = stateBlockTable.dim() == 2 ? stateBlockTable.strides[1] : 0;
  const auto* first = static_cast<const int32_t*>(stateBlockTable.firstElement());
  map.table.reserve(static_cast<size_t>(rows * map.tableColumns));
  for (int64_t r = 0; r < rows && first != nullptr; ++r) {
    for (int64_t c = 0; c < map.tableColumns; ++c) map.table.push_back(first[r * rowStride + c * columnStride]);
  }
  return map;
}

}  // namespace gradkit::ops
