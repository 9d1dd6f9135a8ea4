// The flash attention entry points with an explicit kernel table (tests compare the tables), and the tile products.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/flash_attention/kernels/fa_kernel.h"
#include "ops/flash_attention/kernels/fa_softmax.h"

namespace gradkit::kernels {

/** faForward with the given table (faForward passes faKernels()). */
void faForwardWith(const FaProblem& problem, const FaForwardIo& io, void* scratch, int threads,
                   const FaKernelTable& kernels);

/** faBackward with the given table. */
void faBackwardWith(const FaProblem& problem, const FaBackwardIo& io, void* scratch, int threads,
                    const FaKernelTable& kernels);

/** Runs `g` through TileGemm (scratch: faGemmScratchBytes of the same or a larger shape); kFaSimdKernels.gemm. */
void faRunGemm(const FaGemm& g, const float* a, const float* b, float* c, void* scratch);

/** Runs `g` with TileGemm's scalar reference (same bits, no scratch); kFaScalarKernels.gemm. */
void faRunGemmScalar(const FaGemm& g, const float* a, const float* b, float* c, void* scratch);

/** TileGemm's scratch for `g`. */
size_t faGemmScratchBytes(const FaGemm& g);

}  // namespace gradkit::kernels
