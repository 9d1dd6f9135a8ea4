// The plain scalar MhcPreBackward kernels: one element at a time, the contract of mhc_pre_backward_kernel.h.
#include <cmath>
#include <cstring>

#include "core/hf32.h"
#include "gradkit/float_convert.h"
#include "ops/mhc/kernels/mhc_pre_backward_kernel.h"

namespace gradkit::kernels {
namespace {

// Element i of a dense FLOAT16 / BF16 buffer, widened exactly.
float load16(aclDataType dtype, const void* base, int64_t i) {
  uint16_t bits;
  std::memcpy(&bits, static_cast<const uint16_t*>(base) + i, sizeof(bits));
  return dtype == ACL_FLOAT16 ? halfToFloat(bits) : bf16ToFloat(bits);
}

void store16(aclDataType dtype, void* base, int64_t i, float value) {
  const uint16_t bits = dtype == ACL_FLOAT16 ? floatToHalf(value) : floatToBf16(value);
  std::memcpy(static_cast<uint16_t*>(base) + i, &bits, sizeof(bits));
}

}  // namespace

void mhcStreamDotsScalar(aclDataType dtype, const void* x, const void* gin, int64_t streams, int64_t hidden,
                         float* gPre) {
  // Eight interleaved partial sums (added pairwise at the end): the error of a long fp32 dot stays near the SIMD
  // kernel's, without depending on it.
  constexpr int kParts = 8;
  for (int64_t i = 0; i < streams; ++i) {
    float part[kParts] = {};
    for (int64_t d = 0; d < hidden; ++d) {
      part[d % kParts] += load16(dtype, gin, d) * load16(dtype, x, i * hidden + d);
    }
    gPre[i] = ((part[0] + part[4]) + (part[2] + part[6])) + ((part[1] + part[5]) + (part[3] + part[7]));
  }
}

void mhcStageXgScalar(aclDataType dtype, const void* x, int64_t ldx, const float* gamma, int64_t rows, int64_t cols,
                      bool hf32, float* xg, int64_t ldxg) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      float value = load16(dtype, x, r * ldx + c);
      if (gamma != nullptr) value *= gamma[c];
      xg[r * ldxg + c] = hf32 ? roundToHf32(value) : value;
    }
  }
}

void mhcGradXRowScalar(aclDataType dtype, const MhcGradXRow& row, int64_t n) {
  for (int64_t c = 0; c < n; ++c) {
    const float xf = load16(dtype, row.x, c);
    const float hin = load16(dtype, row.gin, c) * row.hPre;
    const float rms = xf * row.rmsCoef;
    const float mm = row.gamma != nullptr ? row.gamma[c] * row.dxg[c] : row.dxg[c];
    float sum = (hin + rms) + mm;
    if (row.gradXPost != nullptr) sum += load16(dtype, row.gradXPost, c);
    if (row.gammaSum != nullptr) row.gammaSum[c] += xf * row.dxg[c];
    store16(dtype, row.gradX, c, sum);
  }
}

void mhcDxgBlockScalar(const float* dm, int64_t fusion, int64_t rows, const float* phi, int64_t ldPhi, int64_t cols,
                       float* dxg, int64_t ldDxg) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      float acc = 0.0f;
      for (int64_t f = 0; f < fusion; ++f) acc = std::fma(dm[r * fusion + f], phi[f * ldPhi + c], acc);
      dxg[r * ldDxg + c] = acc;
    }
  }
}

void mhcPhiGradBlockScalar(const float* dm, int64_t fusion, int64_t rows, const float* xg, int64_t ldXg, int64_t cols,
                           float* gradPhi, float* comp, int64_t ldPhi) {
  for (int64_t f = 0; f < fusion; ++f) {
    for (int64_t c = 0; c < cols; ++c) {
      float acc = 0.0f;
      for (int64_t r = 0; r < rows; ++r) acc = std::fma(dm[r * fusion + f], xg[r * ldXg + c], acc);
      float& sum = gradPhi[f * ldPhi + c];
      float& low = comp[f * ldPhi + c];
      const float y = acc - low;
      const float t = sum + y;
      low = (t - sum) - y;
      sum = t;
    }
  }
}

const MhcPreBackwardKernels kMhcPreBackwardScalarKernels{mhcStreamDotsScalar, mhcStageXgScalar, mhcGradXRowScalar,
                                                         mhcDxgBlockScalar, mhcPhiGradBlockScalar};

}  // namespace gradkit::kernels
