// The tile products of the flash attention kernels (fa_run.h): a TileGemm made for the tile's shape on the call, so
// tail tiles need no padding (making one costs a few checks, nothing next to the product), or TileGemm's scalar
// reference for the scalar table.
#include "core/tile_gemm.h"
#include "ops/flash_attention/kernels/fa_run.h"

namespace gradkit::kernels {

void faRunGemm(const GemmShape& g, const void* a, const void* b, float* c, void* scratch) {
  if (g.m <= 0 || g.n <= 0) return;
  TileGemm(g).run(a, b, c, scratch);
}

void faRunGemmScalar(const GemmShape& g, const void* a, const void* b, float* c, void*) {
  if (g.m <= 0 || g.n <= 0) return;
  const GemmShape shape = TileGemm(g).shape();  // leading dims checked and filled
  if (g.k <= 0) {
    TileGemm(shape).run(a, b, c, nullptr);  // the empty sum (no scratch)
    return;
  }
  tile_gemm_detail::runScalar(shape, a, b, c);
}

size_t faGemmScratchBytes(const GemmShape& g) { return TileGemm(g).scratchBytes(); }

}  // namespace gradkit::kernels
