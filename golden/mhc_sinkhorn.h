// Golden MhcSinkhorn and MhcSinkhornBackward, written from upstream's formulas (ops-transformer mhc/mhc_sinkhorn and
// mhc_sinkhorn_backward docs), never from the kernels. Templated on the arithmetic type: double is the fp64 golden;
// float is the naive same-dtype computation the double-benchmark gate compares against (plain sequential sums, one
// operation at a time, std::exp).
//
// Tensors are dense row-major over tokens ([B, S, n, n] is [T, n, n] with T = B*S); the steps are kept unpadded:
// norm [2 iters, T, n, n], sum [2 iters, T, n] (odd steps: column sums, even steps from 2: row sums, step 0: zeros).
#pragma once

#include <cstdint>
#include <vector>

namespace gradkit::golden {

template <class Real>
struct SinkhornSteps {
  std::vector<Real> output;  // [T, n, n] = norm[2 iters - 1]
  std::vector<Real> norm;    // [2 iters, T, n, n]
  std::vector<Real> sum;     // [2 iters, T, n]
};

/**
 * norm[0] = softmax(x, rows); sum[1] = colsum(norm[0] + eps) + eps, norm[1] = (norm[0] + eps) / sum[1]; then for
 * k = 2 .. 2 iters - 1 alternately sum[k] = rowsum(norm[k-1]) + eps (even k) or colsum(norm[k-1]) + eps (odd k) and
 * norm[k] = norm[k-1] / sum[k].
 */
template <class Real>
SinkhornSteps<Real> mhcSinkhorn(const Real* x, int64_t tokens, int64_t n, int64_t iters, Real eps);

/**
 * The gradient of mhcSinkhorn's output with respect to x for gradOutput ([T, n, n]), by upstream's recurrence over
 * the saved steps: odd k: g = (g - colsum(g norm[k])) / sum[k]; even k: g = (g - rowsum(g norm[k])) / sum[k]; then
 * (g - rowsum(g norm[0])) norm[0].
 */
template <class Real>
std::vector<Real> mhcSinkhornBackward(const SinkhornSteps<Real>& steps, const Real* gradOutput, int64_t tokens,
                                      int64_t n, int64_t iters);

}  // namespace gradkit::golden
