// Golden DeepSeek-V4 sparse MLA attention: the forward of aclnnSparseFlashMla, the backward of aclnnSparseFlashMlaGrad
// and the softmax L1 norm of aclnnSparseFlashMlaSoftmaxL1Norm and of the Grad's side outputs, written from the
// formulas of upstream's aclnn docs and docs/sparse_attention.md, never from gradkit's kernels. Templated on the
// arithmetic type: double is the fp64 golden; float is the naive same-dtype computation that the double-benchmark gate
// compares against (plain sequential sums, one operation per statement, one-shot softmax), which rounds P (and,
// backward, dS) to the io dtype before their products as upstream's kernels do (SmlaIoRounding; the fp64 golden leaves
// it None).
//
// The problem is logical, independent of storage layouts (golden/sparse_flash_mla_layouts.h builds it from BSND /
// TND / PA_BBND arrays). N2 = 1, so every query head reads the same key rows, and K = V (a key row is its value row).
// - Query rows: the used rows of the batches one after the other, batch b holding rows qRowsBefore(b) + i for
//   0 <= i < s1 (S1act); q / out / dOut / dq are [qRows][N1][D], lse [qRows][N1], index lists [qRows][K].
// - ori_kv rows: oriRowsBefore(b) + j for 0 <= j < s2 (S2act): ori / dOri [oriRows][D]; cmp_kv alike ([cmpRows][D]).
// - Inputs come already widened (an fp16/bf16 value is passed as its exact value); outputs are unrounded.
//
// Visible keys of query row i of batch b (sparseFlashMlaVisibleKeys; the ori part, then the cmp part, each in order):
// - thr = S2act - S1act + i + 1. Ori window [lo, hi): mode 0 [0, S2act); mode 3 [0, clamp(thr, 0, S2act));
//   mode 4 lo = wl == -1 ? 0 : max(thr - wl - 1, 0), hi = wr == -1 ? S2act : min(max(thr + wr, 0), S2act).
// - Restored length R = C * r + (r > 1 ? residual : 0); cmp threshold cmpThr = min(C, mode 3: floor(max(R - S1act +
//   i + 1, 0) / r), mode 0: floor(R / r)). The residual is ignored for r = 1 (it is 0 there anyway).
// - Dense ori (no ori indices): j in [lo, hi). HCA (no cmp indices): c in [0, cmpThr).
// - Sparse part (index list present): the first n = min(K, topkLength if given, mask count) slots are read, mask count
//   = hi - lo (ori) or cmpThr (cmp): the kernels' count. Reading: for ori mode 0 the forward's documented reading
//   (docs/sparse_attention.md, "What one query row sees") is min(K, topkLength); the extra min with S2act changes
//   nothing unless more than S2act slots precede the first -1. topkLength is honoured whenever it is given (upstream
//   requires it exactly in mode 0). The scan stops at the first negative entry (-1 padding; the decisions in
//   docs/sparse_attention.md). Each entry read is then judged by indexRule: DropOutsideMask (default; the decisions in
//   docs/sparse_attention.md and the forward golden: an entry outside [lo, hi) resp. >= cmpThr is skipped and the scan
//   goes on) or UseInRange (a reading of upstream's grad: used as given, an entry >= the batch's length ends the scan
//   like -1). Duplicates are kept: each occurrence is one softmax column and its gradients accumulate into the same kv
//   row.
//
// Softmax with sinks (docs/sparse_attention.md, "What one query row sees"): s_j = (q . k_j) * scale; lse = ln(e^sink +
// sum_j e^s_j); out = sum_j e^(s_j - lse) k_j. No sink (sinks empty) or sink -inf: plain softmax. A row with no visible
// key: out 0, lse 0 (a decision in docs/sparse_attention.md).
#pragma once

#include <cstdint>
#include <vector>

namespace gradkit::golden {

/** Which dtype the naive computation rounds P / dS to before their products (nearest even). */
enum class SmlaIoRounding { None, Fp16, Bf16 };

/** x rounded to the io dtype (None: x itself); double rounds once from the exact value. */
template <class Real>
Real smlaRoundIo(SmlaIoRounding rounding, Real x);

/** How an index entry outside the row's mask is treated (see the header comment). */
enum class SmlaIndexRule { DropOutsideMask, UseInRange };

/** One batch's used lengths. */
struct SmlaBatch {
  int64_t s1 = 0;        // S1act: query rows
  int64_t s2 = 0;        // S2act: ori_kv rows (0 in a cmp-only problem)
  int64_t cmp = 0;       // C: cmp_kv rows (0: no cmp part)
  int64_t residual = 0;  // cmp_residual_kv[b] (restores R = C * r + residual)
};

/** One sparse flash MLA problem in logical terms. */
struct SparseFlashMlaProblem {
  int64_t heads = 1;  // N1 (= G)
  int64_t dim = 0;    // D (512 in the op)
  std::vector<SmlaBatch> batches;
  float scale = 1.0f;         // softmaxScale / scaleValue as the op's float attribute
  std::vector<double> sinks;  // [N1] logits (-inf allowed), or empty: no sink
  int64_t cmpRatio = 1;       // r >= 1
  int64_t oriMaskMode = 0;    // 0, 3 or 4
  int64_t oriWinLeft = -1;    // mode 4 only; -1 = unbounded
  int64_t oriWinRight = -1;
  int64_t cmpMaskMode = 0;  // 0 or 3
  // Sparse index lists: K = 0 means the part is dense. Entries [qRows][K] (int32 token indices inside the batch);
  // topk lengths [qRows] or empty.
  int64_t oriTopk = 0;
  std::vector<int32_t> oriIndices, oriTopkLength;
  int64_t cmpTopk = 0;
  std::vector<int32_t> cmpIndices, cmpTopkLength;
  SmlaIndexRule indexRule = SmlaIndexRule::DropOutsideMask;
  SmlaIoRounding io = SmlaIoRounding::None;  // the naive benchmark's product operands; None for the fp64 golden

  int64_t batchCount() const;
  int64_t qRows() const;  // sum of s1
  int64_t oriRows() const;
  int64_t cmpRows() const;
  int64_t qRowsBefore(int64_t b) const;
  int64_t oriRowsBefore(int64_t b) const;
  int64_t cmpRowsBefore(int64_t b) const;
};

/** Checks sizes, modes, windows and the index / length / sinks arrays; throws std::invalid_argument. */
void checkSparseFlashMlaProblem(const SparseFlashMlaProblem& problem);

/** One visible key of a query row. */
struct SmlaKey {
  bool cmp = false;   // false: an ori_kv row, true: a cmp_kv row
  int64_t index = 0;  // token index inside the batch (j or c)
  int64_t slot = -1;  // the entry of the row's index list it came from; -1 for a dense key
  bool operator==(const SmlaKey& other) const { return cmp == other.cmp && index == other.index && slot == other.slot; }
};

/** The ori mask window [lo, hi) of row i of batch b (lo == hi: empty). */
struct SmlaWindow {
  int64_t lo = 0, hi = 0;
};
SmlaWindow smlaOriWindow(const SparseFlashMlaProblem& problem, int64_t b, int64_t i);

/** cmpThr of row i of batch b: the cmp tokens c < cmpThr are below the mask (0: none). */
int64_t smlaCmpThreshold(const SparseFlashMlaProblem& problem, int64_t b, int64_t i);

/** The visible keys of row i of batch b in softmax order: the ori part, then the cmp part. */
std::vector<SmlaKey> sparseFlashMlaVisibleKeys(const SparseFlashMlaProblem& problem, int64_t b, int64_t i);

template <class Real>
struct SparseFlashMlaInputs {
  const Real* q = nullptr;    // [qRows][N1][D]
  const Real* ori = nullptr;  // [oriRows][D]
  const Real* cmp = nullptr;  // [cmpRows][D]; may be null without cmp rows
};

template <class Real>
struct SparseFlashMlaOutputs {
  std::vector<Real> out;  // [qRows][N1][D]
  std::vector<Real> lse;  // [qRows][N1]
};

/**
 * Forward: m = max(sink, max_j s_j), e_j = exp(s_j - m), l = e^(sink - m) + sum_j e_j, out = (sum_j io(e_j) k_j) / l,
 * lse = m + ln l (io: the problem's rounding of the unnormalised P before the P.V product, as the kernels do).
 */
template <class Real>
SparseFlashMlaOutputs<Real> sparseFlashMlaForward(const SparseFlashMlaProblem& problem,
                                                  const SparseFlashMlaInputs<Real>& in);

template <class Real>
struct SparseFlashMlaGradInputs {
  SparseFlashMlaInputs<Real> tensors;
  const Real* dOut = nullptr;  // [qRows][N1][D]
  const Real* out = nullptr;   // [qRows][N1][D], the forward's attention_out
  const Real* lse = nullptr;   // [qRows][N1], the forward's softmax_lse
};

template <class Real>
struct SparseFlashMlaGradOutputs {
  std::vector<Real> dq;      // [qRows][N1][D]
  std::vector<Real> dOri;    // [oriRows][D]; rows no query selected are 0
  std::vector<Real> dCmp;    // [cmpRows][D]
  std::vector<Real> dSinks;  // [N1]; empty without sinks
  std::vector<Real> oriL1;   // [qRows][K]; empty without ori indices (sparseFlashMlaSoftmaxL1Norm, Ori)
  std::vector<Real> cmpL1;   // [qRows][K2]; empty without cmp indices
};

/**
 * Backward from the GIVEN out and lse (upstream's aclnnSparseFlashMlaGrad formulas; docs/sparse_attention.md): P_j =
 * exp(s_j - lse), D = dOut . out, dP_j = dOut . k_j, dS_j = P_j (dP_j - D); dq = scale * sum_j io(dS_j) k_j; the kv row
 * of key j gets scale * sum_h io(dS_hj) q_h + sum_h io(P_hj) dOut_h (scatter-add, duplicates accumulate); dSinks[h] =
 * -sum_rows P_sink * sum_j P_j dP_j (the kernel form, = -P_sink D for a consistent forward). Rows with no visible key
 * contribute nothing. With the forward's own out and lse this is the gradient of sum(out * dOut).
 */
template <class Real>
SparseFlashMlaGradOutputs<Real> sparseFlashMlaBackward(const SparseFlashMlaProblem& problem,
                                                       const SparseFlashMlaGradInputs<Real>& in);

/** The forward, then the backward from its own out and lse (in.out / in.lse are ignored). */
template <class Real>
SparseFlashMlaGradOutputs<Real> sparseFlashMlaGradient(const SparseFlashMlaProblem& problem,
                                                       const SparseFlashMlaGradInputs<Real>& in);

enum class SmlaPart { Ori, Cmp };

/**
 * Softmax L1 norm of one part (docs/sparse_attention.md, "aclnnSparseFlashMlaSoftmaxL1Norm"): L1[row][col] = (sum_h
 * exp(s_hj - lse[row][h])) / N1 for each visible key j of that part, 0 elsewhere. A sparse part is slot-indexed
 * ([qRows][K]: col = the key's slot); a dense part is position-indexed ([qRows][denseWidth]: col = the key's token
 * index; denseWidth 0 = the longest batch of that part). The op aclnnSparseFlashMlaSoftmaxL1Norm is the Cmp part of a
 * problem without ori rows: k = cmp_kv, maskMode = cmpMaskMode, cmp_residual_k = residual.
 */
template <class Real>
std::vector<Real> sparseFlashMlaSoftmaxL1Norm(const SparseFlashMlaProblem& problem, SmlaPart part,
                                              const SparseFlashMlaInputs<Real>& in, const Real* lse,
                                              int64_t denseWidth = 0);

extern template double smlaRoundIo(SmlaIoRounding, double);
extern template float smlaRoundIo(SmlaIoRounding, float);
extern template SparseFlashMlaOutputs<double> sparseFlashMlaForward(const SparseFlashMlaProblem&,
                                                                    const SparseFlashMlaInputs<double>&);
extern template SparseFlashMlaOutputs<float> sparseFlashMlaForward(const SparseFlashMlaProblem&,
                                                                   const SparseFlashMlaInputs<float>&);
extern template SparseFlashMlaGradOutputs<double> sparseFlashMlaBackward(const SparseFlashMlaProblem&,
                                                                         const SparseFlashMlaGradInputs<double>&);
extern template SparseFlashMlaGradOutputs<float> sparseFlashMlaBackward(const SparseFlashMlaProblem&,
                                                                        const SparseFlashMlaGradInputs<float>&);
extern template SparseFlashMlaGradOutputs<double> sparseFlashMlaGradient(const SparseFlashMlaProblem&,
                                                                         const SparseFlashMlaGradInputs<double>&);
extern template SparseFlashMlaGradOutputs<float> sparseFlashMlaGradient(const SparseFlashMlaProblem&,
                                                                        const SparseFlashMlaGradInputs<float>&);
extern template std::vector<double> sparseFlashMlaSoftmaxL1Norm(const SparseFlashMlaProblem&, SmlaPart,
                                                                const SparseFlashMlaInputs<double>&, const double*,
                                                                int64_t);
extern template std::vector<float> sparseFlashMlaSoftmaxL1Norm(const SparseFlashMlaProblem&, SmlaPart,
                                                               const SparseFlashMlaInputs<float>&, const float*,
                                                               int64_t);

}  // namespace gradkit::golden
