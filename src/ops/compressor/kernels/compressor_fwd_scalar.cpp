// The scalar Compressor forward kernels: the reference of the SIMD instance (compressor_fwd_hwy.cpp, the same
// operations per channel in the same order) and its fallback. One channel at a time; the scratch holds its N e_n.
#include <cmath>
#include <cstdint>
#include <limits>

#include "gradkit/float_convert.h"
#include "ops/compressor/kernels/compressor_fwd_kernel.h"
#include "ops/compressor/kernels/compressor_fwd_math.h"

namespace gradkit::kernels {

float compressorFwdExp(float x) {
  if (std::isnan(x)) return x;
  if (x < kCompressorExpMin) return 0.0f;
  const float n = std::nearbyint(x * kCompressorLog2e);
  float r = std::fma(n, -kCompressorLn2Hi, x);
  r = std::fma(n, -kCompressorLn2Lo, r);
  float p = kCompressorExpPoly[0];
  for (int i = 1; i < kCompressorExpPolyTerms; ++i) p = std::fma(p, r, kCompressorExpPoly[i]);
  const float rr = r * r;
  float y = std::fma(p, rr, r);
  y = y + 1.0f;
  const auto exponent = static_cast<uint32_t>(static_cast<int32_t>(n) + 127);
  return y * detail::bitsFloat(exponent << 23);
}

void compressorFwdChannelsScalar(const CompressorFwdBlock& block, int64_t first, int64_t end, float* scratch) {
  const int64_t rows = block.rows, width = block.headDim;
  const auto zOf = [&](int64_t n, int64_t d) {
    const float score = block.score[n][d];
    return block.ape[n] != nullptr ? score + block.ape[n][d] : score;
  };
  for (int64_t d = first; d < end; ++d) {
    float top = -std::numeric_limits<float>::infinity();
    for (int64_t n = 0; n < rows; ++n) {
      if (block.kv[n] == nullptr) continue;
      const float z = zOf(n, d);
      top = top > z ? top : z;
    }
    float sum = 0.0f, sumError = 0.0f;
    for (int64_t n = 0; n < rows; ++n) {
      const float e = block.kv[n] == nullptr ? 0.0f : compressorFwdExp(zOf(n, d) - top);
      scratch[n] = e;
      const float s = sum + e;
      const float eVirtual = s - sum;
      const float sumVirtual = s - eVirtual;
      sumError = sumError + ((sum - sumVirtual) + (e - eVirtual));
      sum = s;
    }
    const float total = sum + sumError;
    float acc = 0.0f, accError = 0.0f;
    for (int64_t n = 0; n < rows; ++n) {
      const float weight = scratch[n] / total;
      const float k = block.kv[n] == nullptr ? 0.0f : block.kv[n][d];
      if (block.softmaxScore != nullptr) block.softmaxScore[n * width + d] = weight;
      if (block.kvOut != nullptr) block.kvOut[n * width + d] = k;
      const float product = weight * k;
      const float productError = std::fma(weight, k, -product);
      const float s = acc + product;
      const float pVirtual = s - acc;
      const float accVirtual = s - pVirtual;
      accError = accError + (productError + ((acc - accVirtual) + (product - pVirtual)));
      acc = s;
    }
    const float pooled = acc + accError;
    block.cmpKv[d] = block.half ? floatToHalf(pooled) : floatToBf16(pooled);
  }
}

namespace {

void blockScalar(const CompressorFwdBlock& block, float* scratch) {
  compressorFwdChannelsScalar(block, 0, block.headDim, scratch);
}

void widenHalfScalar(const uint16_t* from, float* to, int64_t count) {
  for (int64_t i = 0; i < count; ++i) to[i] = halfToFloat(from[i]);
}

}  // namespace

int64_t compressorFwdScratchFloats(int64_t rows) { return rows * kCompressorMaxLanes; }

const CompressorFwdKernels kCompressorFwdScalarKernels{blockScalar, widenHalfScalar};

}  // namespace gradkit::kernels
