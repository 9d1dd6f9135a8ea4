// The SIMD BlockAttentionResiduals kernels, compiled once per Highway target and dispatched at run time, on x86 from
// AVX2 on (exact FLOAT16 conversion); other targets run the scalar kernels. The same operations in the same order as
// block_residuals_scalar.cpp (block_residuals_kernel.h), on chunks of 16 elements of H: one 16-lane vector (AVX-512)
// or two 8-lane ones (AVX2), so the 16 partial sums over H are the lanes of the accumulators. A vector reaching past
// H loads a zero-padded copy and stores only its valid elements.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/mhc/kernels/block_residuals_hwy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
//
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/hwy_lanes-inl.h"
#include "hwy/highway.h"
#include "ops/mhc/kernels/block_residuals_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2

using DF = hn::CappedTag<float, kBlockResidualsLanes>;
using VF = hn::Vec<DF>;
constexpr size_t kLanes = hn::MaxLanes(DF());
constexpr size_t kHalves = kBlockResidualsLanes / kLanes;  // vectors per 16-element chunk: 1 or 2
constexpr size_t kChunk = kBlockResidualsLanes;

/** kLanes elements at `from` widened to fp32: floats as they are, 16-bit floats exactly (kHalf: FLOAT16). */
template <class T, bool kHalf>
HWY_INLINE VF LoadFull(const T* from) {
  const DF d;
  if constexpr (std::is_same_v<T, float>) {
    return hn::LoadU(d, from);
  } else {
    return WidenBits<kHalf>(d, from);
  }
}

/** Elements [at, at + kLanes) of a row of `dim` elements, those past `dim` read as 0. */
template <class T, bool kHalf>
HWY_INLINE VF LoadPart(const T* row, size_t at, size_t dim) {
  if (HWY_LIKELY(at + kLanes <= dim)) return LoadFull<T, kHalf>(row + at);
  HWY_ALIGN T pad[kLanes] = {};
  if (at < dim) std::memcpy(pad, row + at, (dim - at) * sizeof(T));
  return LoadFull<T, kHalf>(pad);
}

/** v stored as kLanes elements at `to` (16-bit floats rounded once to nearest even). */
template <class T, bool kHalf>
HWY_INLINE void StoreFull(VF v, T* to) {
  const DF d;
  if constexpr (std::is_same_v<T, float>) {
    hn::StoreU(v, d, to);
  } else {
    StoreNarrowBits<kHalf>(d, v, to);
  }
}

/** v stored as elements [at, at + kLanes) of a row of `dim` elements, the lanes past `dim` dropped. */
template <class T, bool kHalf>
HWY_INLINE void StorePart(VF v, T* row, size_t at, size_t dim) {
  if (HWY_LIKELY(at + kLanes <= dim)) return StoreFull<T, kHalf>(v, row + at);
  if (at >= dim) return;
  HWY_ALIGN T pad[kLanes];
  StoreFull<T, kHalf>(v, pad);
  std::memcpy(row + at, pad, (dim - at) * sizeof(T));
}

/** The total of kHalves vectors of partial sums, through mhcPostCombineLanes. */
HWY_INLINE float Combine(const VF* halves) {
  const DF d;
  HWY_ALIGN float partial[kBlockResidualsLanes];
  for (size_t h = 0; h < kHalves; ++h) hn::Store(halves[h], d, partial + h * kLanes);
  return mhcPostCombineLanes(partial);
}

/** The rows of token t's N + 1 values (blocks, then the partial block) in `base` tensors of the dtype. */
template <class T, class Row>
HWY_INLINE void ValueRows(T* blocks, T* partial, int64_t t, int64_t n, size_t dim, Row* rows) {
  for (int64_t i = 0; i < n; ++i) rows[i] = blocks + static_cast<size_t>(t * n + i) * dim;
  rows[n] = partial + static_cast<size_t>(t) * dim;
}

template <class T, bool kHalf>
void ForwardTokens(const BlockResidualsProblem& p, int64_t first, int64_t count) {
  const DF d;
  const size_t dim = static_cast<size_t>(p.hidden), padded = static_cast<size_t>(blockResidualsPaddedHidden(p.hidden));
  const int64_t values = p.blocks + 1;
  const T* rows[kBlockResidualsMaxValues];
  float probs[kBlockResidualsMaxValues], inv[kBlockResidualsMaxValues];
  for (int64_t t = first; t < first + count; ++t) {
    ValueRows(static_cast<const T*>(p.blockRes), static_cast<const T*>(p.partialBlock), t, p.blocks, dim, rows);
    for (int64_t i = 0; i < values; ++i) {
      VF squares[kHalves], dots[kHalves];
      for (size_t h = 0; h < kHalves; ++h) squares[h] = dots[h] = hn::Zero(d);
      for (size_t e = 0; e < padded; e += kChunk) {
        for (size_t h = 0; h < kHalves; ++h) {
          const size_t at = e + h * kLanes;
          const VF x = LoadPart<T, kHalf>(rows[i], at, dim);
          squares[h] = hn::MulAdd(x, x, squares[h]);
          dots[h] = hn::MulAdd(x, hn::LoadU(d, p.weight + at), dots[h]);
        }
      }
      inv[i] = blockResidualsInvNorm(Combine(squares), p.hidden, p.normEps);
      probs[i] = Combine(dots) * inv[i];
    }
    blockResidualsSoftmax(probs, values);
    if (p.invNorm != nullptr) {
      std::memcpy(p.invNorm + t * values, inv, static_cast<size_t>(values) * sizeof(float));
      std::memcpy(p.probs + t * values, probs, static_cast<size_t>(values) * sizeof(float));
    }
    T* out = static_cast<T*>(p.hiddenStates) + static_cast<size_t>(t) * dim;
    for (size_t e = 0; e < padded; e += kChunk) {
      for (size_t h = 0; h < kHalves; ++h) {
        const size_t at = e + h * kLanes;
        VF acc = hn::Mul(hn::Set(d, probs[0]), LoadPart<T, kHalf>(rows[0], at, dim));
        for (int64_t i = 1; i < values; ++i) {
          acc = hn::MulAdd(hn::Set(d, probs[i]), LoadPart<T, kHalf>(rows[i], at, dim), acc);
        }
        StorePart<T, kHalf>(acc, out, at, dim);
      }
    }
  }
}

template <class T, bool kHalf>
void BackwardTokens(const BlockResidualsGradProblem& p, int64_t first, int64_t count, float* weightSum) {
  const DF d;
  const size_t dim = static_cast<size_t>(p.hidden), padded = static_cast<size_t>(blockResidualsPaddedHidden(p.hidden));
  const int64_t values = p.blocks + 1;
  const T* rows[kBlockResidualsMaxValues];
  T* gradRows[kBlockResidualsMaxValues];
  float dg[kBlockResidualsMaxValues], dw[kBlockResidualsMaxValues];
  float a[kBlockResidualsMaxValues], c[kBlockResidualsMaxValues];
  for (int64_t t = first; t < first + count; ++t) {
    ValueRows(static_cast<const T*>(p.blockRes), static_cast<const T*>(p.partialBlock), t, p.blocks, dim, rows);
    ValueRows(static_cast<T*>(p.gradBlockRes), static_cast<T*>(p.gradPartialBlock), t, p.blocks, dim, gradRows);
    const T* g = static_cast<const T*>(p.gradHidden) + static_cast<size_t>(t) * dim;
    const float* probs = p.probs + t * values;
    const float* inv = p.invNorm + t * values;
    for (int64_t i = 0; i < values; ++i) {
      VF byGrad[kHalves], byWeight[kHalves];
      for (size_t h = 0; h < kHalves; ++h) byGrad[h] = byWeight[h] = hn::Zero(d);
      for (size_t e = 0; e < padded; e += kChunk) {
        for (size_t h = 0; h < kHalves; ++h) {
          const size_t at = e + h * kLanes;
          const VF x = LoadPart<T, kHalf>(rows[i], at, dim);
          byGrad[h] = hn::MulAdd(x, LoadPart<T, kHalf>(g, at, dim), byGrad[h]);
          byWeight[h] = hn::MulAdd(x, hn::LoadU(d, p.weight + at), byWeight[h]);
        }
      }
      dg[i] = Combine(byGrad);
      dw[i] = Combine(byWeight);
    }
    blockResidualsGradCoefficients(dg, dw, probs, inv, values, p.hidden, a, c);
    for (size_t e = 0; e < padded; e += kChunk) {
      for (size_t h = 0; h < kHalves; ++h) {
        const size_t at = e + h * kLanes;
        const VF gv = LoadPart<T, kHalf>(g, at, dim), w = hn::LoadU(d, p.weight + at);
        VF s = hn::LoadU(d, weightSum + at);
        for (int64_t i = 0; i < values; ++i) {
          const VF v = LoadPart<T, kHalf>(rows[i], at, dim), ai = hn::Set(d, a[i]);
          const VF grad = hn::MulAdd(hn::Set(d, -c[i]), v, hn::MulAdd(ai, w, hn::Mul(gv, hn::Set(d, probs[i]))));
          StorePart<T, kHalf>(grad, gradRows[i], at, dim);
          s = hn::MulAdd(ai, v, s);
        }
        hn::StoreU(s, d, weightSum + at);
      }
    }
  }
}

bool BlockResidualsForward(const BlockResidualsProblem& p, int64_t first, int64_t count) {
  switch (p.dtype) {
    case ACL_FLOAT:
      ForwardTokens<float, false>(p, first, count);
      return true;
    case ACL_FLOAT16:
      ForwardTokens<uint16_t, true>(p, first, count);
      return true;
    case ACL_BF16:
      ForwardTokens<uint16_t, false>(p, first, count);
      return true;
    default:
      return false;
  }
}

bool BlockResidualsBackward(const BlockResidualsGradProblem& p, int64_t first, int64_t count, float* weightSum) {
  switch (p.dtype) {
    case ACL_FLOAT:
      BackwardTokens<float, false>(p, first, count, weightSum);
      return true;
    case ACL_FLOAT16:
      BackwardTokens<uint16_t, true>(p, first, count, weightSum);
      return true;
    case ACL_BF16:
      BackwardTokens<uint16_t, false>(p, first, count, weightSum);
      return true;
    default:
      return false;
  }
}

#else  // no SIMD kernel for this target: the caller runs the scalar one

bool BlockResidualsForward(const BlockResidualsProblem&, int64_t, int64_t) { return false; }
bool BlockResidualsBackward(const BlockResidualsGradProblem&, int64_t, int64_t, float*) { return false; }

#endif

}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gradkit::kernels {

HWY_EXPORT(BlockResidualsForward);
HWY_EXPORT(BlockResidualsBackward);

namespace {

void forwardSimd(const BlockResidualsProblem& p, int64_t first, int64_t count) {
  if (!HWY_DYNAMIC_DISPATCH(BlockResidualsForward)(p, first, count)) {
    kBlockResidualsScalarKernels.forward(p, first, count);
  }
}

void backwardSimd(const BlockResidualsGradProblem& p, int64_t first, int64_t count, float* weightSum) {
  if (!HWY_DYNAMIC_DISPATCH(BlockResidualsBackward)(p, first, count, weightSum)) {
    kBlockResidualsScalarKernels.backward(p, first, count, weightSum);
  }
}

}  // namespace

const BlockResidualsKernels kBlockResidualsSimdKernels{forwardSimd, backwardSimd};

}  // namespace gradkit::kernels
#endif  // HWY_ONCE
