// The state cache of aclnnCompressor (spec compressor.md 3.4, 3.7): which positions a call reads from it (the history
// of its first blocks) and writes into it (its tokens), and where each position lives. Shared by the check (table
// ranges, columns) and the plan (the reads and writes themselves).
//
// stateCacheRef is [block_num, block_size, 2*coff*D] fp32: channels [0, coff*D) are kv_state, [coff*D, 2*coff*D)
// score_state (with the APE already added). Position p of batch b lives in block blockOf(b, p), row p mod block_size:
// - cacheMode 1 (paged): block = stateBlockTable[b][p / block_size]. Table entry 0 means "do not write": writes
//   through it are skipped; a history read through it reads block 0 like any other block (as upstream's golden does).
//   Writes through an entry outside [0, block_num) are skipped too, as upstream's golden does (its slice of a block
//   that does not exist is empty) and as upstream's own example needs (block_num 1, entry 1); a history read through
//   such an entry is rejected by the check, so a skipped write is never read back as stale history.
// - cacheMode 2 (one ring buffer per batch): block = stateBlockTable[b]; writes only positions
//   p >= limit_b - (coff - 1)*cr (what the next call reads), limit_b = floor((sp_b + u_b)/cr)*cr.
// Dim 0 is addressed with stateCacheStrideDim0 when it is not 0, else with the tensor's own dim-0 stride.
#pragma once

#include <cstdint>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "opapi/tensor.h"
#include "ops/compressor/compressor_args.h"

namespace gradkit::ops {

inline constexpr int64_t kCompressorPagedCache = 1;  // cacheMode 1
inline constexpr int64_t kCompressorRingCache = 2;   // cacheMode 2

/** Positions [first, end) of one batch (empty when first >= end). */
struct PositionRange {
  int64_t first = 0;
  int64_t end = 0;
  bool empty() const { return first >= end; }
};

/**
 * The history positions batch b reads: [max(0, (sp/cr - (coff-1))*cr), sp) when it has a block, else none. Every
 * position below sp_b that one of its blocks pools lies in this range (the cur half of its first block and, with
 * coff = 2, the previous block).
 */
PositionRange compressorHistoryRange(const CompressorProblem& problem, int64_t b);

/** The positions batch b writes: [sp, sp + u) in cacheMode 1; [max(sp, limit - (coff-1)*cr), sp + u) in 2. */
PositionRange compressorWriteRange(const CompressorProblem& problem, int64_t cacheMode, int64_t b);

/**
 * stateCacheRef as the call addresses it: a copy of the view whose dim-0 stride is stateCacheStrideDim0 when that is
 * not 0. Its storage stays the one the caller declared (compressorCacheReach says whether the view fits in it). Call
 * only on a 3-d tensor.
 */
aclTensor compressorEffectiveStateCache(const aclTensor& stateCache, int64_t stateCacheStrideDim0);

/**
 * The elements from the start of the storage to one past the last element a (non-empty) 3-d cache view reaches:
 * offset + sum (dims - 1) * strides + 1; INT64_MAX when that does not fit in int64.
 */
int64_t compressorCacheReach(const aclTensor& cache);

/** The elements one block of the cache spans: (block_size - 1)*stride1 + (2*coff*D - 1)*stride2 + 1 (>= 1). */
int64_t compressorCacheBlockExtent(const aclTensor& stateCache);

/** Positions are int32 (start_pos + S <= 2^31 - 1), so no call reaches past column ceil(2^31 / block_size) - 1. */
int64_t compressorMaxTableColumns(int64_t blockSize);

/**
 * The block table entries a checked call goes through, with the addressing rule of the file comment. Only the
 * columns each batch's positions reach are copied (its history and its writes: at most (coff*cr + u_b) / block_size
 * + 2 columns), so a wide or stride-0 table costs what the call uses, not what its descriptor claims. Columns past
 * the table's last one are not copied: the check rejects a call that needs them (checkCompressorValues).
 */
struct CompressorCacheMap {
  int64_t cacheMode = kCompressorPagedCache;
  int64_t blockNum = 0, blockSize = 0;
  int64_t tableColumns = 0;          // cacheMode 1: the table's dim 1; cacheMode 2: 1
  std::vector<int64_t> firstColumn;  // cacheMode 1, per batch: the first column copied
  std::vector<int64_t> sliceStart;   // cacheMode 1, [B + 1]: where each batch's copied columns start in `entries`
  std::vector<int64_t> entries;      // cacheMode 1: the copied columns, batch after batch; cacheMode 2: [B]

  /** The entry of column `column` of batch b; it must be one of the copied columns. */
  int64_t columnEntry(int64_t b, int64_t column) const;
  /** The table entry position p of batch b goes through (a position the call reads or writes). */
  int64_t entry(int64_t b, int64_t p) const {
    return columnEntry(b, cacheMode == kCompressorRingCache ? 0 : p / blockSize);
  }
  /** Whether a write of position p of batch b goes to the cache (cacheMode 1 skips entries outside [1, block_num)). */
  bool writes(int64_t b, int64_t p) const;
};

/** The positions [first, end) batch b reads or writes: from its history's first to its writes' last position. */
PositionRange compressorTouchedRange(const CompressorProblem& problem, int64_t cacheMode, int64_t b);

/** The map of a call whose table passed the shape checks and whose per-batch values were read into `problem`. */
CompressorCacheMap compressorCacheMapOf(const aclTensor& stateCache, const aclTensor& stateBlockTable,
                                        int64_t cacheMode, const CompressorProblem& problem);

}  // namespace gradkit::ops
