// TileGemmRowsAdd (core/tile_gemm_rows_add.h): the fused AVX512-BF16 kernel where it runs, else two TileGemm products
// into a tile and its rows added in order.
#include "core/tile_gemm_rows_add.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "core/int_math.h"
#include "core/kernel_select.h"
#include "core/tile_path.h"

namespace gradkit {
namespace {

GemmShape intoTile(GemmShape shape, float beta) {
  shape.beta = beta;
  shape.ldc = shape.n;
  return shape;
}

}  // namespace

TileGemmRowsAdd::TileGemmRowsAdd(const GemmShape& first, const GemmShape& second)
    : first_(intoTile(first, 0.0f)), second_(intoTile(second, 1.0f)) {
  if (first.m != second.m || first.n != second.n) {
    throw std::invalid_argument("gradkit::TileGemmRowsAdd: the products differ in shape (" + std::to_string(first.m) +
                                " x " + std::to_string(first.n) + " and " + std::to_string(second.m) + " x " +
                                std::to_string(second.n) + ")");
  }
  const GemmShape& x = first_.shape();
  const GemmShape& y = second_.shape();
  fused_ = x.sums == GemmSums::Bf16Pairs && y.sums == GemmSums::Bf16Pairs && x.k > 0 && y.k > 0 && x.m > 0 && x.n > 0 &&
           !scalarKernelsForced() && cpuMatrixFeatures().avx512bf16;
  if (fused_) {
    scratchBytes_ = static_cast<size_t>(roundUp(static_cast<int64_t>(tile_gemm_detail::bf16PairsScratchBytes(x)), 64)) +
                    tile_gemm_detail::bf16PairsScratchBytes(y);
  } else {
    scratchBytes_ = std::max(first_.scratchBytes(), second_.scratchBytes());
  }
}

void TileGemmRowsAdd::run(const void* a1, const void* b1, const void* a2, const void* b2, float* const* rows,
                          float* tile, void* scratch) const {
  const GemmShape& x = first_.shape();
  if (fused_) {
    tile_gemm_detail::runAvx512Bf16PairsRowsAdd(x, static_cast<const uint16_t*>(a1), static_cast<const uint16_t*>(b1),
                                                second_.shape(), static_cast<const uint16_t*>(a2),
                                                static_cast<const uint16_t*>(b2), rows, scratch);
    return;
  }
  first_.run(a1, b1, tile, scratch);
  second_.run(a2, b2, tile, scratch);
  for (int64_t r = 0; r < x.m; ++r) tile_gemm_detail::addRow(rows[r], tile + r * x.n, x.n);
}

}  // namespace gradkit
