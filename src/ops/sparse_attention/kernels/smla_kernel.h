// The kernels of DeepSeek-V4 sparse MLA attention (aclnnSparseFlashMla): the problem as the kernels see it (raw
// pointers, sizes, strides; the plan fills it), the schedule and the entry points. Which keys a row sees is
// smla_semantics.h; the products and the online softmax are flash attention's kernel table (TileGemm and
// FaForwardRows, SIMD or scalar with the same bits), so the sink is the row's starting max with a starting sum of 1.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "acl/acl_base.h"
#include "core/gemm_shape.h"
#include "core/tile_path.h"
#include "ops/flash_attention/kernels/fa_softmax.h"
#include "ops/sparse_attention/kernels/smla_operands.h"

namespace gradkit::kernels {

/** Query rows of one task and the key rows of one score tile. */
inline constexpr int64_t kSmlaKeyTile = 128;

/** One KV tensor (ori or compressed) as the kernels address a batch's row j. */
struct SmlaKvSource {
  const void* data = nullptr;  // element 0 of the tensor
  int64_t rowStride = 0;       // elements between rows j and j + 1 (inside a block when paged)
  int64_t batchStride = 0;     // BSND: elements between batches (TND rows are counted from the batch's first row)
  int64_t blockSize = 0;       // paged: rows per block (0: not paged)
  int64_t blockStride = 0;     // paged: elements between blocks
  const int64_t* blockTable = nullptr;  // paged: [batches][tableColumns] block ids, checked in range by the plan
  int64_t tableColumns = 0;
};

/** One batch's sizes (docs/sparse_attention.md, "Layouts"). */
struct SmlaBatch {
  int64_t qRow0 = 0;     // the batch's first query row in q (BSND b * S1, TND cuSeqlensQ[b])
  int64_t qRows = 0;     // query rows the batch owns in q; rows [s1, qRows) are written 0
  int64_t s1 = 0;        // query rows computed
  int64_t s2 = 0;        // ori KV rows
  int64_t oriRow0 = 0;   // TND: the batch's first ori row
  int64_t c = 0;         // compressed rows
  int64_t cmpRow0 = 0;   // TND: the batch's first compressed row
  int64_t restored = 0;  // c * cmpRatio + residual: the uncompressed length the cmp mask counts in
};

/** A list of key indices per query row: [tokens][k] int32 (any row stride), with optional per-row lengths. */
struct SmlaIndexList {
  const int32_t* data = nullptr;  // null: the part is dense
  int64_t rowStride = 0;
  int64_t k = 0;
  const int32_t* lengths = nullptr;  // per query row (stride lengthStride); null: no lengths
  int64_t lengthStride = 0;
};

struct SmlaProblem {
  aclDataType ioType = ACL_BF16;  // q, KV and out: FLOAT16 or BF16
  int64_t tokens = 0;             // query rows of q (BSND B * S1, TND T1)
  int64_t n1 = 0, d = 0;          // heads (all share the one KV head) and head dim
  float scale = 1.0f;
  std::vector<SmlaBatch> batches;
  std::vector<int32_t> tokenBatch;   // [tokens]: the batch owning each query row, -1 for rows after cuSeqlensQ[B]
  std::vector<int64_t> blockTables;  // storage the sources' blockTable pointers point into
  SmlaKvSource ori, cmp;
  bool hasCmp = false;
  SmlaIndexList oriIndices, cmpIndices;
  int64_t oriMaskMode = 0, oriWinLeft = -1, oriWinRight = -1, cmpMaskMode = 0, cmpRatio = 1;
  TilePath tilePath = TilePath::Highway;  // NativeBf16: bf16 operands, P rounded to bf16 before P.V
  GemmSums tileSums = GemmSums::Sequential;
};

/** The buffers of one run. */
struct SmlaForwardIo {
  const void* q = nullptr;       // dense [tokens][n1][d]
  const float* sinks = nullptr;  // [n1]
  void* out = nullptr;           // dense [tokens][n1][d], ioType
  float* lse = nullptr;          // [tokens][n1] or null
};

struct SmlaGradOps;

struct SmlaSchedule {
  const FaKernelTable* kernels = nullptr;
  const SmlaGradOps* steps = nullptr;  // the forward: the output's rounding (roundToIo), shared with the backward
  int threads = 1;
  size_t slotBytes = 0;  // one worker's scratch
};

/** The schedule of `problem` on up to `threads` workers (kernel table: SIMD unless GRADKIT_FORCE_SCALAR). */
SmlaSchedule smlaForwardSchedule(const SmlaProblem& problem, int threads);

/** Scratch bytes smlaForward needs for the schedule (64-byte aligned memory). */
size_t smlaScratchBytes(const SmlaSchedule& schedule);

/** The forward: every query row's out and lse; bits independent of the thread count and of the kernel table. */
void smlaForward(const SmlaProblem& problem, const SmlaSchedule& schedule, const SmlaForwardIo& io, void* scratch);

/** The product operands' type of the problem: BF16 on the native path, else FLOAT. */
inline aclDataType smlaProductType(const SmlaProblem& p) {
  return p.tilePath == TilePath::NativeBf16 ? ACL_BF16 : ACL_FLOAT;
}

/** S[n1][keys] (ld kSmlaKeyTile) = Q[n1][d] K[keys][d]^T: one row's scores against a tile of keys. */
inline GemmShape smlaScoreShape(const SmlaProblem& p, int64_t keys) {
  return {p.n1, keys, p.d, false, true, p.d, p.d, kSmlaKeyTile, smlaProductType(p), 1.0f, 0.0f, p.tileSums};
}

/** The io rows of `keys` keys (rows[r]: d elements each) as consecutive product operands at dst. */
inline void smlaLoadKeyOperands(const SmlaProblem& p, const void* const* rows, int64_t keys, void* dst) {
  const aclDataType type = smlaProductType(p);
  const int64_t keyBytes = p.d * smlaOperandBytes(type);
  for (int64_t r = 0; r < keys; ++r)
    smlaLoadOperands(p.ioType, type, rows[r], p.d, static_cast<char*>(dst) + r * keyBytes);
}

}  // namespace gradkit::kernels
