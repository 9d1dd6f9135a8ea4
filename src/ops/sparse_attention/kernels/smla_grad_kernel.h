// The backward of DeepSeek-V4 sparse MLA attention (aclnnSparseFlashMlaGrad) as the kernels see it. The problem is the
// forward's (smla_kernel.h: which keys each row sees, the KV sources, the tile path); this adds the buffers of the
// backward and the chunk schedule that keeps the scatter-add of the K = V gradients deterministic:
//   the query rows are cut into at most kSmlaGradChunks chunks, a count fixed by the shapes (never by the threads);
//   each chunk owns fp32 accumulators over the global KV rows its rows can reach, filled by one worker in row order;
//   the reduction sums, for every KV row, the chunks that cover it in chunk order and rounds once to the io dtype.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "ops/sparse_attention/kernels/smla_grad_ops.h"
#include "ops/sparse_attention/kernels/smla_kernel.h"

namespace gradkit::kernels {

/** The most chunks of query rows (each with its own accumulators); fewer when the accumulators would not fit. */
inline constexpr int64_t kSmlaGradChunks = 32;

/** The accumulators' budget that lowers the chunk count (bytes). */
inline constexpr int64_t kSmlaGradAccumulatorBudget = int64_t{1} << 30;

/** The buffers of one backward run (dense, row-major). */
struct SmlaGradIo {
  const void* q = nullptr;       // [tokens][n1][d], ioType
  const void* dOut = nullptr;    // [tokens][n1][d]
  const void* out = nullptr;     // [tokens][n1][d]
  const float* lse = nullptr;    // [tokens][n1]
  const float* sinks = nullptr;  // [n1]; null: no sink
  void* dq = nullptr;            // [tokens][n1][d]
  void* dOri = nullptr;          // [ori rows][d] by global row (SmlaGradSchedule::oriRow0); null: not wanted
  void* dCmp = nullptr;          // [cmp rows][d]; null: not wanted
  float* dSinks = nullptr;       // [n1]; null: not wanted
  float* oriL1 = nullptr;        // [tokens][oriIndices.k]; null: not wanted
  float* cmpL1 = nullptr;        // [tokens][cmpIndices.k]
};

/** Query rows [token0, token1) and the global KV rows their gradients can reach. */
struct SmlaGradChunk {
  int64_t token0 = 0, token1 = 0;
  int64_t oriLo = 0, oriHi = 0;                          // global ori rows [oriLo, oriHi)
  int64_t cmpLo = 0, cmpHi = 0;                          // global cmp rows [cmpLo, cmpHi)
  int64_t oriOffset = 0, cmpOffset = 0, sinkOffset = 0;  // floats into the accumulator area
  int64_t cost = 0;                                      // keys the chunk's rows see (orders the work only)
};

struct SmlaGradSchedule {
  const FaKernelTable* kernels = nullptr;
  const SmlaGradOps* gradOps = nullptr;  // the steps between the products (SIMD or scalar, with `kernels`)
  int threads = 1;
  size_t slotBytes = 0;                   // one worker's scratch
  std::vector<SmlaGradChunk> chunks;      // in summation order
  std::vector<int32_t> order;             // chunk indices, the most costly first (the order workers take them)
  int64_t accumulatorFloats = 0;          // every chunk's accumulators and dSinks partials
  std::vector<int64_t> oriRow0, cmpRow0;  // per batch: the global row of the batch's row 0 (BSND b * S, TND cu[b])
  int64_t oriRows = 0, cmpRows = 0;       // global rows of the two gradients
  bool wantsOri = false, wantsCmp = false;
};

/**
 * The schedule of `problem` (its batches describe the BSND / TND rows; oriRowsPerBatch / cmpRowsPerBatch are the
 * BSND tensors' dim 1, unused for TND) for up to `threads` workers. Which gradients are wanted decides the
 * accumulators.
 */
SmlaGradSchedule smlaGradSchedule(const SmlaProblem& problem, int64_t oriRows, int64_t cmpRows, int64_t oriRowsPerBatch,
                                  int64_t cmpRowsPerBatch, bool wantsOri, bool wantsCmp, int threads);

/** One worker's scratch bytes for `problem`. */
size_t smlaGradSlotBytes(const SmlaProblem& problem);

/** Scratch bytes smlaBackward needs (64-byte aligned memory): the workers' slots and the accumulators. */
size_t smlaGradScratchBytes(const SmlaGradSchedule& schedule);

/** The backward; bits independent of the thread count and of the kernel table (SIMD or scalar). */
void smlaBackward(const SmlaProblem& problem, const SmlaGradSchedule& schedule, const SmlaGradIo& io, void* scratch);

}  // namespace gradkit::kernels
