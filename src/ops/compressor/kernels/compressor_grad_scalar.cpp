// The scalar reference of the CompressorGrad kernels: one channel at a time, every operation written out in the order
// of compressor_grad_kernel.h (the Highway kernels repeat it lane by lane).
#include <cstdint>

#include "gradkit/float_convert.h"
#include "ops/compressor/kernels/compressor_grad_kernel.h"

namespace gradkit::kernels {
namespace {

float widenOne(bool half, const void* base, int64_t i) {
  const uint16_t bits = static_cast<const uint16_t*>(base)[i];
  return half ? halfToFloat(bits) : bf16ToFloat(bits);
}

uint16_t narrowOne(bool half, float value) { return half ? floatToHalf(value) : floatToBf16(value); }

// Dekker's TwoProduct: hi = fl(a * b), lo = a * b - hi exactly (Veltkamp split with 2^12 + 1).
void twoProduct(float a, float b, float& hi, float& lo) {
  const float ca = 4097.0f * a;
  const float aHi = ca - (ca - a);
  const float aLo = a - aHi;
  const float cb = 4097.0f * b;
  const float bHi = cb - (cb - b);
  const float bLo = b - bHi;
  hi = a * b;
  lo = aLo * bLo - (((hi - aHi * bHi) - aLo * bHi) - aHi * bLo);
}

// Knuth's TwoSum: sum = fl(a + b), err = a + b - sum exactly.
void twoSum(float a, float b, float& sum, float& err) {
  sum = a + b;
  const float bVirtual = sum - a;
  const float aVirtual = sum - bVirtual;
  err = (a - aVirtual) + (b - bVirtual);
}

void columnSumsScalar(const CompressorGradBlock& block, float* wHi, float* wLo) {
  for (int64_t d = 0; d < block.width; ++d) {
    float sum = 0.0f, errors = 0.0f;
    for (int64_t n = 0; n < block.rows; ++n) {
      float product, productErr, next, sumErr;
      twoProduct(block.s[n * block.ld + d], block.k[n * block.ld + d], product, productErr);
      twoSum(sum, product, next, sumErr);
      sum = next;
      errors = errors + (sumErr + productErr);
    }
    wHi[d] = sum;
    wLo[d] = errors;
  }
}

void routeScalar(const CompressorGradRoute& r) {
  const CompressorGradBlock& b = r.block;
  for (int64_t i = 0; i < r.count; ++i) {
    const int64_t row = r.r0 + i;
    const float* s = b.s + (row * r.coff + r.h) * b.ld;
    const float* k = b.k + (row * r.coff + r.h) * b.ld;
    float* aKv = r.aKv + i * r.ldA;
    float* aScore = r.aScore + i * r.ldA;
    float* apeSum = r.apeSum + row * r.ldApe;
    float* apeComp = r.apeComp + row * r.ldApe;
    for (int64_t d = 0; d < b.width; ++d) {
      const float dc = widenOne(r.half, r.dC, d);
      const float sv = s[d];
      const float dk = dc * sv;
      float diff, err;  // diff + err = K - wHi exactly; K - w = diff + (err - wLo)
      twoSum(k[d], -r.wHi[d], diff, err);
      const float low = err - r.wLo[d];
      const float dz = sv * (dc * diff + dc * low);
      aKv[d] = dk;
      aScore[d] = dz;
      const float y = dz - apeComp[d];
      const float t = apeSum[d] + y;
      apeComp[d] = (t - apeSum[d]) - y;
      apeSum[d] = t;
    }
  }
}

void widenScalar(bool half, const void* from, float* to, int64_t count) {
  for (int64_t i = 0; i < count; ++i) to[i] = widenOne(half, from, i);
}

void narrowScalar(bool half, const float* from, void* to, int64_t count) {
  auto* out = static_cast<uint16_t*>(to);
  for (int64_t i = 0; i < count; ++i) out[i] = narrowOne(half, from[i]);
}

}  // namespace

const CompressorGradKernels kCompressorGradScalarKernels{columnSumsScalar, routeScalar, widenScalar, narrowScalar};

}  // namespace gradkit::kernels
