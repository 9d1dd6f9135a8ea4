#include "golden/sparse_lightning_indexer_kl_loss_grad.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace gradkit::golden {
namespace {

size_t at(int64_t i) { return static_cast<size_t>(i); }

/** One row's forward: the valid slots, their keys, S [N1, n], I [n], y [n]. */
template <class Real>
struct RowForward {
  std::vector<int64_t> slot, key;  // slot position and global key row of each valid entry
  std::vector<Real> s, logits, y;
};

template <class Real>
RowForward<Real> rowForward(const KlProblem& pr, const KlBatch& b, int64_t i, const Real* q, const Real* k,
                            const Real* w, const int32_t* indices) {
  RowForward<Real> f;
  const int64_t t = b.qRow0 + i, d = pr.headDim;
  for (int64_t j = 0; j < pr.topk; ++j) {
    const int32_t index = indices[t * pr.topk + j];
    if (klSlotValid(pr, b, i, j, index)) {
      f.slot.push_back(j);
      f.key.push_back(b.kRow0 + index);
    }
  }
  const int64_t n = static_cast<int64_t>(f.slot.size());
  f.s.assign(at(pr.heads * n), Real(0));
  f.logits.assign(at(n), Real(0));
  for (int64_t h = 0; h < pr.heads; ++h) {
    for (int64_t j = 0; j < n; ++j) {
      Real dot = 0;
      for (int64_t e = 0; e < d; ++e) dot += q[(t * pr.heads + h) * d + e] * k[f.key[at(j)] * d + e];
      f.s[at(h * n + j)] = dot;
    }
  }
  for (int64_t j = 0; j < n; ++j) {
    Real sum = 0;
    for (int64_t h = 0; h < pr.heads; ++h) sum += w[t * pr.heads + h] * std::max(f.s[at(h * n + j)], Real(0));
    f.logits[at(j)] = sum;
  }
  if (n > 0) {
    const Real top = *std::max_element(f.logits.begin(), f.logits.end());
    Real sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += std::exp(f.logits[at(j)] - top);
    for (int64_t j = 0; j < n; ++j) f.y.push_back(std::exp(f.logits[at(j)] - top) / sum);
  }
  return f;
}

}  // namespace

int64_t klVisibleKeys(const KlProblem& pr, const KlBatch& b, int64_t row) {
  if (pr.maskMode != 3) return b.kRows;
  const int64_t numerator = b.kRows * pr.cmpRatio + b.residual - b.qRows + row + 1;
  if (numerator <= 0) return 0;
  return std::min(numerator / pr.cmpRatio, b.kRows);
}

bool klSlotValid(const KlProblem& pr, const KlBatch& b, int64_t row, int64_t slot, int32_t index) {
  const int64_t visible = klVisibleKeys(pr, b, row);
  return slot < std::min(pr.topk, visible) && index >= 0 && index < visible;
}

template <class Real>
Real klLoss(const KlProblem& pr, const Real* q, const Real* k, const Real* w, const int32_t* indices, const Real* p) {
  Real loss = 0;
  for (const KlBatch& b : pr.batches) {
    for (int64_t i = 0; i < b.qRows; ++i) {
      const RowForward<Real> f = rowForward(pr, b, i, q, k, w, indices);
      const int64_t t = b.qRow0 + i;
      for (size_t j = 0; j < f.slot.size(); ++j) {
        const Real target = p[t * pr.topk + f.slot[j]];
        if (target != Real(0)) loss += target * (std::log(target) - std::log(f.y[j]));
      }
    }
  }
  return loss;
}

template <class Real>
KlGradients<Real> klLossGrad(const KlProblem& pr, const Real* q, const Real* k, const Real* w, const int32_t* indices,
                             const Real* p, Real (*roundDs)(Real)) {
  const int64_t d = pr.headDim, n1 = pr.heads;
  KlGradients<Real> g;
  g.dq.assign(at(pr.qTotal * n1 * d), Real(0));
  g.dk.assign(at(pr.kTotal * d), Real(0));
  g.dw.assign(at(pr.qTotal * n1), Real(0));
  g.softmaxOut.assign(at(pr.qTotal * pr.topk), Real(0));
  for (const KlBatch& b : pr.batches) {
    for (int64_t i = 0; i < b.qRows; ++i) {
      const RowForward<Real> f = rowForward(pr, b, i, q, k, w, indices);
      const int64_t t = b.qRow0 + i, n = static_cast<int64_t>(f.slot.size());
      Real mass = 0;
      for (int64_t j = 0; j < n; ++j) mass += p[t * pr.topk + f.slot[at(j)]];
      for (int64_t j = 0; j < n; ++j) {
        g.softmaxOut[at(t * pr.topk + f.slot[at(j)])] = f.y[at(j)];
        const Real dI = f.y[at(j)] * mass - p[t * pr.topk + f.slot[at(j)]];
        for (int64_t h = 0; h < n1; ++h) {
          const Real s = f.s[at(h * n + j)];
          g.dw[at(t * n1 + h)] += std::max(s, Real(0)) * dI;
          if (!(s > Real(0))) continue;
          Real ds = dI * w[t * n1 + h];
          if (roundDs != nullptr) ds = roundDs(ds);
          for (int64_t e = 0; e < d; ++e) {
            g.dq[at((t * n1 + h) * d + e)] += ds * k[f.key[at(j)] * d + e];
            g.dk[at(f.key[at(j)] * d + e)] += ds * q[(t * n1 + h) * d + e];
          }
        }
      }
    }
  }
  return g;
}

template double klLoss(const KlProblem&, const double*, const double*, const double*, const int32_t*, const double*);
template float klLoss(const KlProblem&, const float*, const float*, const float*, const int32_t*, const float*);
template KlGradients<double> klLossGrad(const KlProblem&, const double*, const double*, const double*, const int32_t*,
                                        const double*, double (*)(double));
template KlGradients<float> klLossGrad(const KlProblem&, const float*, const float*, const float*, const int32_t*,
                                       const float*, float (*)(float));

}  // namespace gradkit::golden
