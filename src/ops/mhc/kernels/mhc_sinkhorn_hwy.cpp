// The SIMD MhcSinkhorn and MhcSinkhornBackward kernels, compiled once per Highway target and dispatched at run time,
// on x86 from AVX2 on; other targets run the scalar kernels. One 8-lane vector holds one padded row (the saved
// layout's 32-byte row), so the column steps are lane-wise and the row sums the tree of mhc_sinkhorn_kernel.h; the
// same operations in the same order as mhc_sinkhorn_scalar.cpp.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/mhc/kernels/mhc_sinkhorn_hwy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
//
#include <cfloat>
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "ops/flash_attention/kernels/fa_exp-inl.h"
#include "ops/mhc/kernels/mhc_sinkhorn_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2

using D8 = hn::FixedTag<float, kSinkhornColumns>;
using V8 = hn::Vec<D8>;
using M8 = hn::Mask<D8>;
constexpr int64_t kMaxRows = 8;

/** (v0 + v4 + v2 + v6) + (v1 + v5 + v3 + v7) in the tree of mhc_sinkhorn_kernel.h, in every lane. */
HWY_INLINE V8 TreeSum(V8 v) {
  const D8 d;
  const hn::Half<D8> dh;
  const auto a = hn::Add(hn::LowerHalf(dh, v), hn::UpperHalf(dh, v));
  const auto b = hn::Add(a, hn::Shuffle1032(a));
  const auto c = hn::Add(b, hn::Shuffle2301(b));
  return hn::Combine(d, c, c);
}

HWY_INLINE V8 TreeMax(V8 v) {
  const D8 d;
  const hn::Half<D8> dh;
  const auto a = hn::Max(hn::LowerHalf(dh, v), hn::UpperHalf(dh, v));
  const auto b = hn::Max(a, hn::Shuffle1032(a));
  const auto c = hn::Max(b, hn::Shuffle2301(b));
  return hn::Combine(d, c, c);
}

/** Row r of a token's n x n matrix, padded with `pad`. */
HWY_INLINE V8 LoadMatrixRow(const float* matrix, int64_t n, int64_t r, float pad) {
  HWY_ALIGN float row[kSinkhornColumns];
  for (int64_t c = 0; c < kSinkhornColumns; ++c) row[c] = pad;
  std::memcpy(row, matrix + r * n, n * sizeof(float));
  return hn::Load(D8(), row);
}

HWY_INLINE void StoreMatrixRow(V8 v, float* matrix, int64_t n, int64_t r) {
  HWY_ALIGN float row[kSinkhornColumns];
  hn::Store(v, D8(), row);
  std::memcpy(matrix + r * n, row, n * sizeof(float));
}

void ForwardToken(const SinkhornProblem& p, int64_t t) {
  const D8 d;
  const SinkhornLayout& layout = p.layout;
  const int64_t n = layout.n;
  const SinkhornSpot spot = layout.spotOf(t);
  const M8 valid = hn::FirstN(d, static_cast<size_t>(n));
  const V8 eps = hn::IfThenElseZero(valid, hn::Set(d, p.eps));
  const V8 scalarEps = hn::Set(d, p.eps);
  const V8 one = hn::Set(d, 1.0f);
  const bool saving = p.normOut != nullptr;
  V8 rows[kMaxRows];

  for (int64_t r = 0; r < n; ++r) {  // norm_0: the row softmax
    const V8 v = LoadMatrixRow(p.x + t * n * n, n, r, -FLT_MAX);
    const V8 e = hn::IfThenElseZero(valid, FaExpVec(d, hn::Sub(v, TreeMax(v))));
    rows[r] = hn::Div(e, TreeSum(e));
    if (saving) hn::StoreU(rows[r], d, p.normOut + layout.normRow(spot, 0, r));
  }
  if (saving) hn::StoreU(hn::Zero(d), d, p.sumOut + layout.columnSums(spot, 0));

  V8 columns = hn::Zero(d);
  for (int64_t r = 0; r < n; ++r) {
    rows[r] = hn::Add(rows[r], eps);
    columns = r == 0 ? rows[r] : hn::Add(columns, rows[r]);
  }
  for (int64_t k = 1; k < 2 * layout.iters; ++k) {
    if (k % 2 == 1) {  // column step
      columns = hn::Add(columns, eps);
      const V8 divisor = hn::IfThenElse(valid, columns, one);
      for (int64_t r = 0; r < n; ++r) rows[r] = hn::Div(rows[r], divisor);
      if (saving) hn::StoreU(columns, d, p.sumOut + layout.columnSums(spot, k));
    } else {  // row step, summing the columns for the next step on the way
      for (int64_t r = 0; r < n; ++r) {
        const V8 sum = hn::Add(TreeSum(rows[r]), scalarEps);
        rows[r] = hn::Div(rows[r], sum);
        columns = r == 0 ? rows[r] : hn::Add(columns, rows[r]);
        if (saving) p.sumOut[layout.rowSum(spot, k, r)] = hn::GetLane(sum);
      }
      if (saving) {
        for (int64_t r = n; r < kSinkhornColumns; ++r) p.sumOut[layout.rowSum(spot, k, r)] = 0.0f;
      }
    }
    if (saving) {
      for (int64_t r = 0; r < n; ++r) hn::StoreU(rows[r], d, p.normOut + layout.normRow(spot, k, r));
    }
  }
  for (int64_t r = 0; r < n; ++r) StoreMatrixRow(rows[r], p.output + t * n * n, n, r);
}

bool SinkhornForward(const SinkhornProblem& p, int64_t first, int64_t count) {
  for (int64_t t = first; t < first + count; ++t) ForwardToken(p, t);
  return true;
}

/** Row r of step k as saved, its padded columns read as 0. */
HWY_INLINE V8 LoadSavedRow(const SinkhornBackwardProblem& p, const SinkhornSpot& spot, int64_t k, int64_t r, M8 valid) {
  return hn::IfThenElseZero(valid, hn::LoadU(D8(), p.normOut + p.layout.normRow(spot, k, r)));
}

void BackwardToken(const SinkhornBackwardProblem& p, int64_t t) {
  const D8 d;
  const SinkhornLayout& layout = p.layout;
  const int64_t n = layout.n;
  const SinkhornSpot spot = layout.spotOf(t);
  const M8 valid = hn::FirstN(d, static_cast<size_t>(n));
  const V8 one = hn::Set(d, 1.0f);
  V8 g[kMaxRows];
  for (int64_t r = 0; r < n; ++r) g[r] = LoadMatrixRow(p.gradOutput + t * n * n, n, r, 0.0f);

  for (int64_t k = 2 * layout.iters - 1; k >= 1; --k) {
    if (k % 2 == 1) {  // column step
      V8 dot = hn::Zero(d);
      for (int64_t r = 0; r < n; ++r) {
        const V8 product = hn::Mul(g[r], LoadSavedRow(p, spot, k, r, valid));
        dot = r == 0 ? product : hn::Add(dot, product);
      }
      const V8 divisor = hn::IfThenElse(valid, hn::LoadU(d, p.sumOut + layout.columnSums(spot, k)), one);
      for (int64_t r = 0; r < n; ++r) g[r] = hn::Div(hn::Sub(g[r], dot), divisor);
    } else {  // row step
      for (int64_t r = 0; r < n; ++r) {
        const V8 dot = TreeSum(hn::Mul(g[r], LoadSavedRow(p, spot, k, r, valid)));
        const V8 sum = hn::Set(d, p.sumOut[layout.rowSum(spot, k, r)]);
        g[r] = hn::IfThenElseZero(valid, hn::Div(hn::Sub(g[r], dot), sum));
      }
    }
  }
  for (int64_t r = 0; r < n; ++r) {  // the softmax's gradient
    const V8 norm = LoadSavedRow(p, spot, 0, r, valid);
    const V8 dot = TreeSum(hn::Mul(g[r], norm));
    StoreMatrixRow(hn::Mul(hn::Sub(g[r], dot), norm), p.out + t * n * n, n, r);
  }
}

bool SinkhornBackward(const SinkhornBackwardProblem& p, int64_t first, int64_t count) {
  for (int64_t t = first; t < first + count; ++t) BackwardToken(p, t);
  return true;
}

#else  // no SIMD kernel for this target: the caller runs the scalar one

bool SinkhornForward(const SinkhornProblem&, int64_t, int64_t) { return false; }
bool SinkhornBackward(const SinkhornBackwardProblem&, int64_t, int64_t) { return false; }

#endif

}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gradkit::kernels {

HWY_EXPORT(SinkhornForward);
HWY_EXPORT(SinkhornBackward);

namespace {

void forwardSimd(const SinkhornProblem& p, int64_t first, int64_t count) {
  if (!HWY_DYNAMIC_DISPATCH(SinkhornForward)(p, first, count)) kSinkhornScalarKernels.forward(p, first, count);
}

void backwardSimd(const SinkhornBackwardProblem& p, int64_t first, int64_t count) {
  if (!HWY_DYNAMIC_DISPATCH(SinkhornBackward)(p, first, count)) kSinkhornScalarKernels.backward(p, first, count);
}

}  // namespace

const SinkhornKernels kSinkhornSimdKernels{forwardSimd, backwardSimd};

}  // namespace gradkit::kernels
#endif  // HWY_ONCE
