#include "ops/mhc/kernels/mhc_pre_sinkhorn_steps.h"

namespace gradkit::kernels {
namespace {

/** One tile of `tokens` tokens: the block's steps in MhcSinkhorn's padded layout. */
SinkhornLayout blockLayout(int64_t tokens, int64_t n, int64_t iters) {
  SinkhornLayout layout;
  layout.tokens = tokens;
  layout.n = n;
  layout.iters = iters;
  layout.split = {tokens, 1, tokens};
  return layout;
}

int64_t normFloats(const SinkhornLayout& layout) {
  return 2 * layout.iters * layout.tokens * layout.n * kSinkhornColumns;
}

/** Element (token t, step k) of the dense tensors: [2 iters, T, n, n] and [2 iters, T, n]. */
int64_t denseMatrix(const PreSinkhornSteps& s, int64_t k, int64_t t) { return (k * s.tokens + t) * s.n * s.n; }
int64_t denseSums(const PreSinkhornSteps& s, int64_t k, int64_t t) { return (k * s.tokens + t) * s.n; }

}  // namespace

int64_t preSinkhornScratchFloats(int64_t tokens, int64_t n, int64_t iters) {
  const SinkhornLayout layout = blockLayout(tokens, n, iters);
  return normFloats(layout) + 2 * iters * tokens * kSinkhornColumns;
}

void preSinkhornForwardBlock(const SinkhornKernels& kernels, const PreSinkhornSteps& steps, float* normOut,
                             float* sumOut, float* matrices, int64_t first, int64_t count, float* scratch) {
  const int64_t n = steps.n;
  SinkhornProblem p;
  p.layout = blockLayout(count, n, steps.iters);
  p.eps = steps.eps;
  p.x = matrices + first * n * n;
  p.output = matrices + first * n * n;
  const bool saving = normOut != nullptr;
  if (saving) {
    p.normOut = scratch;
    p.sumOut = scratch + normFloats(p.layout);
    p.saveSoftmaxSums = true;
  }
  kernels.forward(p, 0, count);
  if (!saving) return;
  const SinkhornLayout& layout = p.layout;
  for (int64_t k = 0; k < 2 * steps.iters; ++k) {
    const float shift = k == 0 ? steps.eps : 0.0f;  // step 0: softmax + eps, its row sums + eps
    for (int64_t s = 0; s < count; ++s) {
      const SinkhornSpot spot = layout.spotOf(s);
      float* norm = normOut + denseMatrix(steps, k, first + s);
      float* sums = sumOut + denseSums(steps, k, first + s);
      for (int64_t r = 0; r < n; ++r) {
        const float* row = p.normOut + layout.normRow(spot, k, r);
        for (int64_t c = 0; c < n; ++c) norm[r * n + c] = row[c] + shift;
      }
      for (int64_t i = 0; i < n; ++i) sums[i] = p.sumOut[layout.stepSum(spot, k, i)] + shift;
    }
  }
}

void preSinkhornBackwardBlock(const SinkhornKernels& kernels, const PreSinkhornSteps& steps, const float* normOut,
                              const float* sumOut, const float* gradOutput, float* gradLogits, int64_t first,
                              int64_t count, float* scratch) {
  const int64_t n = steps.n;
  SinkhornBackwardProblem p;
  p.layout = blockLayout(count, n, steps.iters);
  float* paddedNorm = scratch;
  float* paddedSums = scratch + normFloats(p.layout);
  const SinkhornLayout& layout = p.layout;
  for (int64_t k = 0; k < 2 * steps.iters; ++k) {
    const float shift = k == 0 ? steps.eps : 0.0f;  // step 0 back to the softmax; its sums are not read
    for (int64_t s = 0; s < count; ++s) {
      const SinkhornSpot spot = layout.spotOf(s);
      const float* norm = normOut + denseMatrix(steps, k, first + s);
      const float* sums = sumOut + denseSums(steps, k, first + s);
      for (int64_t r = 0; r < n; ++r) {
        float* row = paddedNorm + layout.normRow(spot, k, r);
        for (int64_t c = 0; c < n; ++c) row[c] = norm[r * n + c] - shift;
      }
      if (k == 0) continue;
      for (int64_t i = 0; i < n; ++i) paddedSums[layout.stepSum(spot, k, i)] = sums[i];
    }
  }
  p.gradOutput = gradOutput + first * n * n;
  p.normOut = paddedNorm;
  p.sumOut = paddedSums;
  p.out = gradLogits + first * n * n;
  kernels.backward(p, 0, count);
}

}  // namespace gradkit::kernels
