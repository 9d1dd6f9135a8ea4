#include "ops/lightning_indexer/kl_grad_layout.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace gradkit::ops {
namespace {

/** [begin, end) ranges of [0, total) that no [first, first + count) of `used` covers (used sorted by first). */
std::vector<std::pair<int64_t, int64_t>> gaps(const std::vector<std::pair<int64_t, int64_t>>& used, int64_t total) {
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t at = 0;
  for (const auto& [first, count] : used) {
    if (first > at) out.emplace_back(at, first);
    at = std::max(at, first + count);
  }
  if (at < total) out.emplace_back(at, total);
  return out;
}

}  // namespace

std::optional<KlLayout> klLayoutFromName(const char* name) {
  if (name == nullptr) return std::nullopt;
  if (std::strcmp(name, "BSND") == 0) return KlLayout::BSND;
  if (std::strcmp(name, "TND") == 0) return KlLayout::TND;
  return std::nullopt;
}

const char* klLayoutName(KlLayout layout) { return layout == KlLayout::BSND ? "BSND" : "TND"; }

int64_t klLayoutRank(KlLayout layout) { return layout == KlLayout::BSND ? 4 : 3; }

KlDims klDimsOf(KlLayout layout, const std::vector<int64_t>& q, const std::vector<int64_t>& k,
                const std::vector<int64_t>& sparseIndices, int64_t cuQSize) {
  KlDims d;
  d.layout = layout;
  const bool bsnd = layout == KlLayout::BSND;
  d.batch = bsnd ? q[0] : cuQSize - 1;
  d.s1 = bsnd ? q[1] : q[0];
  d.s2 = bsnd ? k[1] : k[0];
  d.n1 = q[q.size() - 2];
  d.dq = q.back();
  d.n2 = k[k.size() - 2];
  d.dk = k.back();
  d.topk = sparseIndices.back();
  return d;
}

std::vector<int64_t> klQueryShape(const KlDims& d) {
  return d.layout == KlLayout::BSND ? std::vector<int64_t>{d.batch, d.s1, d.n1, kernels::kKlHeadDim}
                                    : std::vector<int64_t>{d.s1, d.n1, kernels::kKlHeadDim};
}

std::vector<int64_t> klKeyShape(const KlDims& d) {
  return d.layout == KlLayout::BSND ? std::vector<int64_t>{d.batch, d.s2, 1, kernels::kKlHeadDim}
                                    : std::vector<int64_t>{d.s2, 1, kernels::kKlHeadDim};
}

std::vector<int64_t> klWeightShape(const KlDims& d) {
  return d.layout == KlLayout::BSND ? std::vector<int64_t>{d.batch, d.s1, d.n1} : std::vector<int64_t>{d.s1, d.n1};
}

std::vector<int64_t> klSparseShape(const KlDims& d) {
  return d.layout == KlLayout::BSND ? std::vector<int64_t>{d.batch, d.s1, 1, d.topk}
                                    : std::vector<int64_t>{d.s1, 1, d.topk};
}

std::string klShapeLetters(KlLayout layout, const char* tensor) {
  const bool bsnd = layout == KlLayout::BSND;
  const std::string t(tensor);
  if (t == "k") return bsnd ? "[B, S2, N2, D]" : "[T2, N2, D]";
  if (t == "w") return bsnd ? "[B, S1, N1]" : "[T1, N1]";
  if (t == "sparse") return bsnd ? "[B, S1, N2, K]" : "[T1, N2, K]";
  return bsnd ? "[B, S1, N1, D]" : "[T1, N1, D]";
}

int64_t klQueryLength(const KlDims& d, const KlSequences& seq, int64_t b) {
  return d.layout == KlLayout::BSND ? d.s1 : seq.cuQ[static_cast<size_t>(b + 1)] - seq.cuQ[static_cast<size_t>(b)];
}

int64_t klKeyLength(const KlDims& d, const KlSequences& seq, int64_t b) {
  return d.layout == KlLayout::BSND ? d.s2 : seq.cuK[static_cast<size_t>(b + 1)] - seq.cuK[static_cast<size_t>(b)];
}

kernels::KlGradProblem klProblemOf(const KlDims& d, const KlSequences& seq, int64_t maskMode, int64_t cmpRatio,
                                   aclDataType dtype) {
  kernels::KlGradProblem p;
  p.heads = d.n1;
  p.topk = d.topk;
  p.qTotal = d.queryRows();
  p.kTotal = d.keyRows();
  p.maskMode = maskMode;
  p.cmpRatio = cmpRatio;
  p.dtype = dtype;
  std::vector<std::pair<int64_t, int64_t>> usedQ, usedK;
  for (int64_t b = 0; b < d.batch; ++b) {
    const size_t i = static_cast<size_t>(b);
    kernels::KlGradBatch batch;
    const bool bsnd = d.layout == KlLayout::BSND;
    batch.qRow0 = bsnd ? b * d.s1 : seq.cuQ[i];
    batch.kRow0 = bsnd ? b * d.s2 : seq.cuK[i];
    batch.qRows = seq.usedQ.empty() ? klQueryLength(d, seq, b) : seq.usedQ[i];
    batch.kRows = seq.usedK.empty() ? klKeyLength(d, seq, b) : seq.usedK[i];
    batch.residual = seq.residual.empty() ? 0 : seq.residual[i];
    usedQ.emplace_back(batch.qRow0, batch.qRows);
    usedK.emplace_back(batch.kRow0, batch.kRows);
    p.batches.push_back(batch);
  }
  p.idleQueryRows = gaps(usedQ, p.qTotal);
  p.idleKeyRows = gaps(usedK, p.kTotal);
  kernels::klGradAssignPartials(p);
  return p;
}

}  // namespace gradkit::ops
