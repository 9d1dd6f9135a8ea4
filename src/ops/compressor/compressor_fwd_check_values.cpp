#include "ops/compressor/compressor_fwd_check_values.h"

#include <algorithm>
#include <climits>
#include <string>

#include "base/error.h"
#include "opapi/check.h"
#include "ops/compressor/compressor_fwd_state_cache.h"

namespace gradkit::ops {
namespace {

constexpr const char* kApi = kCompressorApi;

std::string at(const char* name, int64_t index) { return std::string(name) + "[" + std::to_string(index) + "]"; }

aclnnStatus checkCuSeqlens(const CompressorProblem& p) {
  if (!p.th) return ACLNN_SUCCESS;
  const auto& cu = p.cuSeqlens;
  if (cu[0] != 0) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "cuSeqlensOptional", "prefix sums starting at 0",
                "cuSeqlensOptional[0] = " + std::to_string(cu[0]));
  }
  for (int64_t b = 0; b < p.batch; ++b) {
    if (cu[b + 1] < cu[b]) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, "cuSeqlensOptional", "non-decreasing prefix sums",
                  at("cuSeqlensOptional", b + 1) + " = " + std::to_string(cu[b + 1]) + " after " +
                      at("cuSeqlensOptional", b) + " = " + std::to_string(cu[b]));
    }
  }
  if (cu[p.batch] > p.tokens) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "cuSeqlensOptional",
                "a last value cuSeqlensOptional[B] <= T = " + std::to_string(p.tokens) + " (the rows of x)",
                at("cuSeqlensOptional", p.batch) + " = " + std::to_string(cu[p.batch]));
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkSequsedAndStartPos(const CompressorProblem& p) {
  for (int64_t b = 0; b < p.batch; ++b) {
    if (!p.seqused.empty() && (p.seqused[b] < 0 || p.seqused[b] > p.length(b))) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, "sequsedOptional",
                  "0 <= seqused[b] <= " + std::string(p.th ? "cu[b+1] - cu[b]" : "S") + " = " +
                      std::to_string(p.length(b)) + " for b = " + std::to_string(b),
                  at("sequsedOptional", b) + " = " + std::to_string(p.seqused[b]));
    }
  }
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t sp = p.start(b);
    if (sp < 0) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, "startPosOptional", "start positions >= 0",
                  at("startPosOptional", b) + " = " + std::to_string(sp));
    }
    if (sp + p.length(b) > INT32_MAX) {
      return fail(
          ACLNN_ERR_PARAM_INVALID, kApi, "startPosOptional",
          "start_pos[b] + " + std::string(p.th ? "len_b" : "S") + " <= 2147483647 (positions are int32)",
          at("startPosOptional", b) + " = " + std::to_string(sp) + " with " + std::to_string(p.length(b)) + " tokens");
    }
  }
  return ACLNN_SUCCESS;
}

// cacheMode 2: the ring must hold the history a call reads (up to coff*cr - 1 positions below start_pos) and the
// tokens it writes without one overwriting the other: block_size >= coff*cr + S - 1 (TH: S = the longest seqused).
aclnnStatus checkRingSize(const CompressorArgs& a, const CompressorProblem& p) {
  if (a.cacheMode != kCompressorRingCache) return ACLNN_SUCCESS;
  int64_t s = p.seqLen;
  std::string what = "S";
  if (p.th) {
    s = 0;
    for (int64_t b = 0; b < p.batch; ++b) s = std::max(s, p.used(b));
    what = "the longest used sequence max(seqused)";
  }
  const int64_t needed = p.coff * p.cmpRatio + s - 1;
  const int64_t blockSize = a.stateCache->viewDims[1];
  if (blockSize >= needed) return ACLNN_SUCCESS;
  return fail(ACLNN_ERR_PARAM_INVALID, kApi, "stateCacheRef",
              "block_size (dim 1) >= coff*cmpRatio + S - 1 = " + std::to_string(needed) + " with S = " + what + " = " +
                  std::to_string(s) + " (cacheMode 2)",
              "block_size = " + std::to_string(blockSize));
}

// Entries the call goes through for the positions [range.first, range.end) of batch b: in [0, block_num); with
// `forWrite` in cacheMode 1 any entry is accepted: 0 and entries outside [0, block_num) are skipped (never written,
// compressor_fwd_state_cache.h).
aclnnStatus checkEntries(const CompressorCacheMap& map, int64_t b, PositionRange range, bool forWrite) {
  if (range.empty()) return ACLNN_SUCCESS;
  const int64_t firstColumn = map.cacheMode == kCompressorRingCache ? 0 : range.first / map.blockSize;
  const int64_t lastColumn = map.cacheMode == kCompressorRingCache ? 0 : (range.end - 1) / map.blockSize;
  for (int64_t column = firstColumn; column <= lastColumn; ++column) {
    const int64_t entry = map.columnEntry(b, column);
    if (forWrite && map.cacheMode == kCompressorPagedCache) continue;
    if (entry >= 0 && entry < map.blockNum) continue;
    const std::string where = map.cacheMode == kCompressorRingCache ? at("stateBlockTableOptional", b)
                                                                    : "stateBlockTableOptional[" + std::to_string(b) +
                                                                          "][" + std::to_string(column) + "]";
    const int64_t position = std::max(range.first, column * map.blockSize);
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "stateBlockTableOptional",
                "entries in [0, block_num = " + std::to_string(map.blockNum) + ") where the call " +
                    (forWrite ? "writes" : "reads") + " the state cache",
                where + " = " + std::to_string(entry) + ", used by batch " + std::to_string(b) + " at position " +
                    std::to_string(position));
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkBlockTable(const CompressorArgs& a, const CompressorProblem& p) {
  const CompressorCacheMap map = compressorCacheMapOf(*a.stateCache, *a.stateBlockTable, a.cacheMode, p);
  for (int64_t b = 0; b < p.batch; ++b) {
    const PositionRange reads = compressorHistoryRange(p, b);
    const PositionRange writes = compressorWriteRange(p, a.cacheMode, b);
    if (a.cacheMode == kCompressorPagedCache) {
      const int64_t end = std::max(reads.empty() ? 0 : reads.end, writes.empty() ? 0 : writes.end);
      const int64_t columns = (end + map.blockSize - 1) / map.blockSize;
      if (columns > map.tableColumns) {
        return fail(ACLNN_ERR_PARAM_INVALID, kApi, "stateBlockTableOptional",
                    "at least " + std::to_string(columns) + " columns (batch " + std::to_string(b) +
                        " uses positions up to " + std::to_string(end - 1) + ", block_size " +
                        std::to_string(map.blockSize) + ")",
                    "shape " + a.stateBlockTable->shapeString());
      }
    }
    GRADKIT_RETURN_IF_ERROR(checkEntries(map, b, reads, false));
    GRADKIT_RETURN_IF_ERROR(checkEntries(map, b, writes, true));
  }
  return ACLNN_SUCCESS;
}

}  // namespace

aclnnStatus checkCompressorValues(const CompressorArgs& args) {
  const CompressorProblem p =
      compressorProblemOf(*args.x, *args.wkv, args.cuSeqlens, args.seqused, args.startPos, args.cmpRatio, args.coff);
  GRADKIT_RETURN_IF_ERROR(checkCuSeqlens(p));
  GRADKIT_RETURN_IF_ERROR(checkSequsedAndStartPos(p));
  GRADKIT_RETURN_IF_ERROR(checkRingSize(args, p));
  return checkBlockTable(args, p);
}

}  // namespace gradkit::ops
