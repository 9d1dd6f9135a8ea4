// The tile GEMM: shape checks, scratch sizing and the scalar reference kernel. The Highway kernel is in
// core/tile_gemm_hwy.cpp; both follow the numerics contract of core/tile_gemm.h.
#include "core/tile_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/kernel_select.h"
#include "core/tile_path.h"

namespace gradkit {
namespace {

[[noreturn]] void reject(const std::string& what) { throw std::invalid_argument("gradkit::TileGemm: " + what); }

float bf16Value(uint16_t bits16) {
  const uint32_t bits = static_cast<uint32_t>(bits16) << 16;
  float value;
  std::memcpy(&value, &bits, sizeof(float));
  return value;
}

template <typename T>
float valueAt(const T* data, int64_t index) {
  if constexpr (sizeof(T) == 2) {
    return bf16Value(data[index]);
  } else {
    return data[index];
  }
}

template <typename T>
void scalarTyped(const TileGemmShape& s, const T* a, const T* b, float* c) {
  // Element strides of op(A) (i, k) and op(B) (k, j).
  const int64_t aRow = s.transA ? 1 : s.lda, aK = s.transA ? s.lda : 1;
  const int64_t bK = s.transB ? 1 : s.ldb, bCol = s.transB ? s.ldb : 1;
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < s.k; ++k)
        acc = std::fma(valueAt(a, i * aRow + k * aK), valueAt(b, k * bK + j * bCol), acc);
      const float t = s.alpha * acc;
      float& out = c[i * s.ldc + j];
      out = s.beta == 0.0f ? t : std::fma(s.beta, out, t);
    }
  }
}

}  // namespace

namespace tile_gemm_detail {

void runScalar(const TileGemmShape& shape, const void* a, const void* b, float* c) {
  if (shape.sums == GemmSums::Bf16Pairs) {
    runScalarBf16Pairs(shape, static_cast<const uint16_t*>(a), static_cast<const uint16_t*>(b), c);
  } else if (shape.inputType == ACL_BF16) {
    scalarTyped(shape, static_cast<const uint16_t*>(a), static_cast<const uint16_t*>(b), c);
  } else {
    scalarTyped(shape, static_cast<const float*>(a), static_cast<const float*>(b), c);
  }
}

size_t portableScratchBytes(const TileGemmShape& s) {
  // The Highway kernel's layout with the widest panel any x86 target uses (2 x 16 floats).
  constexpr int64_t kWidestPanel = 32;
  const int64_t panels = (s.n + kWidestPanel - 1) / kWidestPanel;
  const int64_t floats = s.k * panels * kWidestPanel + (s.inputType == ACL_BF16 ? s.m * s.k : 0);
  return static_cast<size_t>(floats) * sizeof(float);
}

}  // namespace tile_gemm_detail

TileGemm::TileGemm(const TileGemmShape& shapeIn) : shape_(shapeIn) {
  TileGemmShape& g = shape_;
  if (const std::string problem = completeGemmShape(g); !problem.empty()) reject(problem);
  // alpha may be anything (a NaN or infinite scale from the data propagates through t = alpha * acc); beta selects
  // between writing and accumulating, so it must be a number.
  if (!std::isfinite(g.beta)) reject("expected a finite beta");
  scalar_ = scalarKernelsForced();
  if (g.m == 0 || g.n == 0 || g.k == 0 || scalar_) return;  // no scratch
  if (g.sums == GemmSums::Bf16Pairs) {                      // the hardware kernel or the scalar emulation (no scratch)
    bf16PairsHardware_ = cpuMatrixFeatures().avx512bf16;
    if (bf16PairsHardware_) scratchBytes_ = tile_gemm_detail::bf16PairsScratchBytes(g);
    return;
  }
  // Enough for the target dispatched now and for every other x86 target (tests switch targets).
  scratchBytes_ = std::max(tile_gemm_detail::simdScratchBytes(g), tile_gemm_detail::portableScratchBytes(g));
}

const char* TileGemm::kernelName() const {
  if (scalar_ || shape_.m == 0 || shape_.n == 0 || shape_.k == 0) return "scalar";
  if (shape_.sums == GemmSums::Bf16Pairs) return bf16PairsHardware_ ? "AVX512-BF16 pairs" : "scalar pairs";
  return tile_gemm_detail::simdKernelName(shape_, scratchBytes_);
}

void TileGemm::run(const void* a, const void* b, float* c, void* scratch) const {
  const TileGemmShape& g = shape_;
  if (g.m == 0 || g.n == 0) return;
  if (g.k == 0) {  // empty sum: acc = 0, so C = alpha * 0 (+ beta * C)
    for (int64_t i = 0; i < g.m; ++i) {
      for (int64_t j = 0; j < g.n; ++j) {
        float& out = c[i * g.ldc + j];
        const float t = g.alpha * 0.0f;
        out = g.beta == 0.0f ? t : std::fma(g.beta, out, t);
      }
    }
    return;
  }
  if (bf16PairsHardware_) {
    tile_gemm_detail::runAvx512Bf16Pairs(g, static_cast<const uint16_t*>(a), static_cast<const uint16_t*>(b), c,
                                         scratch);
    return;
  }
  if (!scalar_ && g.sums == GemmSums::Sequential && tile_gemm_detail::runSimd(g, a, b, c, scratch, scratchBytes_)) {
    return;
  }
  tile_gemm_detail::runScalar(g, a, b, c);
}

}  // namespace gradkit
