// The size model of SparseLightningIndexerKLLossGrad (docs/sparse_lightning_indexer_kl_loss_grad.md, "Entry points and
// layouts"): what a layout means for every tensor's shape and for each batch's rows. No aclTensor and no rules: the
// checks add those, the plan, the tests and the verify suite read the shapes and batches from here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "acl/acl_base.h"
#include "ops/lightning_indexer/kernels/kl_grad_kernel.h"

namespace gradkit::ops {

/** layoutQ / layoutK: "BSND" (padded batches) or "TND" (packed rows with cu_seqlens). */
enum class KlLayout { BSND, TND };

/** The layout named `name`, or nullopt for any other string (and for null). */
std::optional<KlLayout> klLayoutFromName(const char* name);
const char* klLayoutName(KlLayout layout);
/** Rank of q, k, sparseIndices and attnSoftmaxL1Norm: 4 (BSND) or 3 (TND); w and dw have one less. */
int64_t klLayoutRank(KlLayout layout);

/** The sizes of a call whose q, k and sparseIndices have the layout's rank. */
struct KlDims {
  KlLayout layout = KlLayout::TND;
  int64_t batch = 0;  // BSND q dim 0; TND size(cu_seqlens_q) - 1
  int64_t s1 = 0;     // BSND S1 (q dim 1); TND T1 (q dim 0)
  int64_t s2 = 0;     // BSND S2 (k dim 1); TND T2 (k dim 0)
  int64_t n1 = 0;     // q dim -2
  int64_t n2 = 0;     // k dim -2
  int64_t dq = 0;     // q dim -1 (D)
  int64_t dk = 0;     // k dim -1
  int64_t topk = 0;   // sparseIndices dim -1 (K)
  /** Rows of q, w, sparseIndices, attnSoftmaxL1Norm and their gradients: B*S1 or T1. */
  int64_t queryRows() const { return layout == KlLayout::BSND ? batch * s1 : s1; }
  /** Rows of k and dk: B*S2 or T2. */
  int64_t keyRows() const { return layout == KlLayout::BSND ? batch * s2 : s2; }
};

/** The dims of q [B,S1,N1,D] / [T1,N1,D], k [B,S2,N2,D] / [T2,N2,D], sparseIndices [.., K]; cuQSize for TND. */
KlDims klDimsOf(KlLayout layout, const std::vector<int64_t>& q, const std::vector<int64_t>& k,
                const std::vector<int64_t>& sparseIndices, int64_t cuQSize);

/** Expected shapes: q [B,S1,N1,128] / [T1,N1,128]; k [B,S2,1,128] / [T2,1,128]; w [B,S1,N1] / [T1,N1]; sparseIndices
 *  and attnSoftmaxL1Norm [B,S1,1,K] / [T1,1,K]. */
std::vector<int64_t> klQueryShape(const KlDims& dims);
std::vector<int64_t> klKeyShape(const KlDims& dims);
std::vector<int64_t> klWeightShape(const KlDims& dims);
std::vector<int64_t> klSparseShape(const KlDims& dims);
/** The same shapes as text with their letters ("[T1, N1, D]"), for messages. */
std::string klShapeLetters(KlLayout layout, const char* tensor);

/** The int32 values of the optional per-batch tensors (empty when absent). */
struct KlSequences {
  std::vector<int64_t> cuQ, cuK;      // TND: [B + 1]
  std::vector<int64_t> usedQ, usedK;  // [B]
  std::vector<int64_t> residual;      // [B]
};

/** Batch b's allocated query / key rows: S1 / S2 (BSND) or the cu_seqlens difference (TND). */
int64_t klQueryLength(const KlDims& dims, const KlSequences& seq, int64_t b);
int64_t klKeyLength(const KlDims& dims, const KlSequences& seq, int64_t b);

/**
 * The kernels' problem of a checked call: batches (first rows, used rows, residual), the idle rows of the query and
 * key tensors, and (klGradAssignPartials) each batch's dk tasks. Buffers are left to the run.
 */
kernels::KlGradProblem klProblemOf(const KlDims& dims, const KlSequences& seq, int64_t maskMode, int64_t cmpRatio,
                                   aclDataType dtype);

}  // namespace gradkit::ops
