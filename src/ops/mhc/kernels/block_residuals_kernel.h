// BlockAttentionResiduals and its gradient on dense token-major buffers. They know nothing about aclTensor.
//
// Per token the N + 1 values are v[0..N-1] = blockRes[t, i, :] and v[N] = partialBlock[t, :], always in that order
// ("value i" below). 16-bit inputs are widened exactly, all arithmetic is fp32, 16-bit outputs are rounded once to
// nearest even. Every fma below is one fused operation (std::fma / hn::MulAdd, compiled with -ffp-contract=off
// elsewhere), which is why the SIMD kernels agree with the scalar ones bit for bit on every FMA target.
//
// Fixed orders (the SIMD and the scalar kernels keep them exactly):
//   w[h] = normWeight[h] * projWeight[h] (fp32, once per call: blockResidualsScoreWeight), w[h] = 0 for h in
//   [H, Hp) where Hp = H rounded up to kBlockResidualsLanes.
//   Sums over H ("lane sums"): kBlockResidualsLanes partial sums, partial l taking h = l mod 16 in ascending order
//   with fma, h in [H, Hp) contributing fma(0, 0 or w, s); combined by mhcPostCombineLanes (mhc_post_kernel.h).
//   forward, per token:   ss[i] = lane sum of v[i,h]^2, dot[i] = lane sum of v[i,h] w[h];
//                         invNorm[i] = 1 / sqrt(ss[i] / H + eps)           (H as fp32, eps the fp32 of normEps)
//                         score[i] = dot[i] * invNorm[i]; blockResidualsSoftmax (max, std::exp, sequential sum,
//                         division); hidden[h] = p[0] v[0,h], then fma(p[i], v[i,h], acc) for i = 1..N; rounded once.
//   backward, per token:  d[i] = lane sum of g[h] v[i,h], dot[i] = lane sum of w[h] v[i,h];
//                         blockResidualsGradCoefficients: e = fma(p[i], d[i], e) from 0, i ascending;
//                         gs[i] = p[i] (d[i] - e); a[i] = gs[i] inv[i];
//                         c[i] = ((((gs[i] dot[i]) inv[i]) inv[i]) inv[i]) / H  (inv = invNorm, H as fp32);
//                         gradV[i,h] = fma(-c[i], v[i,h], fma(a[i], w[h], g[h] p[i]));  rounded once;
//                         s[h] = fma(a[i], v[i,h], s[h]) for i ascending, tokens ascending, into the caller's [Hp]
//                         partial sum (the plan gives each fixed chunk of tokens its own, then adds them in chunk
//                         order: blockResidualsAddPartials), so the bits do not depend on the thread count.
//   weights:              gradNormWeight[h] = s[h] * projWeight[h], gradProjWeight[h] = s[h] * normWeight[h].
#pragma once

#include <cmath>
#include <cstdint>

#include "acl/acl_base.h"
#include "ops/mhc/kernels/mhc_post_kernel.h"

namespace gradkit::kernels {

/** Partial sums of every sum over H: MhcPost's 16 (one AVX-512 register, two AVX2 ones), combined the same way. */
inline constexpr int64_t kBlockResidualsLanes = kMhcPostSumLanes;

/** Values per token the kernels hold on the stack: N + 1 with N <= 128 (the gradient's limit; the forward's is 100). */
inline constexpr int64_t kBlockResidualsMaxValues = 129;

/** H rounded up to whole lane groups: the stride of the score weight and of the weight-sum partials. */
inline constexpr int64_t blockResidualsPaddedHidden(int64_t hidden) {
  return (hidden + kBlockResidualsLanes - 1) / kBlockResidualsLanes * kBlockResidualsLanes;
}

/** One checked BlockAttentionResiduals problem. Tensors of `dtype` hold FLOAT16 / BF16 bits or floats. */
struct BlockResidualsProblem {
  int64_t tokens = 0, blocks = 0, hidden = 0;  // T, N, H
  aclDataType dtype = ACL_BF16;
  float normEps = 0.0f;
  const void* partialBlock = nullptr;  // [T, H]
  const void* blockRes = nullptr;      // [T, N, H]
  const float* weight = nullptr;       // [Hp] (blockResidualsScoreWeight)
  void* hiddenStates = nullptr;        // [T, H]
  float* invNorm = nullptr;            // [T, N + 1], or null (not saved)
  float* probs = nullptr;              // [T, N + 1], or null (not saved)
};

/** One checked BlockAttentionResidualsGrad problem (N may be 0). */
struct BlockResidualsGradProblem {
  int64_t tokens = 0, blocks = 0, hidden = 0;
  aclDataType dtype = ACL_BF16;
  const void* partialBlock = nullptr;  // [T, H]
  const void* blockRes = nullptr;      // [T, N, H]
  const float* weight = nullptr;       // [Hp]
  const void* gradHidden = nullptr;    // [T, H]
  const float* invNorm = nullptr;      // [T, N + 1]
  const float* probs = nullptr;        // [T, N + 1]
  void* gradPartialBlock = nullptr;    // [T, H]
  void* gradBlockRes = nullptr;        // [T, N, H]
};

/** The kernels of one implementation; each runs tokens [first, first + count). */
struct BlockResidualsKernels {
  void (*forward)(const BlockResidualsProblem& problem, int64_t first, int64_t count);
  /** gradV of the tokens written; their weight sum added into weightSum [Hp] (fma, tokens and values ascending). */
  void (*backward)(const BlockResidualsGradProblem& problem, int64_t first, int64_t count, float* weightSum);
};

/** Highway, dispatched per CPU (x86 AVX2 and up; the scalar kernels elsewhere). */
extern const BlockResidualsKernels kBlockResidualsSimdKernels;
/** Plain C++, the reference the SIMD kernels are checked against. */
extern const BlockResidualsKernels kBlockResidualsScalarKernels;

/** weight[h] = normWeight[h] * projWeight[h] in fp32 for h < H, 0 up to Hp. */
void blockResidualsScoreWeight(aclDataType dtype, const void* normWeight, const void* projWeight, int64_t hidden,
                               float* weight);

/** total[h] += partials[c * Hp + h] for c = 0 .. count - 1 in order, h < H. */
void blockResidualsAddPartials(const float* partials, int64_t count, int64_t hidden, float* total);

/** gradNormWeight = s * projWeight, gradProjWeight = s * normWeight (H elements of `dtype`, rounded once). */
void blockResidualsWeightGrads(aclDataType dtype, const float* weightSum, const void* projWeight,
                               const void* normWeight, int64_t hidden, void* gradProjWeight, void* gradNormWeight);

// The per-token scalar steps both kernels share (so their bits agree by construction).

/** 1 / sqrt(squares / H + eps). */
inline float blockResidualsInvNorm(float squares, int64_t hidden, float eps) {
  return 1.0f / std::sqrt(squares / static_cast<float>(hidden) + eps);
}

/** scores[0..count) replaced by their softmax: max subtracted, std::exp, a sequential sum, one division each. */
inline void blockResidualsSoftmax(float* scores, int64_t count) {
  float top = scores[0];
  for (int64_t i = 1; i < count; ++i) top = scores[i] > top ? scores[i] : top;
  float sum = 0.0f;
  for (int64_t i = 0; i < count; ++i) {
    scores[i] = std::exp(scores[i] - top);
    sum += scores[i];
  }
  for (int64_t i = 0; i < count; ++i) scores[i] /= sum;
}

/**
 * The backward's per-value coefficients of one token from d (g . v[i]), dot (w . v[i]), probs and invNorm:
 * a[i] = gs[i] inv[i] and c[i] = gs[i] dot[i] inv[i]^3 / H, with gs the softmax gradient (orders as above).
 */
inline void blockResidualsGradCoefficients(const float* d, const float* dot, const float* probs, const float* inv,
                                           int64_t count, int64_t hidden, float* a, float* c) {
  float expected = 0.0f;
  for (int64_t i = 0; i < count; ++i) expected = std::fma(probs[i], d[i], expected);
  for (int64_t i = 0; i < count; ++i) {
    const float gs = probs[i] * (d[i] - expected);
    a[i] = gs * inv[i];
    c[i] = gs * dot[i] * inv[i] * inv[i] * inv[i] / static_cast<float>(hidden);
  }
}

}  // namespace gradkit::kernels
