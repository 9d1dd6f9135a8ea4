// The sparse flash MLA golden's backward and softmax L1 norm (docs/sparse_attention.md, "aclnnSparseFlashMlaGrad" and
// "aclnnSparseFlashMlaSoftmaxL1Norm"). Plain sequential sums in a fixed natural order (head dim ascending, visible keys
// in softmax order, query heads ascending, query rows ascending), one operation per statement, so that the float
// instantiation is an honest naive fp32 computation.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "golden/sparse_flash_mla.h"
#include "golden/sparse_flash_mla_rows.h"

namespace gradkit::golden {

template <class Real>
SparseFlashMlaGradOutputs<Real> sparseFlashMlaBackward(const SparseFlashMlaProblem& p,
                                                       const SparseFlashMlaGradInputs<Real>& in) {
  const SparseFlashMlaInputs<Real>& t = in.tensors;
  checkSmlaInputs(p, t);
  if (p.qRows() > 0 && (!in.lse || (p.dim > 0 && (!in.dOut || !in.out))))
    throw std::invalid_argument("golden::sparseFlashMlaBackward: dOut, out and lse are required");
  const int64_t N = p.heads, D = p.dim;
  const auto scale = static_cast<Real>(p.scale);
  const bool sink = !p.sinks.empty();
  SparseFlashMlaGradOutputs<Real> g;
  g.dq.assign(static_cast<size_t>(p.qRows() * N * D), Real(0));
  g.dOri.assign(static_cast<size_t>(p.oriRows() * D), Real(0));
  g.dCmp.assign(static_cast<size_t>(p.cmpRows() * D), Real(0));
  g.dSinks.assign(sink ? static_cast<size_t>(N) : 0, Real(0));
  for (int64_t b = 0; b < p.batchCount(); ++b) {
    for (int64_t i = 0; i < p.batches[static_cast<size_t>(b)].s1; ++i) {
      const SmlaRowKeys<Real> row = smlaRowKeys(p, t, b, i);
      const auto n = static_cast<int64_t>(row.rows.size());
      if (n == 0) continue;  // nothing visible: no gradient (out is 0 and independent of the sink)
      // The product operands of every head of this token: io(P) [N][n] for the V role, io(dS) [N][n] for dq and the
      // K role.
      std::vector<Real> pOperand(static_cast<size_t>(N * n)), dsOperand(static_cast<size_t>(N * n));
      for (int64_t h = 0; h < N; ++h) {
        const int64_t qh = row.q * N + h;
        const Real* q = t.q + qh * D;
        const Real* dO = in.dOut + qh * D;
        const Real lse = in.lse[qh];
        const Real dRow = smlaDot(dO, in.out + qh * D, D);  // D = rowsum(dOut * out)
        Real pdp = 0;                                       // sum_j P_j dP_j, the kernels' dSinks factor
        for (int64_t j = 0; j < n; ++j) {
          const Real s = smlaDot(q, row.rows[j], D) * scale;
          const Real shifted = s - lse;
          const Real prob = std::exp(shifted);
          const Real dP = smlaDot(dO, row.rows[j], D);
          const Real weighted = prob * dP;
          pdp = pdp + weighted;
          const Real centered = dP - dRow;
          const Real dS = prob * centered;
          pOperand[static_cast<size_t>(h * n + j)] = smlaRoundIo(p.io, prob);
          dsOperand[static_cast<size_t>(h * n + j)] = smlaRoundIo(p.io, dS);
        }
        Real* dq = g.dq.data() + qh * D;
        for (int64_t j = 0; j < n; ++j) {
          const Real dS = dsOperand[static_cast<size_t>(h * n + j)];
          for (int64_t d = 0; d < D; ++d) {
            const Real product = dS * row.rows[j][d];
            dq[d] = dq[d] + product;
          }
        }
        for (int64_t d = 0; d < D; ++d) dq[d] = dq[d] * scale;
        if (sink) {
          const Real shifted = static_cast<Real>(p.sinks[static_cast<size_t>(h)]) - lse;
          const Real pSink = std::exp(shifted);
          const Real term = pSink * pdp;
          g.dSinks[static_cast<size_t>(h)] = g.dSinks[static_cast<size_t>(h)] - term;
        }
      }
      // Each key's kv row: scale * (K role summed over heads) + (V role summed over heads), scatter-added.
      std::vector<Real> kRole(static_cast<size_t>(D)), vRole(static_cast<size_t>(D));
      for (int64_t j = 0; j < n; ++j) {
        std::fill(kRole.begin(), kRole.end(), Real(0));
        std::fill(vRole.begin(), vRole.end(), Real(0));
        for (int64_t h = 0; h < N; ++h) {
          const int64_t qh = row.q * N + h;
          const Real dS = dsOperand[static_cast<size_t>(h * n + j)];
          const Real prob = pOperand[static_cast<size_t>(h * n + j)];
          for (int64_t d = 0; d < D; ++d) {
            const Real toK = dS * t.q[qh * D + d];
            kRole[static_cast<size_t>(d)] = kRole[static_cast<size_t>(d)] + toK;
            const Real toV = prob * in.dOut[qh * D + d];
            vRole[static_cast<size_t>(d)] = vRole[static_cast<size_t>(d)] + toV;
          }
        }
        Real* dkv = (row.keys[static_cast<size_t>(j)].cmp ? g.dCmp.data() : g.dOri.data()) + row.kvRows[j] * D;
        for (int64_t d = 0; d < D; ++d) {
          const Real scaled = kRole[static_cast<size_t>(d)] * scale;
          const Real sum = scaled + vRole[static_cast<size_t>(d)];
          dkv[d] = dkv[d] + sum;
        }
      }
    }
  }
  if (p.oriTopk > 0) g.oriL1 = sparseFlashMlaSoftmaxL1Norm(p, SmlaPart::Ori, t, in.lse);
  if (p.cmpTopk > 0) g.cmpL1 = sparseFlashMlaSoftmaxL1Norm(p, SmlaPart::Cmp, t, in.lse);
  return g;
}

template <class Real>
SparseFlashMlaGradOutputs<Real> sparseFlashMlaGradient(const SparseFlashMlaProblem& p,
                                                       const SparseFlashMlaGradInputs<Real>& in) {
  const SparseFlashMlaOutputs<Real> fwd = sparseFlashMlaForward(p, in.tensors);
  SparseFlashMlaGradInputs<Real> own = in;
  own.out = fwd.out.data();
  own.lse = fwd.lse.data();
  return sparseFlashMlaBackward(p, own);
}

template <class Real>
std::vector<Real> sparseFlashMlaSoftmaxL1Norm(const SparseFlashMlaProblem& p, SmlaPart part,
                                              const SparseFlashMlaInputs<Real>& in, const Real* lse,
                                              int64_t denseWidth) {
  checkSmlaInputs(p, in);
  if (p.qRows() > 0 && !lse) throw std::invalid_argument("golden::sparseFlashMlaSoftmaxL1Norm: lse is required");
  const bool cmpPart = part == SmlaPart::Cmp;
  const int64_t topk = cmpPart ? p.cmpTopk : p.oriTopk;
  int64_t width = topk;
  if (topk == 0) {
    width = denseWidth;
    if (width <= 0)
      for (const SmlaBatch& batch : p.batches) width = std::max(width, cmpPart ? batch.cmp : batch.s2);
  }
  const int64_t N = p.heads, D = p.dim;
  const auto scale = static_cast<Real>(p.scale);
  std::vector<Real> out(static_cast<size_t>(p.qRows() * width), Real(0));
  for (int64_t b = 0; b < p.batchCount(); ++b) {
    for (int64_t i = 0; i < p.batches[static_cast<size_t>(b)].s1; ++i) {
      const SmlaRowKeys<Real> row = smlaRowKeys(p, in, b, i);
      for (size_t j = 0; j < row.keys.size(); ++j) {
        const SmlaKey& key = row.keys[j];
        if (key.cmp != cmpPart) continue;
        const int64_t col = topk > 0 ? key.slot : key.index;
        if (col >= width) throw std::invalid_argument("golden::sparseFlashMlaSoftmaxL1Norm: denseWidth too small");
        Real sum = 0;
        for (int64_t h = 0; h < N; ++h) {
          const int64_t qh = row.q * N + h;
          const Real s = smlaDot(in.q + qh * D, row.rows[j], D) * scale;
          const Real shifted = s - lse[qh];
          sum = sum + std::exp(shifted);
        }
        out[static_cast<size_t>(row.q * width + col)] = sum / static_cast<Real>(N);
      }
    }
  }
  return out;
}

template SparseFlashMlaGradOutputs<double> sparseFlashMlaBackward(const SparseFlashMlaProblem&,
                                                                  const SparseFlashMlaGradInputs<double>&);
template SparseFlashMlaGradOutputs<float> sparseFlashMlaBackward(const SparseFlashMlaProblem&,
                                                                 const SparseFlashMlaGradInputs<float>&);
template SparseFlashMlaGradOutputs<double> sparseFlashMlaGradient(const SparseFlashMlaProblem&,
                                                                  const SparseFlashMlaGradInputs<double>&);
template SparseFlashMlaGradOutputs<float> sparseFlashMlaGradient(const SparseFlashMlaProblem&,
                                                                 const SparseFlashMlaGradInputs<float>&);
template std::vector<double> sparseFlashMlaSoftmaxL1Norm(const SparseFlashMlaProblem&, SmlaPart,
                                                         const SparseFlashMlaInputs<double>&, const double*, int64_t);
template std::vector<float> sparseFlashMlaSoftmaxL1Norm(const SparseFlashMlaProblem&, SmlaPart,
                                                        const SparseFlashMlaInputs<float>&, const float*, int64_t);

}  // namespace gradkit::golden
