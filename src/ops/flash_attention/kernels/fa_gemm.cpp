// The tile products of the flash attention kernels (fa_run.h): a TileGemm made for the tile's shape on the call, so
// tail tiles need no padding (making one costs a few checks, nothing next to the product), or TileGemm's scalar
// reference for the scalar table.
#include "core/tile_gemm.h"
#include "ops/flash_attention/kernels/fa_run.h"

namespace gradkit::kernels {
namespace {

TileGemmShape shapeOf(const FaGemm& g) {
  TileGemmShape s;
  s.m = g.m;
  s.n = g.n;
  s.k = g.k;
  s.transA = g.transA;
  s.transB = g.transB;
  s.lda = g.lda;
  s.ldb = g.ldb;
  s.ldc = g.ldc;
  s.inputType = ACL_FLOAT;
  s.alpha = 1.0f;
  s.beta = g.accumulate ? 1.0f : 0.0f;
  return s;
}

}  // namespace

void faRunGemm(const FaGemm& g, const float* a, const float* b, float* c, void* scratch) {
  if (g.m <= 0 || g.n <= 0) return;
  TileGemm(shapeOf(g)).run(a, b, c, scratch);
}

void faRunGemmScalar(const FaGemm& g, const float* a, const float* b, float* c, void*) {
  if (g.m <= 0 || g.n <= 0) return;
  const TileGemmShape shape = TileGemm(shapeOf(g)).shape();  // leading dims checked and filled
  if (g.k <= 0) {
    TileGemm(shape).run(a, b, c, nullptr);  // the empty sum (no scratch)
    return;
  }
  tile_gemm_detail::runScalar(shape, a, b, c);
}

size_t faGemmScratchBytes(const FaGemm& g) { return TileGemm(shapeOf(g)).scratchBytes(); }

}  // namespace gradkit::kernels
