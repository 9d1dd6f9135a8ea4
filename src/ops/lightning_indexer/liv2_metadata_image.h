// The image aclnnLightningIndexerV2Metadata writes: a plain port of the idea of upstream's AI-CPU planner
// (lightning_indexer_v2_metadata_aicpu.cpp), informative only (gradkit's
// aclnnLightningIndexerV2 never reads it). The (batch x N2) x (S1*G blocks of mBase rows) x (S2 blocks) grid is cut
// into contiguous ranges over the cube cores by cost (6 per 16 rows + 10 per 64 keys of a block), whole batches first,
// then whole rows, then blocks within a tolerance of half a block; a row cut between cores becomes a reduction task
// spread over the vector cores. Deviation from upstream: the loops stop at a batch's last row where upstream's could
// run past it (never reached by the costs above; a guard, not a change of plan).
#pragma once

#include <cstdint>
#include <vector>

namespace gradkit::ops {

/** Words per core row, the cube (AIC) and vector (AIV) rows the image has room for, and its size. */
inline constexpr int64_t kLiV2MetadataRowWords = 8;
inline constexpr int64_t kLiV2MetadataAicRows = 36;
inline constexpr int64_t kLiV2MetadataAivRows = 72;

/** What the planner needs of a call. */
struct LiV2MetadataRequest {
  bool ascend950 = true;  // 128-key S2 blocks and 2 or 4 rows per M block; else (A2/A3) 2048-key blocks, 4 rows
  int64_t aicCores = 28, aivCores = 56;
  int64_t headsQ = 1, headsK = 1;  // N1, N2 (G = N1 / N2)
  int64_t topk = 1;
  int64_t maskMode = 0;  // 3: right-down causal
  int64_t cmpRatio = 1;
  std::vector<int64_t> queryRows;  // per batch: S1 used (seqused_q, cu_seqlens_q lengths, or max_seqlen_q)
  std::vector<int64_t> keys;       // per batch: compressed keys (seqused_k, cu_seqlens_k lengths, or max_seqlen_k)
  std::vector<int64_t> residual;   // per batch (empty: 0)
};

/** The 1024 words (uint32 values as int32; unused words 0). */
std::vector<int32_t> liv2MetadataImage(const LiV2MetadataRequest& request);

}  // namespace gradkit::ops

namespace gradkit::ops {

/** The M blocks the planner walks (sum over batches of ceil(S1 * G / mBase)): what bounds its time. */
int64_t liv2MetadataRowBlocks(const LiV2MetadataRequest& request);

/** gradkit's limit on liv2MetadataRowBlocks (checked in the first phase). */
inline constexpr int64_t kLiV2MetadataMaxRowBlocks = int64_t{1} << 24;

}  // namespace gradkit::ops
