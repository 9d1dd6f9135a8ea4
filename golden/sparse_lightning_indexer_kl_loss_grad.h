// Golden SparseLightningIndexerKLLossGrad, written from the formulas of docs/sparse_lightning_indexer_kl_loss_grad.md
// (and upstream's aclnn doc), never from the kernels: the indexer's KL loss and its gradients with the selection
// (sparseIndices) held fixed. Templated on the arithmetic type: double is the fp64 golden; float is the naive
// same-dtype computation the double-benchmark gate compares against (plain sequential sums, dS rounded to the io dtype
// before its products as upstream's pytest golden does, when a rounding is given).
//
// Tensors are dense row-major and already widened: q [qTotal, N1, 128], k [kTotal, 128], w [qTotal, N1], indices and
// p [qTotal, K]. Batches give each batch's first rows and used rows; rows and keys outside every batch are zeros.
#pragma once

#include <cstdint>
#include <vector>

namespace gradkit::golden {

/** One batch: query rows [qRow0, qRow0 + qRows), keys [kRow0, kRow0 + kRows) (indices are 0-based within it). */
struct KlBatch {
  int64_t qRow0 = 0, qRows = 0, kRow0 = 0, kRows = 0;
  int64_t residual = 0;  // cmpResidualK[b]
};

struct KlProblem {
  int64_t heads = 0, topk = 0, qTotal = 0, kTotal = 0;
  int64_t headDim = 128;
  int64_t maskMode = 3, cmpRatio = 1;
  std::vector<KlBatch> batches;
};

/** c_i of row i of batch b: Sk (mode 0) or clamp(floor((Sk * cr + res - Sq + i + 1) / cr), 0, Sk) (mode 3). */
int64_t klVisibleKeys(const KlProblem& problem, const KlBatch& batch, int64_t row);

/** Slot j of row i (global row t) is valid: j < min(K, c_i) and 0 <= idx < c_i. */
bool klSlotValid(const KlProblem& problem, const KlBatch& batch, int64_t row, int64_t slot, int32_t index);

/** L = sum over rows and valid slots of p log(p / y) (terms with p = 0 count 0), y the softmax of I over them. */
template <class Real>
Real klLoss(const KlProblem& problem, const Real* q, const Real* k, const Real* w, const int32_t* indices,
            const Real* p);

template <class Real>
struct KlGradients {
  std::vector<Real> dq;          // [qTotal, N1, 128]
  std::vector<Real> dk;          // [kTotal, 128]
  std::vector<Real> dw;          // [qTotal, N1]
  std::vector<Real> softmaxOut;  // [qTotal, K]
};

/**
 * The gradients of klLoss (dI = y sum p - p over the valid slots) and y. `roundDs`, when given, rounds each
 * dS = dI w [S > 0] before the dq and dk products (the naive computation: to the io dtype).
 */
template <class Real>
KlGradients<Real> klLossGrad(const KlProblem& problem, const Real* q, const Real* k, const Real* w,
                             const int32_t* indices, const Real* p, Real (*roundDs)(Real) = nullptr);

}  // namespace gradkit::golden
