// LightningIndexerV2 on dense buffers: scores of query rows against compressed keys, then the top-k of each row. The
// kernels know nothing about aclTensor.
//
// For a used query row i of batch b and a key s it sees (li_visibility.h), with D = 128 and N1 = heads:
//   score(i, s) = sum_h w[i, h] * relu(dot_h),   dot_h = sum_d q[i, h, d] * k[s, d]
// Fixed orders (every kernel table keeps them, so the bits do not depend on the table, the thread count or the tiles):
//   dot_h   one TileGemm product element (core/tile_gemm.h): the 16-bit operands' exact products in fp32, summed in
//           the order of LiV2Problem::sums: Sequential (fma, d ascending) or Bf16Pairs (VDPBF16PS's pairs). FLOAT16
//           operands are widened to fp32 first (exact) and take Sequential sums.
//   relu(x) = x < 0 ? 0 : x (NaN and -0 pass through).
//   score   acc = 0; acc = fma(w[i, h], relu(dot_h), acc) for h = 0 .. N1 - 1 in order; one fp32 value.
// Selection (liv2_topk.h): the n = min(topk, visible) keys of largest score under the total order of the sortable
// keys (a NaN above +inf, +0 above -0), ties to the lower index; row j of the output holds them by that order, key
// index + outputIdxOffset[i] in sparseIndices and the score in sparseValues; the slots after n hold -1 and -inf. Rows
// beyond a batch's used rows, and rows no batch owns, hold only -1 and -inf.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "acl/acl_base.h"
#include "core/gemm_shape.h"

namespace gradkit::kernels {

/** D, the head dim of q and k. */
inline constexpr int64_t kLiV2Dim = 128;

/** One batch as the kernels see it (rows of q / w / the outputs, keys of the dense key buffer). */
struct LiV2KernelBatch {
  int64_t firstRow = 0;  // the batch's first row
  int64_t rows = 0;      // its rows (those from usedRows on hold only -1 / -inf)
  int64_t usedRows = 0;  // Sq_b
  int64_t firstKey = 0;  // the batch's key 0 in LiV2Problem::k
  int64_t usedKeys = 0;  // Sk_b
  int64_t residual = 0;  // res_b
};

/** One checked call. */
struct LiV2Problem {
  int64_t heads = 1;     // N1
  int64_t topk = 1;      // K
  int64_t cmpRatio = 1;  // cr
  int64_t maskMode = 0;  // 0 or 3
  int64_t queryRows = 0;
  aclDataType dtype = ACL_BF16;                            // of q and k: FLOAT16 or BF16
  gradkit::GemmSums sums = gradkit::GemmSums::Sequential;  // BF16 only (FLOAT16 products are widened: Sequential)
  std::vector<LiV2KernelBatch> batches;
  const void* q = nullptr;           // [queryRows, N1, 128] of dtype
  const void* k = nullptr;           // [*, 128] of dtype: batch b's key s at row firstKey + s
  const float* w = nullptr;          // [queryRows, N1]
  const int32_t* offsets = nullptr;  // [queryRows] or null (outputIdxOffset)
  int32_t* indices = nullptr;        // [queryRows, K]
  float* values = nullptr;           // [queryRows, K] or null (returnValue 0)
};

/** The kernels of one implementation. */
struct LiV2Kernels {
  /** dot products: TileGemm (SIMD) or its scalar reference; `scratch` holds liv2GemmScratchBytes of a shape at least
   *  as large. */
  void (*gemm)(const gradkit::GemmShape& shape, const void* a, const void* b, float* c, void* scratch);
  /**
   * scores[r * lds + j] for r < rows, j < keys from the products dots[(r * heads + h) * ldd + j] and the weights
   * w[r * heads + h] (the order above).
   */
  void (*scores)(const float* dots, int64_t ldd, const float* w, int64_t rows, int64_t heads, int64_t keys,
                 float* scores, int64_t lds);
  /** to[i] = the FLOAT16 bits from[i] as fp32 (exact), i < count. */
  void (*widenHalf)(const uint16_t* from, int64_t count, float* to);
};

/** Highway, dispatched per CPU (the scalar kernels where a target lacks FMA). */
extern const LiV2Kernels kLiV2SimdKernels;
/** Plain C++, the reference. */
extern const LiV2Kernels kLiV2ScalarKernels;

/** The query rows [firstRow, firstRow + rows) of batch `batch`; cost orders the tasks only. */
struct LiV2Task {
  int64_t batch = 0, firstRow = 0, rows = 0;
  int64_t cost = 0;
};

/** Rows [first, first + count) of the outputs that hold only -1 / -inf (not a used row of any batch). */
struct LiV2RowRange {
  int64_t first = 0, count = 0;
};

/**
 * The work of one call, made in the plan: the kernel table, the workers and each one's scratch, the tasks (query
 * blocks, costliest first) and the rows with nothing to select.
 */
struct LiV2Schedule {
  const LiV2Kernels* kernels = nullptr;
  int threads = 1;
  int64_t blockRows = 1;  // query rows per task
  int64_t keyTile = 1;    // keys per product
  int64_t maxKeys = 0;    // the most keys any row sees
  size_t slotBytes = 0;   // one worker's scratch
  std::vector<LiV2Task> tasks;
  std::vector<LiV2RowRange> emptyRows;
};

/** The schedule of `problem` on `threads` workers with `kernels`. */
LiV2Schedule liv2Schedule(const LiV2Problem& problem, int threads, const LiV2Kernels& kernels);

/** The scratch bytes a schedule's run takes (64-byte aligned base). */
size_t liv2ScratchBytes(const LiV2Schedule& schedule);

/** Computes every row of the outputs; the bits do not depend on the thread count or the kernel table. */
void liv2Run(const LiV2Problem& problem, const LiV2Schedule& schedule, void* scratch);

/** TileGemm's scratch for `shape` (the SIMD gemm's). */
size_t liv2GemmScratchBytes(const gradkit::GemmShape& shape);

}  // namespace gradkit::kernels
