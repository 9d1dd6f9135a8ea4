#include "golden/block_attention_residuals.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace gradkit::golden {
namespace {

size_t at(int64_t i) { return static_cast<size_t>(i); }

/** Value i of token t: blockRes[t, i, :] for i < N, partialBlock[t, :] for i = N. */
template <class Real>
const Real* valueOf(const BlockResidualSizes& s, const Real* partialBlock, const Real* blockRes, int64_t t, int64_t i) {
  return i < s.blocks ? blockRes + (t * s.blocks + i) * s.hidden : partialBlock + t * s.hidden;
}

}  // namespace

template <class Real>
BlockResidualOutputs<Real> blockAttentionResiduals(const BlockResidualSizes& s, const Real* partialBlock,
                                                   const Real* blockRes, const Real* projWeight, const Real* normWeight,
                                                   Real normEps) {
  const int64_t values = s.blocks + 1, h = s.hidden;
  BlockResidualOutputs<Real> out;
  out.hidden.assign(at(s.tokens * h), Real(0));
  out.invNorm.assign(at(s.tokens * values), Real(0));
  out.probs.assign(at(s.tokens * values), Real(0));
  std::vector<Real> score(at(values));
  for (int64_t t = 0; t < s.tokens; ++t) {
    for (int64_t i = 0; i < values; ++i) {
      const Real* v = valueOf(s, partialBlock, blockRes, t, i);
      Real squares = 0;
      for (int64_t e = 0; e < h; ++e) squares += v[e] * v[e];
      const Real inv = Real(1) / std::sqrt(squares / static_cast<Real>(h) + normEps);
      Real total = 0;
      for (int64_t e = 0; e < h; ++e) total += v[e] * inv * (normWeight[e] * projWeight[e]);
      out.invNorm[at(t * values + i)] = inv;
      score[at(i)] = total;
    }
    const Real top = *std::max_element(score.begin(), score.end());
    Real sum = 0;
    for (int64_t i = 0; i < values; ++i) sum += std::exp(score[at(i)] - top);
    for (int64_t i = 0; i < values; ++i) {
      const Real p = std::exp(score[at(i)] - top) / sum;
      out.probs[at(t * values + i)] = p;
      const Real* v = valueOf(s, partialBlock, blockRes, t, i);
      for (int64_t e = 0; e < h; ++e) out.hidden[at(t * h + e)] += p * v[e];
    }
  }
  return out;
}

template <class Real>
BlockResidualGradients<Real> blockAttentionResidualsGrad(const BlockResidualSizes& s, const Real* partialBlock,
                                                         const Real* blockRes, const Real* projWeight,
                                                         const Real* normWeight, const Real* gradHidden,
                                                         const Real* invNorm, const Real* probs) {
  const int64_t values = s.blocks + 1, h = s.hidden;
  BlockResidualGradients<Real> out;
  out.partialBlock.assign(at(s.tokens * h), Real(0));
  out.blockRes.assign(at(s.tokens * s.blocks * h), Real(0));
  std::vector<Real> weightSum(at(h), Real(0)), d(at(values)), gs(at(values));
  for (int64_t t = 0; t < s.tokens; ++t) {
    const Real* g = gradHidden + t * h;
    const Real* p = probs + t * values;
    const Real* inv = invNorm + t * values;
    Real expected = 0;
    for (int64_t i = 0; i < values; ++i) {
      const Real* v = valueOf(s, partialBlock, blockRes, t, i);
      Real dot = 0;
      for (int64_t e = 0; e < h; ++e) dot += g[e] * v[e];
      d[at(i)] = dot;
      expected += p[i] * dot;
    }
    for (int64_t i = 0; i < values; ++i) gs[at(i)] = p[i] * (d[at(i)] - expected);
    for (int64_t i = 0; i < values; ++i) {
      const Real* v = valueOf(s, partialBlock, blockRes, t, i);
      Real weighted = 0;
      for (int64_t e = 0; e < h; ++e) weighted += normWeight[e] * projWeight[e] * v[e];
      const Real r = gs[at(i)] * weighted;
      Real* gradV = i < s.blocks ? out.blockRes.data() + (t * s.blocks + i) * h : out.partialBlock.data() + t * h;
      for (int64_t e = 0; e < h; ++e) {
        const Real w = normWeight[e] * projWeight[e];
        gradV[e] = g[e] * p[i] + gs[at(i)] * w * inv[i] - r * inv[i] * inv[i] * inv[i] * v[e] / static_cast<Real>(h);
        weightSum[at(e)] += gs[at(i)] * v[e] * inv[i];
      }
    }
  }
  out.projWeight.resize(at(h));
  out.normWeight.resize(at(h));
  for (int64_t e = 0; e < h; ++e) {
    out.normWeight[at(e)] = weightSum[at(e)] * projWeight[e];
    out.projWeight[at(e)] = weightSum[at(e)] * normWeight[e];
  }
  return out;
}

template BlockResidualOutputs<double> blockAttentionResiduals(const BlockResidualSizes&, const double*, const double*,
                                                              const double*, const double*, double);
template BlockResidualOutputs<float> blockAttentionResiduals(const BlockResidualSizes&, const float*, const float*,
                                                             const float*, const float*, float);
template BlockResidualGradients<double> blockAttentionResidualsGrad(const BlockResidualSizes&, const double*,
                                                                    const double*, const double*, const double*,
                                                                    const double*, const double*, const double*);
template BlockResidualGradients<float> blockAttentionResidualsGrad(const BlockResidualSizes&, const float*,
                                                                   const float*, const float*, const float*,
                                                                   const float*, const float*, const float*);

}  // namespace gradkit::golden
