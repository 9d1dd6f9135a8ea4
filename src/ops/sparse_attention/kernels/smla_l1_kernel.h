// The kernel of aclnnSparseFlashMlaSoftmaxL1Norm: the head-averaged softmax of a sparse MLA problem's compressed
// part given the forward's lse. The problem is the forward's (smla_kernel.h) without ori rows; the schedule and its
// scratch are the forward's types (SmlaSchedule, smlaScratchBytes).
#pragma once

#include <cstdint>

#include "ops/sparse_attention/kernels/smla_kernel.h"

namespace gradkit::kernels {

/** The buffers of one run. */
struct SmlaL1Io {
  const void* q = nullptr;     // dense [tokens][n1][d]
  const float* lse = nullptr;  // dense [tokens][n1]
  float* out = nullptr;        // dense [tokens][width]
  int64_t width = 0;           // columns of a row: K (listed keys, by slot) or the dense width (by key row)
};

/** The schedule of `problem` on up to `threads` workers (kernel table: SIMD unless GRADKIT_FORCE_SCALAR). */
SmlaSchedule smlaL1Schedule(const SmlaProblem& problem, int threads);

/**
 * Every query row's L1 norm: out[token][col] = (sum over heads h = 0, 1, ... of P_hj) / n1 with
 * P_hj = exp(scale * q_h . k_j - lse[token][h]) (flash attention's backward softmax step with the sum 1), col = the
 * key's list entry (listed) or row (dense); every other column 0, rows no batch computes 0. Bits independent of the
 * thread count and of the kernel table.
 */
void smlaSoftmaxL1Norm(const SmlaProblem& problem, const SmlaSchedule& schedule, const SmlaL1Io& io, void* scratch);

}  // namespace gradkit::kernels
