// The plain scalar SparseLightningIndexerKLLossGrad element kernels (kl_grad_kernel.h) and TileGemm's scalar
// reference for the products: the reference the SIMD table is checked against bit for bit.
#include <cstdint>

#include "gradkit/float_convert.h"
#include "ops/lightning_indexer/kernels/kl_grad_kernel.h"

namespace gradkit::kernels {
namespace {

float widenBits(aclDataType dtype, uint16_t bits) {
  return dtype == ACL_FLOAT16 ? halfToFloat(bits) : bf16ToFloat(bits);
}

uint16_t narrowBits(aclDataType dtype, float value) {
  return dtype == ACL_FLOAT16 ? floatToHalf(value) : floatToBf16(value);
}

void widenScalar(aclDataType dtype, const void* from, int64_t count, float* to) {
  const auto* bits = static_cast<const uint16_t*>(from);
  for (int64_t i = 0; i < count; ++i) to[i] = widenBits(dtype, bits[i]);
}

void logitsScalar(const float* w, const float* x, int64_t rows, int64_t cols, int64_t ld, float* out) {
  for (int64_t c = 0; c < cols; ++c) {
    double sum = 0.0;
    for (int64_t r = 0; r < rows; ++r) sum += static_cast<double>(w[r]) * static_cast<double>(x[r * ld + c]);
    out[c] = static_cast<float>(sum);
  }
}

void reluScalar(float* x, int64_t rows, int64_t cols, int64_t ld) {
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * ld;
    for (int64_t c = 0; c < cols; ++c) row[c] = row[c] > 0.0f ? row[c] : 0.0f;
  }
}

void gradScoresScalar(aclDataType dtype, const float* r, const float* w, const float* dI, int64_t rows, int64_t cols,
                      int64_t ld, void* dS) {
  for (int64_t h = 0; h < rows; ++h) {
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t at = h * ld + j;
      const uint16_t bits = r[at] > 0.0f ? narrowBits(dtype, w[h] * dI[j]) : uint16_t{0};
      if (dtype == ACL_BF16) {
        static_cast<uint16_t*>(dS)[at] = bits;
      } else {
        static_cast<float*>(dS)[at] = halfToFloat(bits);
      }
    }
  }
}

void addScalar(const float* from, int64_t count, float* to) {
  for (int64_t i = 0; i < count; ++i) to[i] += from[i];
}

void narrowScalar(aclDataType dtype, const float* from, int64_t count, void* to) {
  auto* bits = static_cast<uint16_t*>(to);
  for (int64_t i = 0; i < count; ++i) bits[i] = narrowBits(dtype, from[i]);
}

void sumNarrowScalar(aclDataType dtype, const float* from, int64_t count, int64_t stride, int64_t n, void* to) {
  auto* bits = static_cast<uint16_t*>(to);
  for (int64_t i = 0; i < n; ++i) {
    float sum = from[i];
    for (int64_t c = 1; c < count; ++c) sum += from[c * stride + i];
    bits[i] = narrowBits(dtype, sum);
  }
}

void gemmScalar(const TileGemm& gemm, const void* a, const void* b, float* c, void*) {
  const TileGemmShape& shape = gemm.shape();
  if (shape.sums == GemmSums::Bf16Pairs) {
    tile_gemm_detail::runScalarBf16Pairs(shape, static_cast<const uint16_t*>(a), static_cast<const uint16_t*>(b), c);
  } else {
    tile_gemm_detail::runScalar(shape, a, b, c);
  }
}

}  // namespace

const KlGradKernels kKlGradScalarKernels{widenScalar, logitsScalar, reluScalar,      gradScoresScalar,
                                         addScalar,   narrowScalar, sumNarrowScalar, gemmScalar};

}  // namespace gradkit::kernels
