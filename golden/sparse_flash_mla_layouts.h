// Storage addressing for the sparse flash MLA golden (docs/sparse_attention.md, "Layouts"):
// builds the logical problem of golden/sparse_flash_mla.h from layout-form arrays and puts its results back. Its own
// code, independent of the operator's: one "side" (the query, ori_kv, cmp_kv, or the L1 op's k) is a tensor whose
// rows of one token (N1 * D for q, D for kv, N1 for lse, K for index lists, ...) are addressed as
//   BSND    [B, S, ...]          batch b, position j -> row b * S + j
//   TND     [T, ...]             row cu[b] + j
//   PA_BBND [blocks, bs, 1, D]   row blockTable[b][j / bs] * blockStride + j % bs   (blockStride = bs when contiguous)
// and the used length of batch b is seqUsed[b] if given, else TND cu[b + 1] - cu[b], else BSND S; a PA_BBND side
// without seqUsed (ORI_SPARSE / ORI_CMP_SPARSE mode 0, where upstream's Ascend950 checker does not require it) uses the
// block table's capacity cols * bs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "golden/sparse_flash_mla.h"

namespace gradkit::golden {

enum class SmlaLayout { BSND, TND, PA_BBND };

/** "BSND", "TND" or "PA_BBND"; throws std::invalid_argument otherwise. */
SmlaLayout smlaLayoutOf(const std::string& name);

/** One side of the op in layout form. */
struct SmlaSide {
  SmlaLayout layout = SmlaLayout::BSND;
  int64_t batch = 0;                // BSND: dim 0 (TND: cuSeqlens.size() - 1; PA_BBND: the query side's B)
  int64_t tokens = 0;               // BSND: dim 1 (S); TND: dim 0 (T); PA_BBND: the block size bs (dim 1)
  std::vector<int32_t> cuSeqlens;   // TND: [B + 1]
  std::vector<int32_t> seqUsed;     // [B] or empty
  std::vector<int32_t> blockTable;  // PA_BBND: [B][blockTableCols]
  int64_t blockTableCols = 0;
  int64_t blockStride = 0;  // PA_BBND: rows from one block to the next (the dim-0 stride in rows); 0: bs
};

/** B of a side: TND cuSeqlens.size() - 1, otherwise `batch`. */
int64_t smlaBatchCount(const SmlaSide& side);

/** The used length of batch b (see the header comment); throws when it exceeds what the side holds. */
int64_t smlaUsedLength(const SmlaSide& side, int64_t b);

/**
 * The layout row of every logical row of a side: batch after batch, positions j < smlaUsedLength(b), for `batch`
 * batches (the query side's B). Throws on a block id < 0 or a cuSeqlens / seqUsed that does not fit.
 */
std::vector<int64_t> smlaRowMap(const SmlaSide& side, int64_t batch);

/** Logical rows and lengths of a whole call: the query side's B, the sides' lengths, the residuals. */
struct SmlaLayoutRows {
  std::vector<SmlaBatch> batches;
  std::vector<int64_t> q, ori, cmp;  // logical row -> layout row of each side (cmp empty without a cmp side)
};

/**
 * Batches (s1, s2, cmp, residual) and row maps of the query, ori and (optional, may be null) cmp sides; residual
 * [B] or empty (all 0). B is the query side's.
 */
SmlaLayoutRows smlaLayoutRows(const SmlaSide& q, const SmlaSide& ori, const SmlaSide* cmp,
                              const std::vector<int32_t>& residual);

/** The rows `rows` of a layout tensor of rows of `width` values, one after the other ([rows.size()][width]). */
template <class T>
std::vector<T> smlaGatherRows(const T* layout, const std::vector<int64_t>& rows, int64_t width);

/**
 * A layout tensor of `layoutRows` rows of `width` values, zero except at `rows`, where the logical rows are added
 * (so two logical rows stored in one layout row, a PA block shared by two batches, sum their gradients).
 */
template <class T>
std::vector<T> smlaScatterRows(const std::vector<T>& logical, const std::vector<int64_t>& rows, int64_t width,
                               int64_t layoutRows);

extern template std::vector<double> smlaGatherRows(const double*, const std::vector<int64_t>&, int64_t);
extern template std::vector<float> smlaGatherRows(const float*, const std::vector<int64_t>&, int64_t);
extern template std::vector<int32_t> smlaGatherRows(const int32_t*, const std::vector<int64_t>&, int64_t);
extern template std::vector<double> smlaScatterRows(const std::vector<double>&, const std::vector<int64_t>&, int64_t,
                                                    int64_t);
extern template std::vector<float> smlaScatterRows(const std::vector<float>&, const std::vector<int64_t>&, int64_t,
                                                   int64_t);

}  // namespace gradkit::golden
