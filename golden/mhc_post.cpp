#include "golden/mhc_post.h"

#include <cstddef>

namespace gradkit::golden {

template <class Real>
std::vector<Real> mhcPost(const MhcPostInputs<Real>& in) {
  const int64_t n = in.streams, d = in.hidden;
  std::vector<Real> out(static_cast<size_t>(in.tokens * n * d));
  for (int64_t t = 0; t < in.tokens; ++t) {
    for (int64_t j = 0; j < n; ++j) {
      for (int64_t e = 0; e < d; ++e) {
        Real value = in.hPost[t * n + j] * in.hOut[t * d + e];
        for (int64_t i = 0; i < n; ++i) {
          const Real xi = in.x[(t * n + i) * d + e];
          value += in.hRes != nullptr ? in.hRes[(t * n + i) * n + j] * xi : (i == j ? xi : Real(0));
        }
        out[static_cast<size_t>((t * n + j) * d + e)] = value;
      }
    }
  }
  return out;
}

template <class Real>
MhcPostGradients<Real> mhcPostBackward(const MhcPostInputs<Real>& in, const Real* g) {
  const int64_t tokens = in.tokens, n = in.streams, d = in.hidden;
  MhcPostGradients<Real> grads;
  grads.gradX.assign(static_cast<size_t>(tokens * n * d), Real(0));
  grads.gradHRes.assign(static_cast<size_t>(tokens * n * n), Real(0));
  grads.gradHOut.assign(static_cast<size_t>(tokens * d), Real(0));
  grads.gradHPost.assign(static_cast<size_t>(tokens * n), Real(0));
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t e = 0; e < d; ++e) {
        Real value = 0;
        for (int64_t j = 0; j < n; ++j) {
          const Real weight = in.hRes != nullptr ? in.hRes[(t * n + i) * n + j] : Real(i == j ? 1 : 0);
          value += weight * g[(t * n + j) * d + e];
        }
        grads.gradX[static_cast<size_t>((t * n + i) * d + e)] = value;
      }
      for (int64_t j = 0; j < n; ++j) {
        Real dot = 0;
        for (int64_t e = 0; e < d; ++e) dot += in.x[(t * n + i) * d + e] * g[(t * n + j) * d + e];
        grads.gradHRes[static_cast<size_t>((t * n + i) * n + j)] = dot;
      }
    }
    for (int64_t e = 0; e < d; ++e) {
      Real value = 0;
      for (int64_t j = 0; j < n; ++j) value += in.hPost[t * n + j] * g[(t * n + j) * d + e];
      grads.gradHOut[static_cast<size_t>(t * d + e)] = value;
    }
    for (int64_t j = 0; j < n; ++j) {
      Real dot = 0;
      for (int64_t e = 0; e < d; ++e) dot += g[(t * n + j) * d + e] * in.hOut[t * d + e];
      grads.gradHPost[static_cast<size_t>(t * n + j)] = dot;
    }
  }
  return grads;
}

template std::vector<double> mhcPost(const MhcPostInputs<double>&);
template std::vector<float> mhcPost(const MhcPostInputs<float>&);
template MhcPostGradients<double> mhcPostBackward(const MhcPostInputs<double>&, const double*);
template MhcPostGradients<float> mhcPostBackward(const MhcPostInputs<float>&, const float*);

}  // namespace gradkit::golden
