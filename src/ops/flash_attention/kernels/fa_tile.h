// Tile helpers of the flash attention kernels, shared by the forward and the backward and by both kernel tables:
// moving rows between FaViews and dense fp32 tiles, and the parts of a score tile that come from FaProblem (which
// tiles can be skipped, the mask, the pse, the dropout keep). Plain element-wise code: the same bits everywhere.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/flash_attention/kernels/fa_kernel.h"

namespace gradkit::kernels {

/** Query rows (Br) and key rows (Bc) of a tile. */
inline constexpr int64_t kFaRowBlock = 64;
inline constexpr int64_t kFaColBlock = 64;

/**
 * Rows [row0, row0 + rows) of (b, head) of `view`, columns [0, cols), widened exactly to fp32 into dst (row r at
 * dst + r * ld). Any strides, FLOAT / FLOAT16 / BF16.
 */
void faLoadRows(const FaView& view, int64_t b, int64_t head, int64_t row0, int64_t rows, int64_t cols, float* dst,
                int64_t ld);

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

/** Sets the masked elements of a score tile (rows r0.., columns c0.., batch-relative) to -Inf. */
void faMaskTile(const FaProblem& problem, const FaBatch& batch, int64_t b, int64_t n1, int64_t r0, int64_t rows,
                int64_t c0, int64_t cols, float* s, int64_t ld);

/**
 * Applies the pse to a raw score tile x (x = Q K^T): s = (x + pse) * scale when pse.beforeScale, else
 * x * scale + pse. Without a pse the caller leaves the scale to the softmax kernels (same bits).
 */
void faPseTile(const FaProblem& problem, const FaBatch& batch, int64_t b, int64_t n1, int64_t r0, int64_t rows,
               int64_t c0, int64_t cols, float* s, int64_t ld);

/** keep(i, j) as 0.0f / 1.0f for the tile (problem.dropout.kind != None). */
void faKeepTile(const FaDropout& dropout, const FaBatch& batch, int64_t n1, int64_t r0, int64_t rows, int64_t c0,
                int64_t cols, float* keep, int64_t ld);

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
