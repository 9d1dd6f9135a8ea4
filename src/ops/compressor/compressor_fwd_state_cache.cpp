#include "ops/compressor/compressor_fwd_state_cache.h"

#include <algorithm>
#include <climits>
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
  if (stateCacheStrideDim0 != 0) view.strides[0] = stateCacheStrideDim0;
  return view;
}

int64_t compressorCacheReach(const aclTensor& cache) {
  int64_t reach = cache.offset;
  for (int64_t d = 0; d < cache.dim(); ++d) {
    int64_t step = 0;
    if (__builtin_mul_overflow(cache.viewDims[d] - 1, cache.strides[d], &step) ||
        __builtin_add_overflow(reach, step, &reach)) {
      return INT64_MAX;
    }
  }
  return reach == INT64_MAX ? INT64_MAX : reach + 1;
}

int64_t compressorCacheBlockExtent(const aclTensor& stateCache) {
  return (stateCache.viewDims[1] - 1) * stateCache.strides[1] + (stateCache.viewDims[2] - 1) * stateCache.strides[2] +
         1;
}

int64_t compressorMaxTableColumns(int64_t blockSize) { return ceilDiv(int64_t{INT32_MAX} + 1, blockSize); }

int64_t CompressorCacheMap::columnEntry(int64_t b, int64_t column) const {
  if (cacheMode == kCompressorRingCache) return entries[b];
  return entries[sliceStart[b] + column - firstColumn[b]];
}

bool CompressorCacheMap::writes(int64_t b, int64_t p) const {
  if (cacheMode == kCompressorRingCache) return true;
  const int64_t block = entry(b, p);
  return block > 0 && block < blockNum;
}

PositionRange compressorTouchedRange(const CompressorProblem& problem, int64_t cacheMode, int64_t b) {
  const PositionRange reads = compressorHistoryRange(problem, b);
  const PositionRange writes = compressorWriteRange(problem, cacheMode, b);
  if (reads.empty()) return writes;
  if (writes.empty()) return reads;
  return {std::min(reads.first, writes.first), std::max(reads.end, writes.end)};
}

CompressorCacheMap compressorCacheMapOf(const aclTensor& stateCache, const aclTensor& stateBlockTable,
                                        int64_t cacheMode, const CompressorProblem& problem) {
  CompressorCacheMap map;
  map.cacheMode = cacheMode;
  map.blockNum = stateCache.viewDims[0];
  map.blockSize = stateCache.viewDims[1];
  const auto* first = static_cast<const int32_t*>(stateBlockTable.firstElement());
  const int64_t rowStride = stateBlockTable.dim() == 0 ? 0 : stateBlockTable.strides[0];
  if (cacheMode == kCompressorRingCache) {
    map.tableColumns = 1;
    for (int64_t b = 0; b < problem.batch && first != nullptr; ++b) map.entries.push_back(first[b * rowStride]);
    return map;
  }
  map.tableColumns = stateBlockTable.viewDims[1];
  const int64_t columnStride = stateBlockTable.strides[1];
  map.firstColumn.assign(static_cast<size_t>(problem.batch), 0);
  map.sliceStart.assign(static_cast<size_t>(problem.batch) + 1, 0);
  for (int64_t b = 0; b < problem.batch; ++b) {
    const PositionRange touched = compressorTouchedRange(problem, cacheMode, b);
    map.sliceStart[b] = static_cast<int64_t>(map.entries.size());
    if (touched.empty() || first == nullptr) continue;
    const int64_t firstColumn = touched.first / map.blockSize;
    const int64_t endColumn = std::min(map.tableColumns, (touched.end - 1) / map.blockSize + 1);
    map.firstColumn[b] = firstColumn;
    for (int64_t c = firstColumn; c < endColumn; ++c) map.entries.push_back(first[b * rowStride + c * columnStride]);
  }
  map.sliceStart[problem.batch] = static_cast<int64_t>(map.entries.size());
  return map;
}

}  // namespace gradkit::ops
