// Golden MhcPost and MhcPostBackward, written from upstream's formulas (ops-transformer mhc/mhc_post docs), never
// from the kernels. Templated on the arithmetic type: double is the fp64 golden; float is the naive same-dtype
// computation the double-benchmark gate compares against (plain sequential sums, one operation at a time).
//
// Tensors are dense row-major over tokens (BSND is TND with T = B*S), 16-bit inputs passed as their exact values.
// Outputs are unrounded; the caller rounds out / gradX / gradHOut to x's dtype.
#pragma once

#include <cstdint>
#include <vector>

namespace gradkit::golden {

template <class Real>
struct MhcPostInputs {
  int64_t tokens = 0, streams = 0, hidden = 0;  // T, N, D
  const Real* x = nullptr;                      // [T, N, D]
  const Real* hRes = nullptr;                   // [T, N, N], or null: out = x + hOut (x) hPost
  const Real* hOut = nullptr;                   // [T, D]
  const Real* hPost = nullptr;                  // [T, N]
};

/** out[t, j, :] = hPost[t, j] * hOut[t, :] + sum_i hRes[t, i, j] * x[t, i, :]  ([T, N, D]). */
template <class Real>
std::vector<Real> mhcPost(const MhcPostInputs<Real>& in);

template <class Real>
struct MhcPostGradients {
  std::vector<Real> gradX;      // [T, N, D]: hRes g (g itself without hRes)
  std::vector<Real> gradHRes;   // [T, N, N]: x g^T
  std::vector<Real> gradHOut;   // [T, D]: sum_j hPost[j] g[j]
  std::vector<Real> gradHPost;  // [T, N]: g[j] . hOut
};

/** The gradients of mhcPost for gradOutput g ([T, N, D]). */
template <class Real>
MhcPostGradients<Real> mhcPostBackward(const MhcPostInputs<Real>& in, const Real* gradOutput);

}  // namespace gradkit::golden
