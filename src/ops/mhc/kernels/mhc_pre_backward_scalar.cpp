// The plain scalar MhcPreBackward kernels: one element at a time, the contract of mhc_pre_backward_kernel.h.
#include <algorithm>
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

void mhcSegmentScalar(aclDataType dtype, const MhcColumnSegment& sg) {
  const int64_t f = sg.fusion;
  for (int64_t c0 = 0; c0 < sg.cols; c0 += kMhcStripColumns) {
    const int64_t w = std::min(kMhcStripColumns, sg.cols - c0);
    for (int64_t r = 0; r < sg.rows; ++r) {
      const int64_t at = r * sg.ldx + c0;
      for (int64_t c = 0; c < w; ++c) {
        float dxg = 0.0f;
        for (int64_t i = 0; i < f; ++i) dxg = std::fma(sg.dm[r * f + i], sg.phi[i * sg.ldPhi + c0 + c], dxg);
        const float xf = load16(dtype, sg.x, at + c);
        const float gamma = sg.gamma != nullptr ? sg.gamma[c0 + c] : 1.0f;
        const float hin = load16(dtype, sg.gin, r * sg.ldGin + c0 + c) * sg.hPre[r * sg.ldHPre];
        const float rms = xf * sg.rmsCoef[r];
        float sum = (hin + rms) + (sg.gamma != nullptr ? gamma * dxg : dxg);
        if (sg.gradXPost != nullptr) sum += load16(dtype, sg.gradXPost, at + c);
        if (sg.gammaSum != nullptr) sg.gammaSum[c0 + c] += xf * dxg;
        store16(dtype, sg.gradX, at + c, sum);
        const float xg = sg.gamma != nullptr ? xf * gamma : xf;
        sg.xgStrip[r * kMhcStripColumns + c] = sg.hf32 ? roundToHf32(xg) : xg;
      }
    }
    for (int64_t i = 0; i < f; ++i) {
      for (int64_t c = 0; c < w; ++c) {
        float p = 0.0f;
        for (int64_t r = 0; r < sg.rows; ++r) p = std::fma(sg.dm[r * f + i], sg.xgStrip[r * kMhcStripColumns + c], p);
        float& sum = sg.phiSum[i * sg.ldPhi + c0 + c];
        float& comp = sg.phiComp[i * sg.ldPhi + c0 + c];
        const float y = p - comp;
        const float t = sum + y;
        comp = (t - sum) - y;
        sum = t;
      }
    }
  }
}

const MhcPreBackwardKernels kMhcPreBackwardScalarKernels{mhcStreamDotsScalar, mhcSegmentScalar};

}  // namespace gradkit::kernels
