// SparseLightningIndexerKLLossGrad on dense row-major buffers (docs/sparse_lightning_indexer_kl_loss_grad.md): the
// gradients of L = sum_t sum_j p[t,j] log(p[t,j] / y[t,j]) with y = softmax(I) over the valid slots of row t and
// I[t,j] = sum_h w[t,h] ReLU(q[t,h,:] . k[idx_j,:]). The kernels know nothing about aclTensor.
//
// Valid slots: slot j of row t is valid iff j < min(K, c_t) and 0 <= idx_j < c_t, c_t from
// li_visibility.h. The valid slots of a row, in slot order, are "the row's n entries"; they are processed in blocks of
// kKlSlotBlock (the last one padded with zero keys, whose scores are 0 and whose gradients are dropped).
//
// Per row, in this order (fp32; 16-bit inputs widened exactly; TileGemm's contract for every product: each sum a
// sequential fma chain from 0 over its k in ascending order, or GemmSums::Bf16Pairs on the native bf16 tile path):
//   S[h, j]  = q[t,h,:] . key_j                                   TileGemm  m = N1, n = 64, k = 128 per block
//   R[h, j]  = S[h, j] > 0 ? S[h, j] : 0                           (NaN gives 0)
//   I[j]     = fp32(sum_h w[h] R[h, j]) in double from 0, h ascending (the products are exact in double; an fp32
//              sum's error would become y's relative error, which dw's cancellation over the slots magnifies)
//   y        = softmax over the n entries: m = max I, e_j = std::exp(I_j - m) (fp32), s = e_0 + e_1 + ... (double,
//              j ascending), y_j = fp32(e_j / s);  P = p_0 + p_1 + ... (double, valid slots only, j ascending);
//              dI_j = fp32(y_j P - p_j) (double, rounded once)
//   dw[h]    = sum_j R[h, j] dI_j: per block a TileGemm (m = 1, n = N1, k = 64) added to the running sum (beta 1)
//   dS[h, j] = RNE_io(w[h] * dI_j) where R[h, j] > 0, else 0 (rounded to the io dtype, as upstream's golden)
//   dq[h, :] = sum over blocks of dS_block . keys_block (TileGemm m = N1, n = 128, k = 64, beta 1), rounded once
//   c_j      = sum_h dS[h, j] q[t,h,:]                             TileGemm  m = 64, n = 128, k = N1 per block
//   partial[idx_j] += c_j (fp32 add, rows then slots ascending) in the row's task's own dk partial.
// softmaxOut[t, slot] = y of the slot when valid, else 0; rows with no valid slot (and every row a batch does not use)
// get dq = 0, dw = 0, softmaxOut = 0; keys no valid slot selects get dk = 0.
//
// dk's scatter-add is deterministic for any thread count: the query rows of batch b are split into chunks_b tasks
// (row i belongs to task i mod chunks_b, fixed by the shape), each task adds into its own [kRows_b, 128] fp32 partial,
// and dk[s] = RNE_io(partial_0[s] + partial_1[s] + ... ) in task order. Every output element is written by exactly
// one task, so no bit depends on which worker ran what.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "acl/acl_base.h"
#include "core/gemm_shape.h"
#include "core/tile_gemm.h"

namespace gradkit::kernels {

/** D, the only head size the op supports. */
inline constexpr int64_t kKlHeadDim = 128;
/** Slots per block of every per-row product. */
inline constexpr int64_t kKlSlotBlock = 64;

/** One batch of a checked problem: its query rows and key rows in the dense tensors, and its dk tasks. */
struct KlGradBatch {
  int64_t qRow0 = 0;     // first row of q / w / sparseIndices / target / dq / dw / softmaxOut (BSND b*S1, TND cu_q[b])
  int64_t qRows = 0;     // Sq_b: used query rows (seqused_q or the batch's length)
  int64_t kRow0 = 0;     // first key row (BSND b*S2, TND cu_k[b])
  int64_t kRows = 0;     // Sk_b: used compressed keys (seqused_k or the batch's length)
  int64_t residual = 0;  // cmpResidualK[b] (0 when absent)
  int64_t chunks = 0;    // dk tasks of the batch (>= 1 when qRows > 0 and kRows > 0, else 0)
  int64_t partial0 = 0;  // offset (floats) of its first dk partial in the partials region
};

/** A checked problem; `dtype` is FLOAT16 or BF16 for q, k, dq, dk. */
struct KlGradProblem {
  int64_t heads = 0;     // N1
  int64_t topk = 0;      // K
  int64_t qTotal = 0;    // rows of q, w, sparseIndices, target, dq, dw, softmaxOut (B*S1 or T1)
  int64_t kTotal = 0;    // rows of k, dk (B*S2 or T2)
  int64_t maskMode = 0;  // 0 or 3 (li_visibility.h)
  int64_t cmpRatio = 1;  // [1, 128]
  aclDataType dtype = ACL_BF16;
  GemmSums sums = GemmSums::Sequential;  // of the three bf16 products (Bf16Pairs: the native tile path)
  std::vector<KlGradBatch> batches;
  std::vector<std::pair<int64_t, int64_t>> idleQueryRows;  // [begin, end) row ranges no batch uses: zero-filled
  std::vector<std::pair<int64_t, int64_t>> idleKeyRows;    // [begin, end) key rows no batch uses: dk zero-filled
};

/** The buffers of one run (dense row-major views). */
struct KlGradIo {
  const void* q = nullptr;           // [qTotal, N1, 128]
  const void* k = nullptr;           // [kTotal, 128]
  const float* w = nullptr;          // [qTotal, N1]
  const int32_t* indices = nullptr;  // [qTotal, K]
  const float* target = nullptr;     // [qTotal, K] (attnSoftmaxL1Norm, p)
  void* dq = nullptr;                // [qTotal, N1, 128]
  void* dk = nullptr;                // [kTotal, 128]
  float* dw = nullptr;               // [qTotal, N1]
  float* softmaxOut = nullptr;       // [qTotal, K]
  float* partials = nullptr;         // klGradPartialFloats(problem) floats
  void* scratch = nullptr;           // schedule.workers * schedule.slotBytes bytes
};

/** The element kernels of one implementation (the products go through `gemm`). */
struct KlGradKernels {
  /** to[i] = the 16-bit float `from[i]` of `dtype` widened exactly (FLOAT16 or BF16), i < count. */
  void (*widen)(aclDataType dtype, const void* from, int64_t count, float* to);
  /** I[c] = fp32(sum over r ascending of double(w[r]) * double(x[r * ld + c])), from 0.0, c < cols. */
  void (*logits)(const float* w, const float* x, int64_t rows, int64_t cols, int64_t ld, float* out);
  /** x[r * ld + c] = x > 0 ? x : 0 for r < rows, c < cols. */
  void (*relu)(float* x, int64_t rows, int64_t cols, int64_t ld);
  /**
   * dS[h * ld + j] = r[h * ld + j] > 0 ? RNE_io(w[h] * dI[j]) : 0 for h < rows, j < cols; dS holds BF16 bits (dtype
   * BF16) or floats holding the FLOAT16-rounded values (dtype FLOAT16).
   */
  void (*gradScores)(aclDataType dtype, const float* r, const float* w, const float* dI, int64_t rows, int64_t cols,
                     int64_t ld, void* dS);
  /** to[i] += from[i], i < count. */
  void (*add)(const float* from, int64_t count, float* to);
  /** to[i] = RNE_dtype(from[i]) (FLOAT16 or BF16 bits), i < count. */
  void (*narrow)(aclDataType dtype, const float* from, int64_t count, void* to);
  /** to[i] = RNE_dtype(parts[0][i] + parts[1][i] + ... + parts[count - 1][i]) with parts[c] = from + c * stride. */
  void (*sumNarrow)(aclDataType dtype, const float* from, int64_t count, int64_t stride, int64_t n, void* to);
  /** gemm.run(a, b, c, scratch), or the scalar reference of the same shape (the same bits). */
  void (*gemm)(const TileGemm& gemm, const void* a, const void* b, float* c, void* scratch);
};

/** Highway, dispatched per CPU (x86 AVX2 and up; the scalar kernels elsewhere). */
extern const KlGradKernels kKlGradSimdKernels;
/** Plain C++, the reference the SIMD kernels are checked against. */
extern const KlGradKernels kKlGradScalarKernels;

/** One dk task: rows i = chunk, chunk + chunks, ... of a batch. */
struct KlGradTask {
  int64_t batch = 0;
  int64_t chunk = 0;
};

/** Everything a run needs beyond the buffers, fixed when the plan is made. */
struct KlGradSchedule {
  const KlGradKernels* kernels = nullptr;
  int64_t slots = 0;  // K rounded up to kKlSlotBlock: the widest row
  int workers = 1;
  size_t slotBytes = 0;  // scratch per worker
  std::vector<KlGradTask> tasks;
  TileGemm scores{TileGemmShape{}}, weightGrad{TileGemmShape{}}, queryGrad{TileGemmShape{}}, keyGrad{TileGemmShape{}};
};

/** Chooses each batch's dk tasks (chunks) and its partials' offset (partial0); returns klGradPartialFloats. */
int64_t klGradAssignPartials(KlGradProblem& problem);

/** Floats of the dk partials of a problem whose partials are assigned: sum over batches of chunks * kRows * 128. */
int64_t klGradPartialFloats(const KlGradProblem& problem);

/** The schedule of a problem (batches' chunks and partials assigned) for `threads` workers. */
KlGradSchedule klGradSchedule(const KlGradProblem& problem, const KlGradKernels& kernels, int threads);

/** The whole run: every element of dq, dk, dw and softmaxOut written. */
void klGradRun(const KlGradProblem& problem, const KlGradSchedule& schedule, const KlGradIo& io);

}  // namespace gradkit::kernels
