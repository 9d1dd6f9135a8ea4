// The SIMD MhcSinkhorn and MhcSinkhornBackward kernels, compiled once per Highway target and dispatched at run time,
// on x86 from AVX2 on; other targets run the scalar kernels. One 8-lane vector holds one padded row (the saved
// layout's 32-byte row), so the column steps are lane-wise; the row sums of all n rows come out of one horizontal-add
// tree as one vector (lane r: row r), so each step divides once. The same operations in the same order as
// mhc_sinkhorn_scalar.cpp (mhc_sinkhorn_kernel.h).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/mhc/kernels/mhc_sinkhorn_hwy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
//
#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <cstring>

#include "hwy/cache_control.h"
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

/** The row maximum of mhc_sinkhorn_kernel.h's tree, max(max(v0, v4), max(v2, v6)) ..., in every lane. */
HWY_INLINE V8 TreeMax(V8 v) {
  const D8 d;
  const hn::Half<D8> dh;
  const auto a = hn::Max(hn::LowerHalf(dh, v), hn::UpperHalf(dh, v));
  const auto b = hn::Max(a, hn::Shuffle1032(a));
  const auto c = hn::Max(b, hn::Shuffle2301(b));
  return hn::Combine(d, c, c);
}

/**
 * Lane r: ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7)) of row r (rows from n on: 0), mhc_sinkhorn_kernel.h's
 * row sum: VHADDPS adds neighbours, so two rounds of it and one add of the 128-bit halves give that tree for 8 rows.
 */
template <int64_t n>
HWY_INLINE V8 RowSums(const V8* rows) {
  const __m256 zero = _mm256_setzero_ps();
  const auto row = [&](int64_t r) { return r < n ? rows[r].raw : zero; };
  const __m256 low4 = _mm256_hadd_ps(_mm256_hadd_ps(row(0), row(1)), _mm256_hadd_ps(row(2), row(3)));
  const __m256 high4 = n > 4 ? _mm256_hadd_ps(_mm256_hadd_ps(row(4), row(5)), _mm256_hadd_ps(row(6), row(7))) : zero;
  // low4 holds rows 0..3 as [columns 0-3 sums | columns 4-7 sums], high4 rows 4..7 alike.
  const __m256 firstHalves = _mm256_permute2f128_ps(low4, high4, 0x20);
  const __m256 secondHalves = _mm256_permute2f128_ps(low4, high4, 0x31);
  return V8{_mm256_add_ps(firstHalves, secondHalves)};
}

/** Lane r of v in every lane. */
HWY_INLINE V8 LaneOf(V8 v, int64_t r) {
  return V8{_mm256_permutevar8x32_ps(v.raw, _mm256_set1_epi32(static_cast<int>(r)))};
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

/** Tokens worked on together: consecutive slots of one tile, whose rows of one step are adjacent in normOut. */
constexpr int64_t kChunk = 64;

/** The spot of the token `offset` slots after `first` (same tile). */
HWY_INLINE SinkhornSpot SlotAfter(SinkhornSpot first, int64_t offset) {
  first.slot += offset;
  return first;
}

/** The chunk's row sums of step k (rows n .. 7: zeros), each row's slots adjacent in sumOut. */
template <int64_t n>
HWY_INLINE void SaveRowSums(const SinkhornProblem& p, const SinkhornSpot& spot0, int64_t k,
                            const float (&rowSumsOfChunk)[n][kChunk], int64_t count) {
  for (int64_t r = 0; r < kSinkhornColumns; ++r) {
    float* to = p.sumOut + p.layout.rowSum(spot0, k, r);
    if (r < n) {
      std::memcpy(to, rowSumsOfChunk[r], count * sizeof(float));
    } else {
      std::memset(to, 0, count * sizeof(float));
    }
  }
}

/**
 * `count` tokens from t0, one tile's consecutive slots, step by step: every step reads or writes each row's block
 * of the chunk in one sequential sweep (a token at a time would jump 2 iters n blocks apart, faster than any
 * prefetcher follows), and the tokens' independent chains overlap in the core. The chunk's rows wait in `rows`.
 */
template <int64_t n>
void ForwardChunk(const SinkhornProblem& p, int64_t t0, int64_t count) {
  const D8 d;
  const SinkhornLayout& layout = p.layout;
  const SinkhornSpot spot0 = layout.spotOf(t0);
  const M8 valid = hn::FirstN(d, static_cast<size_t>(n));
  const V8 eps = hn::IfThenElseZero(valid, hn::Set(d, p.eps));
  const V8 scalarEps = hn::Set(d, p.eps);
  const V8 one = hn::Set(d, 1.0f);
  const bool saving = p.normOut != nullptr;
  // Saved rows bypass the cache when the buffers allow it (32-byte aligned): they are read back only by the
  // backward, long after, and a cached write would first read each line in.
  const bool stream = saving && p.streamSaved && reinterpret_cast<uintptr_t>(p.normOut) % 32 == 0 &&
                      reinterpret_cast<uintptr_t>(p.sumOut) % 32 == 0;
  const auto saveRow = [&](V8 v, float* to) {
    if (stream) {
      hn::Stream(v, d, to);
    } else {
      hn::StoreU(v, d, to);
    }
  };
  HWY_ALIGN float rows[kChunk][n][kSinkhornColumns];
  HWY_ALIGN float rowSumsOfChunk[n][kChunk];
  HWY_ALIGN float columns[kChunk][kSinkhornColumns];
  HWY_ALIGN float rowSums[kSinkhornColumns];
  for (int64_t s = 0; s < count; ++s) {  // norm_0: the row softmax
    const SinkhornSpot spot = SlotAfter(spot0, s);
    V8 v[n];
    for (int64_t r = 0; r < n; ++r) {
      const V8 x = LoadMatrixRow(p.x + (t0 + s) * n * n, n, r, -FLT_MAX);
      // exp(0) in the padded columns, zeroed after: exp(-FLT_MAX - m) would make subnormal products, which cost
      // a microcode assist each on many cores (10x this kernel's time on Zen 4).
      v[r] = hn::IfThenElseZero(valid, FaExpVec(d, hn::IfThenElseZero(valid, hn::Sub(x, TreeMax(x)))));
    }
    const V8 sums = RowSums<n>(v);
    V8 column = hn::Zero(d);
    for (int64_t r = 0; r < n; ++r) {
      v[r] = hn::Div(v[r], LaneOf(sums, r));
      if (saving) saveRow(v[r], p.normOut + layout.normRow(spot, 0, r));
      v[r] = hn::Add(v[r], eps);
      column = r == 0 ? v[r] : hn::Add(column, v[r]);
      hn::Store(v[r], d, rows[s][r]);
    }
    hn::Store(column, d, columns[s]);
    if (saving && p.saveSoftmaxSums) {
      hn::Store(sums, d, rowSums);
      for (int64_t r = 0; r < n; ++r) rowSumsOfChunk[r][s] = rowSums[r];
    } else if (saving) {
      saveRow(hn::Zero(d), p.sumOut + layout.columnSums(spot, 0));
    }
  }
  if (saving && p.saveSoftmaxSums) SaveRowSums(p, spot0, 0, rowSumsOfChunk, count);
  for (int64_t k = 1; k < 2 * layout.iters; ++k) {
    for (int64_t s = 0; s < count; ++s) {
      const SinkhornSpot spot = SlotAfter(spot0, s);
      V8 v[n];
      for (int64_t r = 0; r < n; ++r) v[r] = hn::Load(d, rows[s][r]);
      if (k % 2 == 1) {  // column step
        const V8 column = hn::Add(hn::Load(d, columns[s]), eps);
        const V8 scale = hn::Div(one, hn::IfThenElse(valid, column, one));
        for (int64_t r = 0; r < n; ++r) v[r] = hn::Mul(v[r], scale);
        if (saving) saveRow(column, p.sumOut + layout.columnSums(spot, k));
      } else {  // row step, summing the columns for the next step on the way
        const V8 sums = hn::Add(RowSums<n>(v), scalarEps);
        const V8 scales = hn::Div(one, sums);
        V8 column = hn::Zero(d);
        for (int64_t r = 0; r < n; ++r) {
          v[r] = hn::Mul(v[r], LaneOf(scales, r));
          column = r == 0 ? v[r] : hn::Add(column, v[r]);
        }
        hn::Store(column, d, columns[s]);
        if (saving) {
          hn::Store(sums, d, rowSums);
          for (int64_t r = 0; r < n; ++r) rowSumsOfChunk[r][s] = rowSums[r];
        }
      }
      for (int64_t r = 0; r < n; ++r) {
        hn::Store(v[r], d, rows[s][r]);
        if (saving) saveRow(v[r], p.normOut + layout.normRow(spot, k, r));
      }
    }
    if (saving && k % 2 == 0) SaveRowSums(p, spot0, k, rowSumsOfChunk, count);
  }
  if (stream) hwy::FlushStream();
  for (int64_t s = 0; s < count; ++s) {
    for (int64_t r = 0; r < n; ++r) StoreMatrixRow(hn::Load(d, rows[s][r]), p.output + (t0 + s) * n * n, n, r);
  }
}

/** Calls chunk(t, count) over [first, first + count) cut at tile ends and every kChunk tokens. */
template <class Chunk>
HWY_INLINE void ForEachChunk(const SinkhornLayout& layout, int64_t first, int64_t count, const Chunk& chunk) {
  for (int64_t t = first; t < first + count;) {
    const SinkhornSpot spot = layout.spotOf(t);
    const int64_t length = std::min({first + count - t, spot.tileSize - spot.slot, kChunk});
    chunk(t, length);
    t += length;
  }
}

bool SinkhornForward(const SinkhornProblem& p, int64_t first, int64_t count) {
  const int64_t n = p.layout.n;
  if (n != 4 && n != 6 && n != 8) return false;
  ForEachChunk(p.layout, first, count, [&](int64_t t, int64_t length) {
    if (n == 4) ForwardChunk<4>(p, t, length);
    if (n == 6) ForwardChunk<6>(p, t, length);
    if (n == 8) ForwardChunk<8>(p, t, length);
  });
  return true;
}

/**
 * The 8 floats at `from`, lanes outside `valid` replaced by the same lanes of `pad`. A whole-row load and bit
 * operations, not a masked load: the compiler turns IfThenElse(valid, LoadU(..), ..) into a masked VMOVUPS or
 * VBLENDMPS from memory, and those made this backward 2.5x slower on Zen 5 (2.3-2.7 -> 0.9-1.1 ms at T 4096, n 4).
 */
HWY_INLINE V8 LoadPadded(const float* from, M8 valid, V8 pad) {
  const D8 d;
  const V8 keep = hn::VecFromMask(d, valid);
  return hn::Or(hn::And(hn::LoadU(d, from), keep), hn::AndNot(keep, pad));
}

/** Row r of step k as saved, its padded columns read as 0. */
HWY_INLINE V8 LoadSavedRow(const SinkhornBackwardProblem& p, const SinkhornSpot& spot, int64_t k, int64_t r, M8 valid) {
  return LoadPadded(p.normOut + p.layout.normRow(spot, k, r), valid, hn::Zero(D8()));
}

/** `count` tokens from t0 step by step, as ForwardChunk; the gradients wait in `grads`. */
template <int64_t n>
void BackwardChunk(const SinkhornBackwardProblem& p, int64_t t0, int64_t count) {
  const D8 d;
  const SinkhornLayout& layout = p.layout;
  const SinkhornSpot spot0 = layout.spotOf(t0);
  const M8 valid = hn::FirstN(d, static_cast<size_t>(n));
  const V8 one = hn::Set(d, 1.0f);
  HWY_ALIGN float grads[kChunk][n][kSinkhornColumns];
  HWY_ALIGN float rowSums[kSinkhornColumns];
  for (int64_t s = 0; s < count; ++s) {
    for (int64_t r = 0; r < n; ++r) {
      hn::Store(LoadMatrixRow(p.gradOutput + (t0 + s) * n * n, n, r, 0.0f), d, grads[s][r]);
    }
  }
  for (int64_t k = 2 * layout.iters - 1; k >= 0; --k) {
    for (int64_t s = 0; s < count; ++s) {
      const SinkhornSpot spot = SlotAfter(spot0, s);
      V8 g[n], norm[n];
      for (int64_t r = 0; r < n; ++r) {
        g[r] = hn::Load(d, grads[s][r]);
        norm[r] = LoadSavedRow(p, spot, k, r, valid);
      }
      if (k % 2 == 1) {  // column step
        V8 dot = hn::Zero(d);
        for (int64_t r = 0; r < n; ++r) dot = r == 0 ? hn::Mul(g[r], norm[r]) : hn::Add(dot, hn::Mul(g[r], norm[r]));
        const V8 sums = LoadPadded(p.sumOut + layout.columnSums(spot, k), valid, one);
        for (int64_t r = 0; r < n; ++r) hn::Store(hn::Div(hn::Sub(g[r], dot), sums), d, grads[s][r]);
        continue;
      }
      V8 products[n];
      for (int64_t r = 0; r < n; ++r) products[r] = hn::Mul(g[r], norm[r]);
      const V8 dots = RowSums<n>(products);
      if (k == 0) {  // the softmax's gradient
        for (int64_t r = 0; r < n; ++r) {
          StoreMatrixRow(hn::Mul(hn::Sub(g[r], LaneOf(dots, r)), norm[r]), p.out + (t0 + s) * n * n, n, r);
        }
        continue;
      }
      for (int64_t r = 0; r < kSinkhornColumns; ++r) rowSums[r] = r < n ? p.sumOut[layout.rowSum(spot, k, r)] : 1.0f;
      const V8 sums = hn::Load(d, rowSums);
      for (int64_t r = 0; r < n; ++r) {
        const V8 next = hn::IfThenElseZero(valid, hn::Div(hn::Sub(g[r], LaneOf(dots, r)), LaneOf(sums, r)));
        hn::Store(next, d, grads[s][r]);
      }
    }
  }
}

bool SinkhornBackward(const SinkhornBackwardProblem& p, int64_t first, int64_t count) {
  const int64_t n = p.layout.n;
  if (n != 4 && n != 6 && n != 8) return false;
  ForEachChunk(p.layout, first, count, [&](int64_t t, int64_t length) {
    if (n == 4) BackwardChunk<4>(p, t, length);
    if (n == 6) BackwardChunk<6>(p, t, length);
    if (n == 8) BackwardChunk<8>(p, t, length);
  });
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
