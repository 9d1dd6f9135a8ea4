// The sparse flash MLA golden's problem, visible-key rules and forward (docs/sparse_attention.md, "What one query row
// sees"). Every sum is a plain sequential loop in a fixed natural order (head dim ascending, visible keys in softmax
// order), one operation per statement, so that the float instantiation is an honest naive fp32 computation.
#include "golden/sparse_flash_mla.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "golden/sparse_flash_mla_rows.h"
#include "gradkit/float_convert.h"

namespace gradkit::golden {

template <class Real>
Real smlaRoundIo(SmlaIoRounding rounding, Real x) {
  switch (rounding) {
    case SmlaIoRounding::Fp16:
      if constexpr (std::is_same_v<Real, double>) return static_cast<Real>(halfToFloat(doubleToHalf(x)));
      return static_cast<Real>(halfToFloat(floatToHalf(static_cast<float>(x))));
    case SmlaIoRounding::Bf16:
      if constexpr (std::is_same_v<Real, double>) return static_cast<Real>(bf16ToFloat(doubleToBf16(x)));
      return static_cast<Real>(bf16ToFloat(floatToBf16(static_cast<float>(x))));
    case SmlaIoRounding::None:
      break;
  }
  return x;
}

int64_t SparseFlashMlaProblem::batchCount() const { return static_cast<int64_t>(batches.size()); }

int64_t SparseFlashMlaProblem::qRows() const { return qRowsBefore(batchCount()); }
int64_t SparseFlashMlaProblem::oriRows() const { return oriRowsBefore(batchCount()); }
int64_t SparseFlashMlaProblem::cmpRows() const { return cmpRowsBefore(batchCount()); }

int64_t SparseFlashMlaProblem::qRowsBefore(int64_t b) const {
  int64_t rows = 0;
  for (int64_t k = 0; k < b; ++k) rows += batches[static_cast<size_t>(k)].s1;
  return rows;
}

int64_t SparseFlashMlaProblem::oriRowsBefore(int64_t b) const {
  int64_t rows = 0;
  for (int64_t k = 0; k < b; ++k) rows += batches[static_cast<size_t>(k)].s2;
  return rows;
}

int64_t SparseFlashMlaProblem::cmpRowsBefore(int64_t b) const {
  int64_t rows = 0;
  for (int64_t k = 0; k < b; ++k) rows += batches[static_cast<size_t>(k)].cmp;
  return rows;
}

namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("golden::sparseFlashMla: " + what);
}

void checkIndexPart(const SparseFlashMlaProblem& p, int64_t topk, const std::vector<int32_t>& indices,
                    const std::vector<int32_t>& lengths, const char* name) {
  const std::string part(name);
  require(topk >= 0, part + " topk must be >= 0");
  require(static_cast<int64_t>(indices.size()) == p.qRows() * topk, part + " indices must hold qRows * K entries");
  require(lengths.empty() || (topk > 0 && static_cast<int64_t>(lengths.size()) == p.qRows()),
          part + " topk lengths must be empty or hold qRows entries (with indices)");
}

}  // namespace

void checkSparseFlashMlaProblem(const SparseFlashMlaProblem& p) {
  require(p.heads >= 1, "heads must be >= 1");
  require(p.dim >= 0, "dim must be >= 0");
  for (const SmlaBatch& b : p.batches)
    require(b.s1 >= 0 && b.s2 >= 0 && b.cmp >= 0 && b.residual >= 0, "batch lengths must be >= 0");
  require(p.sinks.empty() || static_cast<int64_t>(p.sinks.size()) == p.heads, "sinks must be empty or [N1]");
  require(p.cmpRatio >= 1, "cmpRatio must be >= 1");
  require(p.oriMaskMode == 0 || p.oriMaskMode == 3 || p.oriMaskMode == 4, "oriMaskMode must be 0, 3 or 4");
  require(p.cmpMaskMode == 0 || p.cmpMaskMode == 3, "cmpMaskMode must be 0 or 3");
  require(p.oriWinLeft >= -1 && p.oriWinRight >= -1, "windows must be >= -1");
  checkIndexPart(p, p.oriTopk, p.oriIndices, p.oriTopkLength, "ori");
  checkIndexPart(p, p.cmpTopk, p.cmpIndices, p.cmpTopkLength, "cmp");
}

SmlaWindow smlaOriWindow(const SparseFlashMlaProblem& p, int64_t b, int64_t i) {
  const SmlaBatch& batch = p.batches[static_cast<size_t>(b)];
  const int64_t s2 = batch.s2, thr = s2 - batch.s1 + i + 1;
  SmlaWindow w{0, s2};
  if (p.oriMaskMode == 3) {
    w.hi = std::clamp<int64_t>(thr, 0, s2);
  } else if (p.oriMaskMode == 4) {
    w.lo = p.oriWinLeft == -1 ? 0 : std::max<int64_t>(thr - p.oriWinLeft - 1, 0);
    w.hi = p.oriWinRight == -1 ? s2 : std::min(std::max<int64_t>(thr + p.oriWinRight, 0), s2);
  }
  w.lo = std::min(w.lo, w.hi);  // an empty window (lo past hi, e.g. far left of the diagonal)
  return w;
}

int64_t smlaCmpThreshold(const SparseFlashMlaProblem& p, int64_t b, int64_t i) {
  const SmlaBatch& batch = p.batches[static_cast<size_t>(b)];
  const int64_t r = p.cmpRatio;
  const int64_t restored = batch.cmp * r + (r > 1 ? batch.residual : 0);
  const int64_t numerator = p.cmpMaskMode == 3 ? std::max<int64_t>(restored - batch.s1 + i + 1, 0) : restored;
  return std::min(numerator / r, batch.cmp);
}

namespace {

// The sparse part of one row: reads the first `count` slots of the row's list, stops at a negative entry, judges
// each entry against [lo, hi) and the batch length by the problem's index rule.
void appendSparse(const SparseFlashMlaProblem& p, bool cmp, const int32_t* list, int64_t count, int64_t lo, int64_t hi,
                  int64_t length, std::vector<SmlaKey>& keys) {
  for (int64_t slot = 0; slot < count; ++slot) {
    const int64_t index = list[slot];
    if (index < 0) break;
    if (p.indexRule == SmlaIndexRule::DropOutsideMask) {
      if (index < lo || index >= hi) continue;
    } else if (index >= length) {
      break;
    }
    keys.push_back(SmlaKey{cmp, index, slot});
  }
}

/** Entries of a row's list read: min(K, the mask's count) under mask mode 3 / 4; under mode 0 the mask
 *  limits nothing (an entry past the keys is dropped by the range filter, not by the count). */
int64_t slotCount(int64_t topk, const std::vector<int32_t>& lengths, int64_t row, int64_t maskCount, int64_t maskMode) {
  int64_t count = maskMode == 0 ? topk : std::min(topk, maskCount);
  if (!lengths.empty()) count = std::min<int64_t>(count, lengths[static_cast<size_t>(row)]);
  return std::max<int64_t>(count, 0);
}

}  // namespace

std::vector<SmlaKey> sparseFlashMlaVisibleKeys(const SparseFlashMlaProblem& p, int64_t b, int64_t i) {
  const SmlaBatch& batch = p.batches[static_cast<size_t>(b)];
  const int64_t row = p.qRowsBefore(b) + i;
  std::vector<SmlaKey> keys;
  const SmlaWindow w = smlaOriWindow(p, b, i);
  if (p.oriTopk == 0) {
    for (int64_t j = w.lo; j < w.hi; ++j) keys.push_back(SmlaKey{false, j, -1});
  } else {
    const int64_t count = slotCount(p.oriTopk, p.oriTopkLength, row, w.hi - w.lo, p.oriMaskMode);
    appendSparse(p, false, p.oriIndices.data() + row * p.oriTopk, count, w.lo, w.hi, batch.s2, keys);
  }
  const int64_t thr = smlaCmpThreshold(p, b, i);
  if (p.cmpTopk == 0) {
    for (int64_t c = 0; c < thr; ++c) keys.push_back(SmlaKey{true, c, -1});
  } else {
    const int64_t count = slotCount(p.cmpTopk, p.cmpTopkLength, row, thr, p.cmpMaskMode);
    appendSparse(p, true, p.cmpIndices.data() + row * p.cmpTopk, count, 0, thr, batch.cmp, keys);
  }
  return keys;
}

template <class Real>
SparseFlashMlaOutputs<Real> sparseFlashMlaForward(const SparseFlashMlaProblem& p,
                                                  const SparseFlashMlaInputs<Real>& in) {
  checkSmlaInputs(p, in);
  const int64_t N = p.heads, D = p.dim;
  const auto scale = static_cast<Real>(p.scale);
  SparseFlashMlaOutputs<Real> out;
  out.out.assign(static_cast<size_t>(p.qRows() * N * D), Real(0));
  out.lse.assign(static_cast<size_t>(p.qRows() * N), Real(0));
  for (int64_t b = 0; b < p.batchCount(); ++b) {
    for (int64_t i = 0; i < p.batches[static_cast<size_t>(b)].s1; ++i) {
      const SmlaRowKeys<Real> row = smlaRowKeys(p, in, b, i);
      if (row.rows.empty()) continue;  // nothing visible: out 0, lse 0 (docs/sparse_attention.md)
      std::vector<Real> s(row.rows.size()), e(row.rows.size());
      for (int64_t h = 0; h < N; ++h) {
        const int64_t qh = row.q * N + h;
        const Real* q = in.q + qh * D;
        const bool sink = !p.sinks.empty();
        const Real sigma = sink ? static_cast<Real>(p.sinks[static_cast<size_t>(h)]) : Real(0);
        Real top = sink ? sigma : -std::numeric_limits<Real>::infinity();
        for (size_t j = 0; j < row.rows.size(); ++j) {
          s[j] = smlaDot(q, row.rows[j], D) * scale;
          top = std::max(top, s[j]);
        }
        Real sum = sink ? std::exp(sigma - top) : Real(0);
        for (size_t j = 0; j < row.rows.size(); ++j) {
          const Real shifted = s[j] - top;
          e[j] = std::exp(shifted);
          sum = sum + e[j];
        }
        Real* o = out.out.data() + qh * D;
        for (size_t j = 0; j < row.rows.size(); ++j) {
          const Real weight = smlaRoundIo(p.io, e[j]);  // the P operand of P.V (unnormalised, as the kernels)
          for (int64_t d = 0; d < D; ++d) {
            const Real product = weight * row.rows[j][d];
            o[d] = o[d] + product;
          }
        }
        for (int64_t d = 0; d < D; ++d) o[d] = o[d] / sum;
        out.lse[static_cast<size_t>(qh)] = top + std::log(sum);
      }
    }
  }
  return out;
}

template double smlaRoundIo(SmlaIoRounding, double);
template float smlaRoundIo(SmlaIoRounding, float);
template SparseFlashMlaOutputs<double> sparseFlashMlaForward(const SparseFlashMlaProblem&,
                                                             const SparseFlashMlaInputs<double>&);
template SparseFlashMlaOutputs<float> sparseFlashMlaForward(const SparseFlashMlaProblem&,
                                                            const SparseFlashMlaInputs<float>&);

}  // namespace gradkit::golden
