// The plain scalar MhcSinkhorn and MhcSinkhornBackward kernels, in the orders of mhc_sinkhorn_kernel.h: the
// reference the Highway kernels reproduce bit for bit.
#include <algorithm>
#include <cfloat>
#include <cstring>

#include "ops/flash_attention/kernels/fa_softmax.h"  // faExpScalar: the attention softmax's exp
#include "ops/mhc/kernels/mhc_sinkhorn_kernel.h"

namespace gradkit::kernels {
namespace {

constexpr int64_t kC = kSinkhornColumns;
constexpr int64_t kMaxRows = 8;

using Row = float[kC];

/** ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7)) */
float rowSum(const Row& v) { return ((v[0] + v[1]) + (v[2] + v[3])) + ((v[4] + v[5]) + (v[6] + v[7])); }

/** max(max(v0, v4), max(v2, v6)) against max(max(v1, v5), max(v3, v7)) */
float rowMax(const Row& v) {
  const float a0 = std::max(v[0], v[4]), a1 = std::max(v[1], v[5]), a2 = std::max(v[2], v[6]),
              a3 = std::max(v[3], v[7]);
  return std::max(std::max(a0, a2), std::max(a1, a3));
}

/** The token's rows of step k into normOut (when saving). */
void saveRows(const SinkhornProblem& p, const SinkhornSpot& spot, int64_t k, const Row* rows) {
  if (p.normOut == nullptr) return;
  for (int64_t r = 0; r < p.layout.n; ++r) std::memcpy(p.normOut + p.layout.normRow(spot, k, r), rows[r], sizeof(Row));
}

void forwardToken(const SinkhornProblem& p, int64_t t) {
  const SinkhornLayout& layout = p.layout;
  const int64_t n = layout.n;
  const SinkhornSpot spot = layout.spotOf(t);
  const float* x = p.x + t * n * n;
  Row rows[kMaxRows];
  Row eps = {};
  for (int64_t c = 0; c < n; ++c) eps[c] = p.eps;

  float softmaxSums[kC] = {};
  for (int64_t r = 0; r < n; ++r) {  // norm_0: the row softmax (padded columns: 0)
    Row v;
    for (int64_t c = 0; c < kC; ++c) v[c] = c < n ? x[r * n + c] : -FLT_MAX;
    const float m = rowMax(v);
    for (int64_t c = 0; c < kC; ++c) rows[r][c] = c < n ? faExpScalar(v[c] - m) : 0.0f;
    softmaxSums[r] = rowSum(rows[r]);
    for (int64_t c = 0; c < kC; ++c) rows[r][c] /= softmaxSums[r];
  }
  saveRows(p, spot, 0, rows);
  if (p.sumOut != nullptr && p.saveSoftmaxSums) {
    for (int64_t r = 0; r < kC; ++r) p.sumOut[layout.rowSum(spot, 0, r)] = softmaxSums[r];
  } else if (p.sumOut != nullptr) {
    for (int64_t c = 0; c < kC; ++c) p.sumOut[layout.columnSums(spot, 0) + c] = 0.0f;
  }

  Row columns = {};  // the column sums of the rows to be scaled next
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < kC; ++c) {
      rows[r][c] += eps[c];
      columns[c] = r == 0 ? rows[r][c] : columns[c] + rows[r][c];
    }
  }
  for (int64_t k = 1; k < 2 * layout.iters; ++k) {
    if (k % 2 == 1) {  // column step
      Row scale;
      for (int64_t c = 0; c < kC; ++c) {
        columns[c] += eps[c];
        scale[c] = 1.0f / (c < n ? columns[c] : 1.0f);
      }
      for (int64_t r = 0; r < n; ++r) {
        for (int64_t c = 0; c < kC; ++c) rows[r][c] *= scale[c];
      }
      if (p.sumOut != nullptr) std::memcpy(p.sumOut + layout.columnSums(spot, k), columns, sizeof(Row));
    } else {  // row step, summing the columns for the next step on the way
      float sums[kC];
      for (int64_t r = 0; r < n; ++r) sums[r] = rowSum(rows[r]) + p.eps;
      for (int64_t r = 0; r < n; ++r) {
        const float scale = 1.0f / sums[r];
        for (int64_t c = 0; c < kC; ++c) {
          rows[r][c] *= scale;
          columns[c] = r == 0 ? rows[r][c] : columns[c] + rows[r][c];
        }
      }
      if (p.sumOut != nullptr) {
        for (int64_t r = 0; r < kC; ++r) p.sumOut[layout.rowSum(spot, k, r)] = r < n ? sums[r] : 0.0f;
      }
    }
    saveRows(p, spot, k, rows);
  }
  float* y = p.output + t * n * n;
  for (int64_t r = 0; r < n; ++r) std::memcpy(y + r * n, rows[r], n * sizeof(float));
}

void forwardScalar(const SinkhornProblem& p, int64_t first, int64_t count) {
  for (int64_t t = first; t < first + count; ++t) forwardToken(p, t);
}

/** Row r of step k as saved, its padded columns read as 0. */
void loadRow(const SinkhornBackwardProblem& p, const SinkhornSpot& spot, int64_t k, int64_t r, Row& row) {
  const float* saved = p.normOut + p.layout.normRow(spot, k, r);
  for (int64_t c = 0; c < kC; ++c) row[c] = c < p.layout.n ? saved[c] : 0.0f;
}

/** rowSum(g[r] * norm) */
float rowDot(const Row& g, const Row& norm) {
  Row product;
  for (int64_t c = 0; c < kC; ++c) product[c] = g[c] * norm[c];
  return rowSum(product);
}

void backwardToken(const SinkhornBackwardProblem& p, int64_t t) {
  const SinkhornLayout& layout = p.layout;
  const int64_t n = layout.n;
  const SinkhornSpot spot = layout.spotOf(t);
  Row g[kMaxRows];
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t c = 0; c < kC; ++c) g[r][c] = c < n ? p.gradOutput[(t * n + r) * n + c] : 0.0f;
  }
  Row norm;
  for (int64_t k = 2 * layout.iters - 1; k >= 1; --k) {
    if (k % 2 == 1) {  // column step: dot over rows, divided by the column sums
      Row dot = {}, divisor;
      for (int64_t r = 0; r < n; ++r) {
        loadRow(p, spot, k, r, norm);
        for (int64_t c = 0; c < kC; ++c) dot[c] = r == 0 ? g[r][c] * norm[c] : dot[c] + g[r][c] * norm[c];
      }
      const float* sums = p.sumOut + layout.columnSums(spot, k);
      for (int64_t c = 0; c < kC; ++c) divisor[c] = c < n ? sums[c] : 1.0f;
      for (int64_t r = 0; r < n; ++r) {
        for (int64_t c = 0; c < kC; ++c) g[r][c] = (g[r][c] - dot[c]) / divisor[c];
      }
    } else {  // row step
      float dots[kC];
      for (int64_t r = 0; r < n; ++r) {
        loadRow(p, spot, k, r, norm);
        dots[r] = rowDot(g[r], norm);
      }
      for (int64_t r = 0; r < n; ++r) {
        const float sum = p.sumOut[layout.rowSum(spot, k, r)];
        for (int64_t c = 0; c < kC; ++c) g[r][c] = c < n ? (g[r][c] - dots[r]) / sum : 0.0f;
      }
    }
  }
  float* out = p.out + t * n * n;
  for (int64_t r = 0; r < n; ++r) {  // the softmax's gradient
    loadRow(p, spot, 0, r, norm);
    const float dot = rowDot(g[r], norm);
    for (int64_t c = 0; c < n; ++c) out[r * n + c] = (g[r][c] - dot) * norm[c];
  }
}

void backwardScalar(const SinkhornBackwardProblem& p, int64_t first, int64_t count) {
  for (int64_t t = first; t < first + count; ++t) backwardToken(p, t);
}

}  // namespace

const SinkhornKernels kSinkhornScalarKernels{forwardScalar, backwardScalar};

}  // namespace gradkit::kernels
