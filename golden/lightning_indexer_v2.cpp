#include "golden/lightning_indexer_v2.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace gradkit::golden {

int64_t lightningIndexerV2Visible(const LightningIndexerV2Problem& p, const LightningIndexerV2Batch& b, int64_t row) {
  if (p.maskMode != 3) return b.usedKeys;
  const int64_t position = b.usedKeys * p.cmpRatio + b.residual - b.usedRows + row;
  if (position + 1 <= 0) return 0;
  return std::min(b.usedKeys, (position + 1) / p.cmpRatio);
}

template <class Real>
std::vector<std::vector<Real>> lightningIndexerV2Scores(const LightningIndexerV2Problem& p, const Real* q,
                                                        const Real* w, const LightningIndexerV2Keys<Real>& keys) {
  std::vector<std::vector<Real>> scores(static_cast<size_t>(p.rows));
  const auto dim = static_cast<size_t>(p.dim);
  for (size_t bi = 0; bi < p.batches.size(); ++bi) {
    const LightningIndexerV2Batch& b = p.batches[bi];
    if (b.usedRows == 0) continue;
    // The batch's keys transposed ([D][Sk]), so that the sums over d run key by key in order, every key at once.
    const auto count = static_cast<size_t>(b.usedKeys);
    std::vector<Real> transposed(dim * count);
    for (size_t s = 0; s < count; ++s) {
      const Real* key = keys(static_cast<int64_t>(bi), static_cast<int64_t>(s));
      for (size_t d = 0; d < dim; ++d) transposed[d * count + s] = key[d];
    }
    std::vector<Real> dots(count);
    for (int64_t i = 0; i < b.usedRows; ++i) {
      const int64_t row = b.firstRow + i;
      const auto visible = static_cast<size_t>(lightningIndexerV2Visible(p, b, i));
      std::vector<Real>& out = scores[static_cast<size_t>(row)];
      out.assign(visible, Real(0));
      for (int64_t h = 0; h < p.heads; ++h) {
        const Real* qRow = q + (row * p.heads + h) * p.dim;
        std::fill(dots.begin(), dots.begin() + static_cast<std::ptrdiff_t>(visible), Real(0));
        for (size_t d = 0; d < dim; ++d) {
          const Real value = qRow[d];
          const Real* column = transposed.data() + d * count;
          for (size_t s = 0; s < visible; ++s) dots[s] = dots[s] + value * column[s];
        }
        const Real weight = w[row * p.heads + h];
        for (size_t s = 0; s < visible; ++s) out[s] = out[s] + weight * (dots[s] < Real(0) ? Real(0) : dots[s]);
      }
    }
  }
  return scores;
}

template std::vector<std::vector<double>> lightningIndexerV2Scores(const LightningIndexerV2Problem&, const double*,
                                                                   const double*,
                                                                   const LightningIndexerV2Keys<double>&);
template std::vector<std::vector<float>> lightningIndexerV2Scores(const LightningIndexerV2Problem&, const float*,
                                                                  const float*, const LightningIndexerV2Keys<float>&);

std::vector<int64_t> lightningIndexerV2Select(const std::vector<double>& scores, int64_t topk) {
  std::vector<int64_t> order(scores.size());
  std::iota(order.begin(), order.end(), int64_t{0});
  // a before b: NaN first, then larger, then +0 before -0; stable, so equal scores keep the lower position first.
  const auto better = [&scores](int64_t a, int64_t b) {
    const double x = scores[static_cast<size_t>(a)], y = scores[static_cast<size_t>(b)];
    if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && !std::isnan(y);
    if (x != y) return x > y;
    return !std::signbit(x) && std::signbit(y);
  };
  std::stable_sort(order.begin(), order.end(), better);
  order.resize(std::min<size_t>(order.size(), static_cast<size_t>(std::max<int64_t>(topk, 0))));
  return order;
}

}  // namespace gradkit::golden
