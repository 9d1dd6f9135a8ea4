#include "golden/mhc_pre_sinkhorn.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "golden/mhc_sinkhorn.h"

namespace gradkit::golden {
namespace {

size_t at(int64_t i) { return static_cast<size_t>(i); }

}  // namespace

template <class Real>
MhcPreSinkhornOutputs<Real> mhcPreSinkhorn(const MhcPreInputs<Real>& in, int64_t iters) {
  const int64_t tokens = in.sizes.tokens, n = in.sizes.streams, matrix = n * n;
  MhcPreSinkhornOutputs<Real> out;
  out.pre = mhcPre(in);
  SinkhornSteps<Real> steps = mhcSinkhorn(out.pre.hRes.data(), tokens, n, iters, in.hcEps);
  out.hRes = std::move(steps.output);
  out.norm = std::move(steps.norm);
  out.sum = std::move(steps.sum);
  for (int64_t t = 0; t < tokens; ++t) {  // step 0: softmax + eps, the softmax's row sums + eps
    const Real* logits = out.pre.hRes.data() + t * matrix;
    for (int64_t r = 0; r < n; ++r) {
      Real m = logits[r * n];
      for (int64_t c = 1; c < n; ++c) m = std::max(m, logits[r * n + c]);
      Real total = 0;
      for (int64_t c = 0; c < n; ++c) total += std::exp(logits[r * n + c] - m);
      out.sum[at(t * n + r)] = total + in.hcEps;
      for (int64_t c = 0; c < n; ++c) out.norm[at(t * matrix + r * n + c)] += in.hcEps;
    }
  }
  return out;
}

template <class Real>
MhcPreBackwardOutputs<Real> mhcPreSinkhornBackward(const MhcPreSinkhornBackwardInputs<Real>& in) {
  const int64_t tokens = in.sizes.tokens, n = in.sizes.streams, matrix = n * n, f = in.sizes.fusion;
  SinkhornSteps<Real> steps;
  steps.norm.assign(in.norm, in.norm + 2 * in.iters * tokens * matrix);
  steps.sum.assign(in.sum, in.sum + 2 * in.iters * tokens * n);
  for (int64_t e = 0; e < tokens * matrix; ++e) steps.norm[at(e)] -= in.hcEps;  // back to the softmax
  const std::vector<Real> gradLogits = mhcSinkhornBackward(steps, in.gradHRes, tokens, n, in.iters);

  std::vector<Real> hPost(at(tokens * n));
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t i = 0; i < n; ++i) {
      const Real z = in.hMix[t * f + n + i] * in.invRms[t] * in.alpha[1] + in.bias[n + i];
      hPost[at(t * n + i)] = Real(2) / (Real(1) + std::exp(-z));
    }
  }
  MhcPreBackwardInputs<Real> pre;
  pre.sizes = in.sizes;
  pre.x = in.x;
  pre.phi = in.phi;
  pre.alpha = in.alpha;
  pre.gradHIn = in.gradHIn;
  pre.gradHPost = in.gradHPost;
  pre.gradHRes = gradLogits.data();
  pre.invRms = in.invRms;
  pre.hMix = in.hMix;
  pre.hPre = in.hPre;
  pre.hPost = hPost.data();
  pre.hcEps = in.hcEps;
  pre.hf32 = in.hf32;
  return mhcPreBackward(pre);
}

template MhcPreSinkhornOutputs<double> mhcPreSinkhorn(const MhcPreInputs<double>&, int64_t);
template MhcPreSinkhornOutputs<float> mhcPreSinkhorn(const MhcPreInputs<float>&, int64_t);
template MhcPreBackwardOutputs<double> mhcPreSinkhornBackward(const MhcPreSinkhornBackwardInputs<double>&);
template MhcPreBackwardOutputs<float> mhcPreSinkhornBackward(const MhcPreSinkhornBackwardInputs<float>&);

}  // namespace gradkit::golden
