// The Sinkhorn part of MhcPreSinkhorn and its backward, on blocks of tokens, by the MhcSinkhorn kernels
// (mhc_sinkhorn_kernel.h: one order of operations for both operators) run on a block-sized scratch in their padded
// layout, copied to or from the fused operator's saved tensors:
//   normOut [2 iters, T, n, n], sumOut [2 iters, T, n], step-major and unpadded (upstream's Ascend950 kernel):
//   step 0 holds softmax + eps and the softmax's row sums + eps, step k >= 1 what MhcSinkhorn saves.
// The backward reads step 0 back as normOut[0] - eps (the softmax) and ignores sumOut[0].
#pragma once

#include <cstdint>

#include "ops/mhc/kernels/mhc_sinkhorn_kernel.h"

namespace gradkit::kernels {

/** The sizes of the saved steps of all T tokens: normOut [2 iters, T, n, n], sumOut [2 iters, T, n]. */
struct PreSinkhornSteps {
  int64_t tokens = 0, n = 0, iters = 0;
  float eps = 0.0f;
};

/** Floats of scratch a block of `tokens` tokens needs (the padded steps of one tile). */
int64_t preSinkhornScratchFloats(int64_t tokens, int64_t n, int64_t iters);

/**
 * Projects tokens [first, first + count) of `matrices` ([T, n, n] logits) in place onto the doubly stochastic
 * matrices (2 iters steps with `steps.eps`), saving their steps into normOut and sumOut unless those are null.
 */
void preSinkhornForwardBlock(const SinkhornKernels& kernels, const PreSinkhornSteps& steps, float* normOut,
                             float* sumOut, float* matrices, int64_t first, int64_t count, float* scratch);

/** The gradient of the logits of tokens [first, first + count): from gradOutput ([T, n, n]) into gradLogits. */
void preSinkhornBackwardBlock(const SinkhornKernels& kernels, const PreSinkhornSteps& steps, const float* normOut,
                              const float* sumOut, const float* gradOutput, float* gradLogits, int64_t first,
                              int64_t count, float* scratch);

}  // namespace gradkit::kernels
