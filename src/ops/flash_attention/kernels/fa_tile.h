// Tile helpers of the flash attention kernels, shared by the forward and the backward and by both kernel tables:
// moving rows between FaViews and dense fp32 tiles, and the parts of a score tile that come from FaProblem (which
// tiles can be skipped, the mask, the pse, the dropout keep). Plain element-wise code: the same bits everywhere.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/flash_attention/kernels/fa_kernel.h"
#include "ops/flash_attention/kernels/fa_softmax.h"

namespace gradkit::kernels {

/**
 * Query rows (Br) and key rows (Bc) of the tiles. Multiples of TileGemm's register blocks (6 rows and 16-column
 * panels on AVX2, 8 and 32 on AVX-512) so that full tiles have no edge blocks; 192 measured best on a 2-core AVX2
 * machine among 64..288 (larger tiles pack TileGemm's B operand and stream K / V or Q / dY less often per FLOP; the
 * strips of faForEachPart keep the diagonal of a causal band cheap).
 */
inline constexpr int64_t kFaForwardRows = 192, kFaForwardCols = 192;
inline constexpr int64_t kFaBackwardRows = 192, kFaBackwardCols = 192;

/**
 * Rows [row0, row0 + rows) of (b, head) of `view`, columns [0, cols), widened exactly to fp32 into dst (row r at
 * dst + r * ld). Any strides, FLOAT / FLOAT16 / BF16.
 */
void faLoadRows(const FaView& view, int64_t b, int64_t head, int64_t row0, int64_t rows, int64_t cols, float* dst,
                int64_t ld);

/**
 * The same rows as fp32 rows for a tile product: the view's own memory when it is fp32 with unit column stride and
 * rows at least `cols` apart (*ld = its row stride), else faLoadRows into `buffer` (*ld = bufferLd).
 */
const float* faRowsForProduct(const FaView& view, int64_t b, int64_t head, int64_t row0, int64_t rows, int64_t cols,
                              float* buffer, int64_t bufferLd, int64_t* ld);

/**
 * Rows of q or k with their rope columns (dRope > 0: loaded into `buffer` as d + dRope columns, *ld = d + dRope),
 * else faRowsForProduct of `main`.
 */
const float* faRowsWithRope(const FaView& main, const FaView& rope, int64_t d, int64_t dRope, int64_t b, int64_t head,
                            int64_t row0, int64_t rows, float* buffer, int64_t* ld);

/**
 * Operand rows for a tile product of `type`: FLOAT gives faRowsWithRope; BF16 (the native path) gives bf16 bits, the
 * view's own memory when it is BF16 with unit column stride, rows at least `d` apart and no rope (*ld = its row
 * stride), else copied (other dtypes rounded to bf16) into `buffer` as d + dRope columns (*ld = d + dRope). `buffer`
 * is sized in floats for the fp32 rows, so it holds the bf16 ones too.
 */
const void* faOperandRows(aclDataType type, const FaView& main, const FaView& rope, int64_t d, int64_t dRope, int64_t b,
                          int64_t head, int64_t row0, int64_t rows, float* buffer, int64_t* ld);

/** `base` advanced by `elements` elements of `type` (FLOAT or BF16). */
inline const void* faAdvance(const void* base, int64_t elements, aclDataType type) {
  return static_cast<const char*>(base) + elements * (type == ACL_BF16 ? 2 : 4);
}

/** rows x cols of src (row stride ld) rounded to bf16 (nearest even) into dst (row stride dstLd). */
void faRoundRowsToBf16(const float* src, int64_t ld, int64_t rows, int64_t cols, uint16_t* dst, int64_t dstLd);

/** The reverse: src rows rounded once (nearest even) to the view's dtype and stored. */
void faStoreRows(const float* src, int64_t ld, const FaView& view, int64_t b, int64_t head, int64_t row0, int64_t rows,
                 int64_t cols);

/** Stores zeros into those rows and columns of the view. */
void faZeroRows(const FaView& view, int64_t b, int64_t head, int64_t row0, int64_t rows, int64_t cols);

/** What a tile of rows [r0, r1) x columns [c0, c1) (batch-relative) needs. */
enum class FaTileKind {
  Skip,     // every element masked: the tile contributes nothing
  Full,     // no element masked
  Partial,  // some may be masked: faMaskTile
};

/** Classifies a tile from the band (O(1)) and, with a mask tensor, from its bytes. */
FaTileKind faClassifyTile(const FaProblem& problem, const FaBatch& batch, int64_t b, int64_t n1, int64_t r0, int64_t r1,
                          int64_t c0, int64_t c1);

/** The query rows [first, last) that may keep some column of [c0, c1) by the band (all rows without a band). */
void faBandRows(const FaProblem& problem, const FaBatch& batch, int64_t c0, int64_t c1, int64_t* first, int64_t* last);

/** The columns of [c0, c1) that some row of [r0, r1) may keep by the band: [*lo, *hi) (all without a band). */
void faBandCols(const FaProblem& problem, const FaBatch& batch, int64_t r0, int64_t r1, int64_t c0, int64_t c1,
                int64_t* lo, int64_t* hi);

/** Rows of a strip: a Partial band tile is cut into strips of this many rows, each with its own column range. */
inline constexpr int64_t kFaStripRows = 48;

/**
 * Calls fn(rowOffset, rows, c0, cols, kind) for the parts of a tile of rows [r0, r0 + rows) x columns
 * [c0, c0 + cols) that are not Skip: the whole tile, or for a Partial tile with a band (on or near the diagonal),
 * strips of kFaStripRows rows with the columns the band leaves them, so that the masked corner is not computed.
 */
template <class Fn>
void faForEachPart(const FaProblem& problem, const FaBatch& batch, int64_t b, int64_t n1, int64_t r0, int64_t rows,
                   int64_t c0, int64_t cols, FaTileKind kind, const Fn& fn) {
  if (kind == FaTileKind::Skip) return;
  if (kind != FaTileKind::Partial || !problem.band) {
    fn(int64_t{0}, rows, c0, cols, kind);
    return;
  }
  for (int64_t offset = 0; offset < rows; offset += kFaStripRows) {
    const int64_t height = rows - offset < kFaStripRows ? rows - offset : kFaStripRows;
    int64_t lo = 0, hi = 0;
    faBandCols(problem, batch, r0 + offset, r0 + offset + height, c0, c0 + cols, &lo, &hi);
    if (lo >= hi) continue;
    const FaTileKind part = faClassifyTile(problem, batch, b, n1, r0 + offset, r0 + offset + height, lo, hi);
    if (part != FaTileKind::Skip) fn(offset, height, lo, hi - lo, part);
  }
}

/**
 * Turns a raw score tile x = Q K^T into the softmax kernels' input: the pse and the scale (faPseTile), and for a
 * Partial tile the scale then the mask (-Inf). Returns the scale the kernels still have to apply (1 when done here).
 */
float faPrepareScores(const FaProblem& problem, const FaBatch& batch, int64_t b, int64_t n1, int64_t r0, int64_t rows,
                      int64_t c0, int64_t cols, FaTileKind kind, float* s, int64_t ld);

/** Sets the masked elements of a score tile (rows r0.., columns c0.., batch-relative) to -Inf. */
void faMaskTile(const FaProblem& problem, const FaBatch& batch, int64_t b, int64_t n1, int64_t r0, int64_t rows,
                int64_t c0, int64_t cols, float* s, int64_t ld);

/**
 * Applies the pse to a raw score tile x (x = Q K^T): s = (x + pse) * scale when pse.beforeScale, else
 * x * scale + pse. Without a pse the caller leaves the scale to the softmax kernels (same bits).
 */
void faPseTile(const FaProblem& problem, const FaBatch& batch, int64_t b, int64_t n1, int64_t r0, int64_t rows,
               int64_t c0, int64_t cols, float* s, int64_t ld);

/** The problem's dropout with a run's packed mask (FaForwardIo / FaBackwardIo::dropBits) when one is given. */
inline FaDropout faRunDropout(const FaDropout& dropout, const uint8_t* dropBits) {
  FaDropout run = dropout;
  if (dropBits != nullptr) run.bits = dropBits;
  return run;
}

/** keep(i, j) as 0.0f / 1.0f for the tile (problem.dropout.kind != None); Philox bytes from `philoxBytes`. */
void faKeepTile(const FaDropout& dropout, const FaBatch& batch, int64_t n1, int64_t r0, int64_t rows, int64_t c0,
                int64_t cols, float* keep, int64_t ld, FaPhiloxBytesFn philoxBytes);

/** Carves 64-byte aligned regions out of a scratch buffer; with a null base it only counts the bytes. */
class FaArena {
 public:
  explicit FaArena(void* base) : base_(static_cast<char*>(base)) {}
  template <class T>
  T* take(int64_t count) {
    char* at = base_ == nullptr ? nullptr : base_ + used_;
    used_ += (static_cast<size_t>(count) * sizeof(T) + 63) / 64 * 64;
    return reinterpret_cast<T*>(at);
  }
  size_t used() const { return used_; }

 private:
  char* base_;
  size_t used_ = 0;
};

}  // namespace gradkit::kernels
