// The plain scalar MhcPost and MhcPostBackward kernels, in the orders of mhc_post_kernel.h.
#include <cmath>

#include "gradkit/float_convert.h"
#include "ops/mhc/kernels/mhc_post_kernel.h"

namespace gradkit::kernels {
namespace {

float widen(aclDataType dtype, uint16_t bits) { return dtype == ACL_FLOAT16 ? halfToFloat(bits) : bf16ToFloat(bits); }

uint16_t narrow(aclDataType dtype, float value) {
  return dtype == ACL_FLOAT16 ? floatToHalf(value) : floatToBf16(value);
}

void forwardScalar(const MhcPostProblem& p, int64_t first, int64_t count) {
  const int64_t n = p.streams, d = p.hidden;
  for (int64_t t = first; t < first + count; ++t) {
    const uint16_t* x = p.x + t * n * d;
    const uint16_t* hOut = p.hOut + t * d;
    const float* hPost = p.hPost + t * n;
    const float* hRes = p.hRes != nullptr ? p.hRes + t * n * n : nullptr;
    uint16_t* out = p.out + t * n * d;
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t e = 0; e < d; ++e) {
        float acc = widen(p.dtype, hOut[e]) * hPost[j];
        if (hRes == nullptr) {
          acc = widen(p.dtype, x[j * d + e]) + acc;
        } else {
          for (int64_t i = 0; i < n; ++i) acc = std::fma(widen(p.dtype, x[i * d + e]), hRes[i * n + j], acc);
        }
        out[j * d + e] = narrow(p.dtype, acc);
      }
    }
  }
}

/** sum over d of a[d] * b[d] in the lane order of mhc_post_kernel.h (b widened from 16 bits or not). */
float laneDot(aclDataType dtype, const uint16_t* a, const uint16_t* b, int64_t d) {
  float partial[kMhcPostSumLanes] = {};
  const int64_t padded = (d + kMhcPostSumLanes - 1) / kMhcPostSumLanes * kMhcPostSumLanes;
  for (int64_t e = 0; e < padded; ++e) {
    const float av = e < d ? widen(dtype, a[e]) : 0.0f;
    const float bv = e < d ? widen(dtype, b[e]) : 0.0f;
    partial[e % kMhcPostSumLanes] = std::fma(av, bv, partial[e % kMhcPostSumLanes]);
  }
  return mhcPostCombineLanes(partial);
}

void backwardScalar(const MhcPostBackwardProblem& p, int64_t first, int64_t count) {
  const int64_t n = p.streams, d = p.hidden;
  for (int64_t t = first; t < first + count; ++t) {
    const uint16_t* g = p.gradOutput + t * n * d;
    const uint16_t* x = p.x + t * n * d;
    const uint16_t* hOut = p.hOut + t * d;
    const float* hPost = p.hPost + t * n;
    const float* hRes = p.hRes != nullptr ? p.hRes + t * n * n : nullptr;
    uint16_t* gradX = p.gradX + t * n * d;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t e = 0; e < d; ++e) {
        if (hRes == nullptr) {
          gradX[i * d + e] = g[i * d + e];
          continue;
        }
        float acc = widen(p.dtype, g[e]) * hRes[i * n];
        for (int64_t j = 1; j < n; ++j) acc = std::fma(widen(p.dtype, g[j * d + e]), hRes[i * n + j], acc);
        gradX[i * d + e] = narrow(p.dtype, acc);
      }
    }
    for (int64_t e = 0; e < d; ++e) {
      float acc = widen(p.dtype, g[e]) * hPost[0];
      for (int64_t j = 1; j < n; ++j) acc = std::fma(widen(p.dtype, g[j * d + e]), hPost[j], acc);
      p.gradHOut[t * d + e] = narrow(p.dtype, acc);
    }
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) p.gradHRes[(t * n + i) * n + j] = laneDot(p.dtype, x + i * d, g + j * d, d);
    }
    for (int64_t j = 0; j < n; ++j) p.gradHPost[t * n + j] = laneDot(p.dtype, g + j * d, hOut, d);
  }
}

}  // namespace

const MhcPostKernels kMhcPostScalarKernels{forwardScalar, backwardScalar};

}  // namespace gradkit::kernels
