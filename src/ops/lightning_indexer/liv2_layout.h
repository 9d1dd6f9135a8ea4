// The LightningIndexerV2 size model (docs/lightning_indexer_v2.md): layouts, the dims of a call, the shapes
// the other tensors must have, and the per-batch rows and keys a call uses. One description for the checks, the plan,
// the CLI suite and the tests. It knows nothing about aclTensor.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gradkit::ops {

/** The layouts of q (BSND, TND) and k (also PA_BBND: a paged cache addressed through a block table). */
enum class LiV2Layout { BSND, TND, PaBbnd };

/** The layout a name gives ("BSND", "TND", "PA_BBND"; case-sensitive as upstream), nullopt for any other. */
std::optional<LiV2Layout> liv2LayoutFromName(const char* name);
/** "BSND", "TND" or "PA_BBND". */
const char* liv2LayoutName(LiV2Layout layout);

/** The fixed head dim D of q and k, and the one key head N2. */
inline constexpr int64_t kLiV2HeadDim = 128;
inline constexpr int64_t kLiV2KeyHeads = 1;
/** The limits of N1, topk and cmpRatio (Ascend950; A2/A3 allow fewer topk values: liv2TopkAllowed). */
inline constexpr int64_t kLiV2MaxHeads = 64;
inline constexpr int64_t kLiV2MaxTopk = 8192;
inline constexpr int64_t kLiV2MaxCmpRatio = 128;
/** The metadata tensor's element count. */
inline constexpr int64_t kLiV2MetadataWords = 1024;
/** gradkit's limit on B: the checks and the plan read every batch's int32 values on the host. */
inline constexpr int64_t kLiV2MaxBatch = int64_t{1} << 24;

/** topk allowed by the profile: [1, 8192] on Ascend950; [1, 2048] and 3072, 4096, ..., 8192 on A2/A3. */
bool liv2TopkAllowed(int64_t topk, bool ascend950);

/** The rank of q (and of the outputs): BSND 4, TND 3. Of k: TND 3, BSND and PA_BBND 4. */
int64_t liv2QueryRank(LiV2Layout layoutQ);
int64_t liv2KeyRank(LiV2Layout layoutK);

/** The dims of a call whose tensors have their ranks. */
struct LiV2Dims {
  LiV2Layout layoutQ = LiV2Layout::BSND, layoutK = LiV2Layout::BSND;
  int64_t batch = 0;         // B: BSND q dim 0, TND size(cuSeqlensQ) - 1
  int64_t querySeq = 0;      // BSND S1; TND T1
  int64_t queryRows = 0;     // rows of q: B * S1 or T1
  int64_t heads = 0;         // N1
  int64_t keySeq = 0;        // BSND S2; TND T2; PA: blockTable columns * blockSize
  int64_t keyRows = 0;       // rows of k: B * S2, T2 or blocks * blockSize
  int64_t blockSize = 0;     // PA only
  int64_t blockNum = 0;      // PA only
  int64_t tableColumns = 0;  // PA only
  int64_t topk = 0;          // K
};

/**
 * The dims of q (BSND [B, S1, N1, D] or TND [T1, N1, D]), k (BSND [B, S2, 1, D], TND [T2, 1, D], PA [blocks,
 * blockSize, 1, D]), the cuSeqlensQ element count (TND) and the block table's columns (PA).
 */
LiV2Dims liv2DimsOf(LiV2Layout layoutQ, LiV2Layout layoutK, const std::vector<int64_t>& q,
                    const std::vector<int64_t>& k, int64_t cuSeqlensQCount, int64_t tableColumns, int64_t topk);

/** Leading dims of every per-row tensor: BSND [B, S1], TND [T1]. */
std::vector<int64_t> liv2RowLead(const LiV2Dims& dims);
/** w: lead + [N1]; sparseIndices / sparseValues: lead + [1, K]; outputIdxOffset: lead + [1]. */
std::vector<int64_t> liv2WeightShape(const LiV2Dims& dims);
std::vector<int64_t> liv2OutputShape(const LiV2Dims& dims);
std::vector<int64_t> liv2OffsetShape(const LiV2Dims& dims);
/** `text` in double quotes, for messages about layout strings. */
std::string liv2Quoted(const char* text);

/** Text of a shape rule for messages, e.g. "[B, S1, 1, topk]" or "[T1, 1, topk]". */
std::string liv2OutputShapeText(LiV2Layout layoutQ);

/** One batch of a call as the kernels see it. */
struct LiV2Batch {
  int64_t firstRow = 0;  // its first row of q (and of w and the outputs): BSND b * S1, TND cuSeqlensQ[b]
  int64_t rows = 0;      // its rows of q: S1, or cuSeqlensQ[b + 1] - cuSeqlensQ[b]
  int64_t usedRows = 0;  // Sq_b: sequsedQ[b] when given, else rows
  int64_t firstKey = 0;  // BSND b * S2, TND cuSeqlensK[b]; PA: unused (the table maps keys)
  int64_t keys = 0;      // its allocated keys: S2, cuSeqlensK[b + 1] - cuSeqlensK[b], PA table columns * blockSize
  int64_t usedKeys = 0;  // Sk_b: sequsedK[b] when given, else keys
  int64_t residual = 0;  // res_b: cmpResidualK[b] when given, else 0
};

/** The per-batch int32 values of a call (each empty when the tensor is absent). */
struct LiV2Values {
  std::vector<int64_t> cuSeqlensQ, cuSeqlensK, sequsedQ, sequsedK, cmpResidualK;
};

/**
 * The batches of a call from its dims and values, where those values are within the rules (the checks come first):
 * rows and keys from the layouts and the cu_seqlens, used counts from seqused, the residual.
 */
std::vector<LiV2Batch> liv2BatchesOf(const LiV2Dims& dims, const LiV2Values& values);

}  // namespace gradkit::ops
