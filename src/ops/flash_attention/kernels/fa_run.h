// The flash attention entry points with an explicit softmax kernel table (tests compare the tables), and the tile
// product both kernels use.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/flash_attention/kernels/fa_kernel.h"
#include "ops/flash_attention/kernels/fa_softmax.h"

namespace gradkit::kernels {

/** faForward with the given table (faForward passes faKernels()). */
void faForwardWith(const FaProblem& problem, const FaForwardIo& io, void* scratch, int threads,
                   const FaSoftmaxKernels& kernels);

/** faBackward with the given table. */
void faBackwardWith(const FaProblem& problem, const FaBackwardIo& io, void* scratch, int threads,
                    const FaSoftmaxKernels& kernels);

/** One fp32 tile product on the calling thread through TileGemm: C = op(A) op(B) (+ C when accumulate). */
struct FaGemm {
  int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
  int64_t lda = 0, ldb = 0, ldc = 0;
  bool accumulate = false;
};

/** Runs `g` (scratch: at least faGemmScratchBytes(g) bytes for the same or a larger shape). */
void faRunGemm(const FaGemm& g, const float* a, const float* b, float* c, void* scratch);

/** TileGemm's scratch for `g`. */
size_t faGemmScratchBytes(const FaGemm& g);

}  // namespace gradkit::kernels
