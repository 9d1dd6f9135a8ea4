// The per-token gates of MhcPre (mhc_pre_token.h), shared by the SIMD and the scalar kernel. The spec fixes the
// order of operations (multiply by inv_rms, then by alpha, then add bias; 1 / sqrt(ss * (1/K) + eps)), so this
// file forbids contracting a product and a sum into one fused multiply-add: GCC contracts across statements in
// C++ by default (-ffp-contract=fast) wherever the target has FMA.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <cmath>

#include "ops/mhc/kernels/mhc_pre_token.h"

namespace gradkit::kernels::mhc_pre {

float gateSigmoid(float z) {
  const float e = std::exp(-z);
  const float denominator = 1.0f + e;
  return 1.0f / denominator;
}

void tokenGates(const MhcPreProblem& p, int64_t t, const float* mix, const float* squares, float* gates) {
  const int64_t n = p.streams, f = p.fusion;
  const float ss = combineSquares(squares);
  const float mean = ss * p.inverseWidth;
  const float shifted = mean + p.normEps;
  const float root = std::sqrt(shifted);
  const float invRms = 1.0f / root;
  if (p.invRms != nullptr) p.invRms[t] = invRms;
  if (p.hMix != nullptr) {
    for (int64_t j = 0; j < f; ++j) p.hMix[t * f + j] = mix[j];
  }
  for (int64_t j = 0; j < f; ++j) {
    const int64_t part = j < n ? 0 : j < 2 * n ? 1 : 2;
    const float w = mix[j] * invRms;
    const float scaled = w * p.alpha[part];
    const float z = scaled + p.bias[j];
    if (part == 0) {
      const float pre = gateSigmoid(z) + p.hcEps;
      gates[j] = pre;
      if (p.hPre != nullptr) p.hPre[t * n + j] = pre;
    } else if (part == 1) {
      const float post = 2.0f * gateSigmoid(z);
      p.hPost[t * n + (j - n)] = p.noResidual ? post + p.hcEps : post;  // alpha of 2: + hcEps (spec 2.4)
    } else {
      p.hRes[t * (f - 2 * n) + (j - 2 * n)] = z;
    }
  }
}

}  // namespace gradkit::kernels::mhc_pre
