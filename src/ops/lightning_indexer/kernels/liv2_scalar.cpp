// The scalar LightningIndexerV2 kernels: the reference of liv2_kernel.h's orders, which the SIMD kernels match bit for
// bit.
#include <cmath>

#include "core/tile_gemm.h"
#include "gradkit/float_convert.h"
#include "ops/lightning_indexer/kernels/liv2_kernel.h"

namespace gradkit::kernels {
namespace {

void gemmScalar(const gradkit::GemmShape& g, const void* a, const void* b, float* c, void*) {
  if (g.m <= 0 || g.n <= 0) return;
  gradkit::tile_gemm_detail::runScalar(gradkit::TileGemm(g).shape(), a, b, c);  // k = 128 > 0
}

void scoresScalar(const float* dots, int64_t ldd, const float* w, int64_t rows, int64_t heads, int64_t keys,
                  float* scores, int64_t lds) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < keys; ++j) {
      float acc = 0.0f;
      for (int64_t h = 0; h < heads; ++h) {
        const float dot = dots[(r * heads + h) * ldd + j];
        acc = std::fma(w[r * heads + h], dot < 0.0f ? 0.0f : dot, acc);
      }
      scores[r * lds + j] = acc;
    }
  }
}

void widenHalfScalar(const uint16_t* from, int64_t count, float* to) {
  for (int64_t i = 0; i < count; ++i) to[i] = gradkit::halfToFloat(from[i]);
}

}  // namespace

const LiV2Kernels kLiV2ScalarKernels{gemmScalar, scoresScalar, widenHalfScalar};

}  // namespace gradkit::kernels
