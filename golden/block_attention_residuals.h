// Golden BlockAttentionResiduals and its gradient, written from upstream's formulas (ops-transformer
// mhc/block_attention_residuals[_grad] docs), never from the kernels. Templated on the arithmetic type: double is the
// fp64 golden; float is the naive same-dtype computation the double-benchmark gate compares against (plain sequential
// sums, one operation at a time).
//
// Tensors are dense row-major: partialBlock [T, H], blockRes [T, N, H], weights [H], invNorm / probs [T, N + 1].
// Inputs come already widened; outputs are unrounded.
#pragma once

#include <cstdint>
#include <vector>

namespace gradkit::golden {

struct BlockResidualSizes {
  int64_t tokens = 0;  // T
  int64_t blocks = 0;  // N (the values per token are N + 1: the blocks, then the partial block)
  int64_t hidden = 0;  // H
};

template <class Real>
struct BlockResidualOutputs {
  std::vector<Real> hidden;   // [T, H]
  std::vector<Real> invNorm;  // [T, N + 1]
  std::vector<Real> probs;    // [T, N + 1]
};

/** The forward: RMS-normed scores of the N + 1 values, their softmax, the probability-weighted sum of the values. */
template <class Real>
BlockResidualOutputs<Real> blockAttentionResiduals(const BlockResidualSizes& sizes, const Real* partialBlock,
                                                   const Real* blockRes, const Real* projWeight, const Real* normWeight,
                                                   Real normEps);

template <class Real>
struct BlockResidualGradients {
  std::vector<Real> partialBlock;  // [T, H]
  std::vector<Real> blockRes;      // [T, N, H]
  std::vector<Real> projWeight;    // [H]
  std::vector<Real> normWeight;    // [H]
};

/** The gradient of the forward's hidden states (gradHidden [T, H]) from the saved invNorm and probs. */
template <class Real>
BlockResidualGradients<Real> blockAttentionResidualsGrad(const BlockResidualSizes& sizes, const Real* partialBlock,
                                                         const Real* blockRes, const Real* projWeight,
                                                         const Real* normWeight, const Real* gradHidden,
                                                         const Real* invNorm, const Real* probs);

}  // namespace gradkit::golden
