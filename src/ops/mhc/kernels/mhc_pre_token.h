// The pieces both MhcPre block kernels share: the scratch layout of one block and the per-token gates (inv_rms,
// the pre / post / residual gates and the caches), which are scalar work of O(F) per token.
#pragma once

#include <cstdint>

#include "ops/mhc/kernels/mhc_pre_kernel.h"

namespace gradkit::kernels::mhc_pre {

/** Where the parts of one block's scratch lie (offsets in floats). */
struct ScratchLayout {
  int64_t xg = 0;       // [kMhcPreBlockTokens, chunkWidth]: the staged xg chunk
  int64_t mix = 0;      // [kMhcPreBlockTokens, paddedFusion]: h_mix (all columns, padding included)
  int64_t squares = 0;  // [kMhcPreBlockTokens, 8]: the partial sums of squares
  int64_t gates = 0;    // [kMhcPreBlockTokens, N]: h_pre (with hcEps), for h_in
  int64_t total = 0;
};

inline ScratchLayout scratchLayout(const MhcPreProblem& p) {
  ScratchLayout s;
  s.xg = 0;
  s.mix = s.xg + kMhcPreBlockTokens * p.chunkWidth();
  s.squares = s.mix + kMhcPreBlockTokens * p.paddedFusion();
  s.gates = s.squares + kMhcPreBlockTokens * 8;
  s.total = s.gates + kMhcPreBlockTokens * p.streams;
  return s;
}

/** The sum of squares from its 8 partials, in the fixed tree of mhc_pre_kernel.h. */
inline float combineSquares(const float* s) {
  const float a = s[0] + s[1];
  const float b = s[2] + s[3];
  const float c = s[4] + s[5];
  const float d = s[6] + s[7];
  const float ab = a + b;
  const float cd = c + d;
  return ab + cd;
}

/**
 * The gates of token `t` from its h_mix row `mix` (F values) and its 8 partial sums of squares: writes hPost,
 * hRes and the requested caches, and the N values of h_pre (with hcEps) to `gates`. Spec mhc.md 2.2 steps 2, 5-9
 * and 2.4, one rounded operation at a time in that order (mhc_pre_gates.cpp is built without contraction into
 * fused multiply-adds, so both kernels get the same bits whatever the target).
 */
void tokenGates(const MhcPreProblem& p, int64_t t, const float* mix, const float* squares, float* gates);

/** The gates' sigma(z) = 1 / (1 + exp(-z)): negate, exp, add 1, divide (spec mhc.md 2.2 step 7). */
float gateSigmoid(float z);

}  // namespace gradkit::kernels::mhc_pre
