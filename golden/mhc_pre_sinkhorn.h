// Golden MhcPreSinkhorn and MhcPreSinkhornBackward, written from upstream's formulas (ops-transformer
// mhc/mhc_pre_sinkhorn[_backward] docs) by composing the golden MhcPre (mhc_pre.h) and MhcSinkhorn (mhc_sinkhorn.h):
// never from the kernels. Templated on the arithmetic type as those are.
//
// The saved steps are dense and step-major: norm [2 iters, T, n, n], sum [2 iters, T, n]; step 0 holds
// softmax + hcEps and the softmax's row sums + hcEps (upstream's Ascend950 kernel), steps k >= 1 MhcSinkhorn's.
#pragma once

#include <cstdint>
#include <vector>

#include "golden/mhc_pre.h"

namespace gradkit::golden {

template <class Real>
struct MhcPreSinkhornOutputs {
  MhcPreOutputs<Real> pre;  // hIn, hPost, invRms, hMix (= hcBeforeNorm), hPre; pre.hRes holds the logits
  std::vector<Real> hRes;   // [T, n*n], the Sinkhorn projection of pre.hRes
  std::vector<Real> norm;   // [2 iters, T, n, n]
  std::vector<Real> sum;    // [2 iters, T, n]
};

/** MhcPre on `in` (alpha of 3, no gamma; in.hf32 as upstream's kernels: true), then iters Sinkhorn iterations with
 *  eps = in.hcEps on its residual logits. */
template <class Real>
MhcPreSinkhornOutputs<Real> mhcPreSinkhorn(const MhcPreInputs<Real>& in, int64_t iters);

template <class Real>
struct MhcPreSinkhornBackwardInputs {
  MhcSizes sizes;
  int64_t iters = 0;
  const Real* x = nullptr;          // [T, K]
  const Real* phi = nullptr;        // [F, K]
  const Real* alpha = nullptr;      // [3]
  const Real* bias = nullptr;       // [F]
  const Real* gradHIn = nullptr;    // [T, D]
  const Real* gradHPost = nullptr;  // [T, N]
  const Real* gradHRes = nullptr;   // [T, N*N]
  const Real* hPre = nullptr;       // [T, N] (includes hcEps)
  const Real* hMix = nullptr;       // [T, F] hcBeforeNorm
  const Real* invRms = nullptr;     // [T]
  const Real* norm = nullptr;       // [2 iters, T, N, N] as mhcPreSinkhorn saves it
  const Real* sum = nullptr;        // [2 iters, T, N]
  Real hcEps = 0;
  bool hf32 = false;  // the matmul operands rounded to HF32 (upstream's A2/A3 backward)
};

/**
 * The Sinkhorn steps backwards (mhc_sinkhorn.h, with norm[0] - hcEps as the softmax) give the logits' gradient;
 * hPost = 2 sigmoid(alpha[1] hMix invRms + bias) is recomputed; then MhcPreBackward (mhc_pre.h).
 */
template <class Real>
MhcPreBackwardOutputs<Real> mhcPreSinkhornBackward(const MhcPreSinkhornBackwardInputs<Real>& in);

extern template MhcPreSinkhornOutputs<double> mhcPreSinkhorn(const MhcPreInputs<double>&, int64_t);
extern template MhcPreSinkhornOutputs<float> mhcPreSinkhorn(const MhcPreInputs<float>&, int64_t);
extern template MhcPreBackwardOutputs<double> mhcPreSinkhornBackward(const MhcPreSinkhornBackwardInputs<double>&);
extern template MhcPreBackwardOutputs<float> mhcPreSinkhornBackward(const MhcPreSinkhornBackwardInputs<float>&);

}  // namespace gradkit::golden
