// Two tile products of one m x n shape summed and added to rows of C given by address: the K = V gradient rows of
// sparse attention, dKV[key r] += P^T dO + scale dS^T Q, with keys listed in any order (repeats included).
//
// Numerics (TileGemm's contract, core/tile_gemm.h, for the two products in a row):
//   t(r, j)  = alpha1 * acc1(r, j)                  (the first product written, beta 0)
//   t(r, j)  = fma(1, t(r, j), alpha2 * acc2(r, j))  (the second accumulated, beta 1)
//   rows[r][j] += t(r, j)                            (r ascending: a repeated row takes its sums in row order)
// The AVX512-BF16 kernel (both products with Bf16Pairs sums, on a CPU with AVX512-BF16) computes this without
// storing t; every other case runs the two TileGemm products into `tile` and then adds its rows, so the bits are the
// same either way. Made in the plan or per call like TileGemm; run() allocates nothing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/tile_gemm.h"

namespace gradkit {

class TileGemmRowsAdd {
 public:
  /**
   * The products alpha1 op(A1) op(B1) (`first`) and alpha2 op(A2) op(B2) (`second`): same m and n (throws
   * std::invalid_argument otherwise, or where TileGemm would); their beta and ldc are ignored (the sum is formed as
   * described above, rows of n floats).
   */
  TileGemmRowsAdd(const GemmShape& first, const GemmShape& second);

  /** The two products as run() forms them into a tile: the first written (beta 0), the second added (beta 1), ldc n. */
  const GemmShape& firstIntoTile() const { return first_.shape(); }
  const GemmShape& secondIntoTile() const { return second_.shape(); }

  /** True where run() takes the fused AVX512-BF16 kernel (else the two products go through `tile`). */
  bool fused() const { return fused_; }

  /** Scratch bytes run() needs (64-byte aligned memory for speed). */
  size_t scratchBytes() const { return scratchBytes_; }

  /**
   * rows[r][0, n) += the sum's row r for r < m in order. `tile` holds m x n floats (used where the products are not
   * fused; contents unspecified after), `scratch` scratchBytes() bytes; none may overlap the rows.
   */
  void run(const void* a1, const void* b1, const void* a2, const void* b2, float* const* rows, float* tile,
           void* scratch) const;

 private:
  TileGemm first_, second_;
  size_t scratchBytes_ = 0;
  bool fused_ = false;
};

}  // namespace gradkit
