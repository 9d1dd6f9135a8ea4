#include "golden/mhc_sinkhorn.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace gradkit::golden {
namespace {

size_t at(int64_t i) { return static_cast<size_t>(i); }

}  // namespace

template <class Real>
SinkhornSteps<Real> mhcSinkhorn(const Real* x, int64_t tokens, int64_t n, int64_t iters, Real eps) {
  const int64_t steps = 2 * iters, matrix = n * n;
  SinkhornSteps<Real> s;
  s.norm.assign(at(steps * tokens * matrix), Real(0));
  s.sum.assign(at(steps * tokens * n), Real(0));
  for (int64_t t = 0; t < tokens; ++t) {
    const Real* in = x + t * matrix;
    Real* norm0 = s.norm.data() + t * matrix;
    for (int64_t r = 0; r < n; ++r) {
      Real m = in[r * n];
      for (int64_t c = 1; c < n; ++c) m = std::max(m, in[r * n + c]);
      Real total = 0;
      for (int64_t c = 0; c < n; ++c) total += std::exp(in[r * n + c] - m);
      for (int64_t c = 0; c < n; ++c) norm0[r * n + c] = std::exp(in[r * n + c] - m) / total;
    }
    for (int64_t k = 1; k < steps; ++k) {
      const Real* previous = s.norm.data() + ((k - 1) * tokens + t) * matrix;
      Real* current = s.norm.data() + (k * tokens + t) * matrix;
      Real* sums = s.sum.data() + (k * tokens + t) * n;
      const Real added = k == 1 ? eps : Real(0);  // the first column step divides norm[0] + eps
      for (int64_t i = 0; i < n; ++i) {
        Real total = 0;
        for (int64_t j = 0; j < n; ++j) {
          total += (k % 2 == 1 ? previous[j * n + i] : previous[i * n + j]) + added;
        }
        sums[i] = total + eps;
      }
      for (int64_t r = 0; r < n; ++r) {
        for (int64_t c = 0; c < n; ++c) {
          current[r * n + c] = (previous[r * n + c] + added) / sums[k % 2 == 1 ? c : r];
        }
      }
    }
  }
  const Real* last = s.norm.data() + (steps - 1) * tokens * matrix;
  s.output.assign(last, last + tokens * matrix);
  return s;
}

template <class Real>
std::vector<Real> mhcSinkhornBackward(const SinkhornSteps<Real>& s, const Real* gradOutput, int64_t tokens, int64_t n,
                                      int64_t iters) {
  const int64_t matrix = n * n;
  std::vector<Real> grad(gradOutput, gradOutput + tokens * matrix);
  for (int64_t t = 0; t < tokens; ++t) {
    Real* g = grad.data() + t * matrix;
    std::vector<Real> dot(at(n));
    for (int64_t k = 2 * iters - 1; k >= 0; --k) {
      const Real* norm = s.norm.data() + (k * tokens + t) * matrix;
      const bool columns = k % 2 == 1;
      for (int64_t i = 0; i < n; ++i) {
        Real total = 0;
        for (int64_t j = 0; j < n; ++j) {
          const int64_t e = columns ? j * n + i : i * n + j;
          total += g[e] * norm[e];
        }
        dot[at(i)] = total;
      }
      for (int64_t r = 0; r < n; ++r) {
        for (int64_t c = 0; c < n; ++c) {
          const int64_t line = columns ? c : r;
          const Real centred = g[r * n + c] - dot[at(line)];
          g[r * n + c] = k == 0 ? centred * norm[r * n + c] : centred / s.sum[at((k * tokens + t) * n + line)];
        }
      }
    }
  }
  return grad;
}

template SinkhornSteps<double> mhcSinkhorn(const double*, int64_t, int64_t, int64_t, double);
template SinkhornSteps<float> mhcSinkhorn(const float*, int64_t, int64_t, int64_t, float);
template std::vector<double> mhcSinkhornBackward(const SinkhornSteps<double>&, const double*, int64_t, int64_t,
                                                 int64_t);
template std::vector<float> mhcSinkhornBackward(const SinkhornSteps<float>&, const float*, int64_t, int64_t, int64_t);

}  // namespace gradkit::golden
