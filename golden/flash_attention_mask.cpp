// The flash attention golden's problem geometry, checks, mask rules (spec fag.md 2.7, 2.8) and position bias (2.9).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "golden/flash_attention.h"

namespace gradkit::golden {

int64_t FlashAttentionProblem::groups() const { return n1 / n2; }

int64_t FlashAttentionProblem::qRowsBefore(int64_t b) const {
  int64_t rows = 0;
  for (int64_t c = 0; c < b; ++c) rows += s1[c];
  return rows;
}

int64_t FlashAttentionProblem::kvRowsBefore(int64_t b) const {
  int64_t rows = 0;
  for (int64_t c = 0; c < b; ++c) rows += s2[c];
  return rows;
}

int64_t FlashAttentionProblem::qRows() const { return n1 * qRowsBefore(batch); }
int64_t FlashAttentionProblem::kvRows() const { return n2 * kvRowsBefore(batch); }

int64_t FlashAttentionProblem::qRow(int64_t b, int64_t head, int64_t i) const {
  return n1 * qRowsBefore(b) + head * s1[b] + i;
}

int64_t FlashAttentionProblem::kvRow(int64_t b, int64_t head, int64_t j) const {
  return n2 * kvRowsBefore(b) + head * s2[b] + j;
}

namespace {

int64_t paddedRow(int64_t s2) { return (s2 + 15) / 16 * 16; }

}  // namespace

int64_t FlashAttentionProblem::dropElements() const {
  int64_t total = 0;
  for (int64_t b = 0; b < batch; ++b) total += n1 * s1[b] * s2[b];
  return total;
}

int64_t FlashAttentionProblem::dropElementIndex(int64_t b, int64_t head, int64_t i, int64_t j) const {
  int64_t before = 0;
  for (int64_t c = 0; c < b; ++c) before += n1 * s1[c] * s2[c];
  return before + (head * s1[b] + i) * s2[b] + j;
}

int64_t FlashAttentionProblem::dropStreamBytes() const {
  int64_t total = 0;
  for (int64_t b = 0; b < batch; ++b) total += n1 * s1[b] * paddedRow(s2[b]);
  return total;
}

int64_t FlashAttentionProblem::dropStreamIndex(int64_t b, int64_t head, int64_t i, int64_t j) const {
  int64_t ptr = 0;  // ptr_b of spec 3.4
  for (int64_t c = 0; c < b; ++c) ptr += s1[c] * paddedRow(s2[c]);
  return n1 * ptr + (head * s1[b] + i) * paddedRow(s2[b]) + j;
}

void checkFlashAttentionProblem(const FlashAttentionProblem& p) {
  const auto fail = [](const std::string& what) { throw std::invalid_argument("golden::flashAttention: " + what); };
  if (p.batch < 0) fail("batch must be >= 0");
  if (p.n1 < 1 || p.n2 < 1 || p.n1 % p.n2 != 0) fail("heads: n1, n2 positive with n1 % n2 == 0");
  if (p.d < 0 || p.dv < 0 || p.dRope < 0) fail("head dims must be >= 0");
  if (static_cast<int64_t>(p.s1.size()) != p.batch || static_cast<int64_t>(p.s2.size()) != p.batch)
    fail("s1 and s2 must hold batch values");
  for (int64_t b = 0; b < p.batch; ++b)
    if (p.s1[b] < 0 || p.s2[b] < 0) fail("sequence lengths must be >= 0");
  if (!(p.keepProb > 0.0f && p.keepProb <= 1.0f)) fail("keepProb must lie in (0, 1]");
  if (p.hasMask) {
    if (p.sparseMode < 0 || p.sparseMode > 8) fail("sparseMode must lie in [0, 8]");
    const bool needsTensor = p.sparseMode == 0 || p.sparseMode == 1 || (p.sparseMode == 5 && p.prefix.empty());
    if (needsTensor && !p.attenMask) fail("sparse modes 0, 1 (and 5 without prefix) need attenMask");
    const bool needsPrefix = p.sparseMode == 6 || (p.sparseMode == 5 && !p.attenMask);
    if (needsPrefix && static_cast<int64_t>(p.prefix.size()) != p.batch) fail("prefix must hold batch values");
  }
  if (p.hasPse) {
    if (p.pseType < 0 || p.pseType > 3) fail("pseType must lie in [0, 3]");
    if (p.pseType <= 1 && !p.pse) fail("pseType 0/1 needs the pse values");
    const auto count = static_cast<int64_t>(p.slopes.size());
    if (p.pseType >= 2 && count != p.n1 && count != p.batch * p.n1) fail("slopes must hold N1 or B*N1 values");
  }
}

namespace {

// The batch that gets the band in modes 7 (last with S1_b > 0) and 8 (first with S1_b > 0); -1 when none.
int64_t bandBatch(const FlashAttentionProblem& p) {
  if (p.sparseMode == 8) {
    for (int64_t b = 0; b < p.batch; ++b)
      if (p.s1[b] > 0) return b;
  } else {
    for (int64_t b = p.batch - 1; b >= 0; --b)
      if (p.s1[b] > 0) return b;
  }
  return -1;
}

int64_t maskRowsOf(const FlashAttentionProblem& p) {
  if (p.maskRows > 0) return p.maskRows;
  return p.batch == 0 ? 0 : *std::max_element(p.s1.begin(), p.s1.end());
}

int64_t maskColsOf(const FlashAttentionProblem& p) {
  if (p.maskCols > 0) return p.maskCols;
  return p.batch == 0 ? 0 : *std::max_element(p.s2.begin(), p.s2.end());
}

// The attenMask value at logical (i, j) of batch b through the corner rule of spec 2.7.
bool tensorMasked(const FlashAttentionProblem& p, int64_t b, int64_t head, int64_t i, int64_t j) {
  const bool bottomRight = p.sparseMode == 3 || p.sparseMode == 4 || p.sparseMode == 5;
  const int64_t row = bottomRight ? maskRowsOf(p) - p.s1[b] + i : i;
  const int64_t col = bottomRight ? maskColsOf(p) - p.s2[b] + j : j;
  return p.attenMask(b, head, row, col);
}

}  // namespace

bool flashAttentionMasked(const FlashAttentionProblem& p, int64_t b, int64_t head, int64_t i, int64_t j) {
  if (!p.hasMask) return false;
  const int64_t d0 = p.s2[b] - p.s1[b];
  const int64_t pre = p.preTokens, next = p.nextTokens;
  // Outside the band j - origin in [i - pre, i + next], written on the small difference so no token value overflows.
  const auto band = [&](int64_t origin) {
    const int64_t delta = j - i - origin;
    return delta > next || -delta > pre;
  };
  const auto prefixCausal = [&] { return j > i + d0 && j >= p.prefix[b]; };
  switch (p.sparseMode) {
    case 0:
      return tensorMasked(p, b, head, i, j) || band(0);
    case 1:
      return tensorMasked(p, b, head, i, j);
    case 2:
      return j > i;
    case 3:
      return j > i + d0;
    case 4:
      return band(d0);
    case 5:
      return p.attenMask ? tensorMasked(p, b, head, i, j) : prefixCausal();
    case 6:
      return prefixCausal();
    case 7:
      return b == bandBatch(p) ? band(d0) : j > i + d0;
    case 8:
      return b == bandBatch(p) ? band(d0) : j > i;
    default:
      throw std::invalid_argument("golden::flashAttention: sparseMode must lie in [0, 8]");
  }
}

template <class Real>
Real flashAttentionBias(const FlashAttentionProblem& p, int64_t b, int64_t head, int64_t i, int64_t j) {
  if (!p.hasPse) return Real(0);
  if (p.pseType <= 1) return static_cast<Real>(p.pse(b, head, i, j));
  const bool perHead = static_cast<int64_t>(p.slopes.size()) == p.n1;  // [N1]; otherwise [B][N1]
  const auto slope = static_cast<Real>(p.slopes[perHead ? head : b * p.n1 + head]);
  const int64_t delta = (j + p.kvStartIdx) - (i + p.qStartIdx);
  const auto dist = static_cast<Real>(delta < 0 ? -delta : delta);
  const Real shape = p.pseType == 2 ? dist : std::sqrt(dist);
  const Real product = slope * shape;
  return -product;
}

template double flashAttentionBias(const FlashAttentionProblem&, int64_t, int64_t, int64_t, int64_t);
template float flashAttentionBias(const FlashAttentionProblem&, int64_t, int64_t, int64_t, int64_t);

std::vector<double> alibiSlopes(int64_t heads) {
  std::vector<double> slopes;
  if (heads < 1) return slopes;
  int64_t p = 1;
  while (p * 2 <= heads) p *= 2;
  const double base = std::pow(2.0, -8.0 / static_cast<double>(p));
  for (int64_t k = 1; k <= p; ++k) slopes.push_back(std::pow(base, static_cast<double>(k)));
  const double extra = std::pow(2.0, -4.0 / static_cast<double>(p));
  for (int64_t k = 1; k <= 2 * (heads - p) - 1; k += 2) slopes.push_back(std::pow(extra, static_cast<double>(k)));
  return slopes;
}

std::vector<double> alibiPseTable(const std::vector<int64_t>& shape, int64_t heads, int64_t shift) {
  const std::vector<double> slopes = alibiSlopes(heads);
  const int64_t rows = shape[2], cols = shape[3];
  std::vector<double> values(static_cast<size_t>(shape[0] * shape[1] * rows * cols));
  for (int64_t e = 0; e < static_cast<int64_t>(values.size()); ++e) {
    const int64_t col = e % cols, row = (e / cols) % rows, head = (e / (rows * cols)) % shape[1];
    const double distance = std::min<double>(0.0, static_cast<double>((col - cols) - (row - rows) + shift));
    values[static_cast<size_t>(e)] = slopes[static_cast<size_t>(head)] * distance;
  }
  return values;
}

std::vector<double> expandAlibiPse(const double* table, int64_t rows, int64_t cols, int64_t s1, int64_t s2) {
  std::vector<double> out(static_cast<size_t>(s1 * s2), 0.0);
  for (int64_t i = 0; i < s1; ++i) {
    for (int64_t j = 0; j < s2; ++j) {
      int64_t row = rows - s1 + i, col = cols - s2 + j;
      if (row < 0) {  // before the table: same diagonal (col - row constant), first table row
        col -= row;
        row = 0;
      }
      if (row < rows && col >= 0 && col < cols) out[i * s2 + j] = table[row * cols + col];
    }
  }
  return out;
}

}  // namespace gradkit::golden
