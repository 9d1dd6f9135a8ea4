// The planners behind the sparse attention metadata operators: from per-batch lengths and the mask arguments to the
// words upstream's AI CPU kernels write. No aclTensor here (tests call them with any core count); the visible-key
// counts of a query row come from kernels/smla_semantics.h, the one description of the masks.
//
// aclnnSparseFlashMlaMetadata (docs/sparse_attention.md, "What they write"): query rows are cut into M tiles
// (Ascend950: G rows of one token, G > 64 splits G over two cube cores, which halves the planning cores; A2/A3: G, or
// (256 / G) G without cmp top-k) and each tile's visible keys into S2 blocks (128 on Ascend950, 512 on A2/A3); a block
// costs 6 ceil(m / 16) + 10 ceil(s2 / 64). Cube cores take, in order, whole batches, then whole tiles, while their load
// stays within max(remaining / cores left, costliest tile) + half the last block's cost. A tile is never split, so the
// flash-decode area stays zero (upstream's batch-consistency mode, deterministic level 3, is not emulated).
#pragma once

#include <cstdint>
#include <vector>

namespace gradkit::ops {

/** A kv length upstream's planner does not know (PA_BBND kv, or no max seqlen, without seqused, top-k sparse). */
inline constexpr int64_t kSmlaUnknownKvLength = 4294967295;  // UINT32_MAX, as upstream

/** One batch as the planners see it. */
struct SmlaMetaBatch {
  int64_t qRows = 0;     // query rows used (seqused_q, else the cu_seqlens_q length, else maxSeqlenQ)
  int64_t rowStart = 0;  // the batch's first row in the topk-length tensors (cu_seqlens_q[b], else b maxSeqlenQ)
  int64_t oriLen = 0;    // ori kv length (or kSmlaUnknownKvLength)
  int64_t cmpLen = 0;    // cmp kv length (or kSmlaUnknownKvLength)
  int64_t residual = 0;  // cmp_residual_kv[b], 0 when absent
};

/** A checked metadata call, with the int32 inputs' values read. */
struct SmlaMetaProblem {
  bool ascend950 = true;  // tiles and split-G of Ascend950, else of Atlas A2/A3
  int64_t group = 1;      // G = numHeadsQ / numHeadsKv
  int64_t kvHeads = 1;    // N2
  bool hasOri = true, hasCmp = false;
  int64_t oriTopk = 0, cmpTopk = 0;  // 0: dense
  int64_t cmpRatio = 1;
  int64_t oriMaskMode = 0, cmpMaskMode = 0;
  int64_t oriWinLeft = -1, oriWinRight = -1;
  std::vector<SmlaMetaBatch> batches;
  /** Per query row (rowStart + i) when the side is sparse with mask mode 0 and the tensor is given; else empty. */
  std::vector<int64_t> oriTopkLength, cmpTopkLength;
};

/** The keys one M tile (query rows firstRow..lastRow of a batch) reads: ori part, cmp part. */
struct SmlaTileKeys {
  int64_t ori = 0, cmp = 0;
};

/**
 * Ori keys: the band from firstRow's window start to lastRow's window end (smlaOriRange), capped by the top-k length
 * of firstRow (mode 0 with lengths) or oriTopk when sparse. Cmp keys: lastRow's visible count (smlaCmpVisible with
 * restored length cmpLen cmpRatio + residual), capped likewise. Upstream's CalcOriBlockRange / CalcCmpBlockRange.
 */
SmlaTileKeys smlaTileKeys(const SmlaMetaProblem& p, const SmlaMetaBatch& batch, int64_t firstRow, int64_t lastRow);

/** aclnnSparseFlashMlaMetadata's words 0..899 (kSmlaPlanWords) for `aicCores` cube cores (>= 1). */
std::vector<uint32_t> planSmlaMetadata(const SmlaMetaProblem& p, int64_t aicCores);

/** aclnnSparseFlashMlaGradMetadata's words 0..6 (kSmlaGradPlanWords) for `aicCores` cube cores (>= 1). */
std::vector<uint32_t> planSmlaGradMetadata(const SmlaMetaProblem& p, int64_t aicCores);

/** aclnnSparseFlashMlaSoftmaxL1NormMetadata's 64 words for `totalRows` query rows and `aicCores` cube cores. */
std::vector<uint32_t> planSmlaL1NormMetadata(int64_t totalRows, int64_t aicCores);

}  // namespace gradkit::ops
