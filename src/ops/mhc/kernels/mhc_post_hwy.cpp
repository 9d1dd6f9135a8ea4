// The SIMD MhcPost and MhcPostBackward kernels, compiled once per Highway target and dispatched at run time, on x86
// from AVX2 on (exact FLOAT16 conversion); other targets run the scalar kernels. The same operations in the same
// order as mhc_post_scalar.cpp (mhc_post_kernel.h), on chunks of 16 elements of D: one 16-lane vector (AVX-512) or
// two 8-lane ones (AVX2) per stream, so the 16 partial sums over D are the lanes of the accumulators. A chunk past D
// runs on zero-padded copies and stores only its valid elements.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/mhc/kernels/mhc_post_hwy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
//
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/hwy_lanes-inl.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "ops/mhc/kernels/mhc_post_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2

using DF = hn::CappedTag<float, kMhcPostSumLanes>;
using VF = hn::Vec<DF>;
constexpr size_t kLanes = hn::MaxLanes(DF());
constexpr size_t kHalves = kMhcPostSumLanes / kLanes;  // vectors per 16-element chunk: 1 or 2
constexpr size_t kChunk = kMhcPostSumLanes;
constexpr size_t kMaxStreams = 8;

/**
 * v rounded to 16-bit floats and stored at `to` (non-temporally with kStream). With `convert` (the plan saw
 * AVX512_BF16) a BF16 vector of 16 lanes without fp32 denormals takes VCVTNEPS2BF16, which rounds to nearest even
 * and quiets NaNs as NarrowBits does but flushes denormals (hence the check): inline assembly, as Highway 1.0.3 has
 * no target that enables the instruction.
 */
template <bool kHalf, bool kStream>
HWY_INLINE void StoreRounded(VF v, uint16_t* to, bool convert) {
  const DF d;
#if HWY_TARGET <= HWY_AVX3
  if constexpr (!kHalf && kLanes == 16) {
    if (convert && _mm512_fpclass_ps_mask(v.raw, 0x20) == 0) {  // 0x20: denormal
      __m256i bits;
      asm("vcvtneps2bf16 %1, %0" : "=v"(bits) : "v"(v.raw));
      if constexpr (kStream) {
        _mm256_stream_si256(reinterpret_cast<__m256i*>(to), bits);
      } else {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(to), bits);
      }
      return;
    }
  }
#endif
  (void)convert;
  StoreNarrowBits<kHalf, kStream>(d, v, to);
}

/** Rows of one token for one chunk: in place (stride = D) or zero-padded copies (stride = kChunk) for the tail. */
struct ChunkRows {
  const uint16_t* base;
  size_t stride;
  const uint16_t* row(size_t i) const { return base + i * stride; }
};

/** Copies `rows` rows of `rest` elements (`stride` apart) into a zero-padded [rows][kChunk] buffer. */
inline ChunkRows padRows(const uint16_t* from, size_t stride, size_t rows, size_t rest, uint16_t* buffer) {
  std::memset(buffer, 0, rows * kChunk * sizeof(uint16_t));
  for (size_t i = 0; i < rows; ++i) std::memcpy(buffer + i * kChunk, from + i * stride, rest * sizeof(uint16_t));
  return {buffer, kChunk};
}

/** Stores `rows` rows of a kChunk-wide result buffer, `rest` elements each, into rows `stride` apart. */
inline void unpadRows(const uint16_t* buffer, size_t rows, size_t rest, uint16_t* to, size_t stride) {
  for (size_t i = 0; i < rows; ++i) std::memcpy(to + i * stride, buffer + i * kChunk, rest * sizeof(uint16_t));
}

/** out rows of one chunk: acc = hOut * hPost[j], then fma over i (or + x[j] without hRes); narrowed once. */
template <bool kHalf, bool kStream, size_t kN>
HWY_INLINE void ForwardChunk(ChunkRows x, const uint16_t* hOut, const float* hRes, const float* hPost, uint16_t* out,
                             size_t outStride, bool convert) {
  const DF d;
  for (size_t h = 0; h < kHalves; ++h) {
    const size_t at = h * kLanes;
    VF xs[kN];
    for (size_t i = 0; i < kN; ++i) xs[i] = WidenBits<kHalf>(d, x.row(i) + at);
    const VF ho = WidenBits<kHalf>(d, hOut + at);
    for (size_t j = 0; j < kN; ++j) {
      VF acc = hn::Mul(ho, hn::Set(d, hPost[j]));
      if (hRes == nullptr) {
        acc = hn::Add(xs[j], acc);
      } else {
        for (size_t i = 0; i < kN; ++i) acc = hn::MulAdd(xs[i], hn::Set(d, hRes[i * kN + j]), acc);
      }
      StoreRounded<kHalf, kStream>(acc, out + j * outStride + at, convert);
    }
  }
}

/** Whether 16-bit rows of `dim` elements from `base` may take aligned non-temporal vector stores. */
inline bool Streamable(bool wanted, const uint16_t* base, size_t dim) {
  return wanted && reinterpret_cast<uintptr_t>(base) % 64 == 0 && dim % kChunk == 0;
}

template <bool kHalf, size_t kN>
void ForwardTokens(const MhcPostProblem& p, int64_t first, int64_t count) {
  const size_t dim = static_cast<size_t>(p.hidden);
  const size_t body = dim / kChunk * kChunk, rest = dim - body;
  const bool stream = Streamable(p.streamOut, p.out, dim);
  for (int64_t t = first; t < first + count; ++t) {
    const uint16_t* x = p.x + t * kN * dim;
    const uint16_t* hOut = p.hOut + t * dim;
    const float* hRes = p.hRes != nullptr ? p.hRes + t * kN * kN : nullptr;
    const float* hPost = p.hPost + t * kN;
    uint16_t* out = p.out + t * kN * dim;
    for (size_t e = 0; e < body; e += kChunk) {
      if (stream) {
        ForwardChunk<kHalf, true, kN>({x + e, dim}, hOut + e, hRes, hPost, out + e, dim, p.bf16Convert);
      } else {
        ForwardChunk<kHalf, false, kN>({x + e, dim}, hOut + e, hRes, hPost, out + e, dim, p.bf16Convert);
      }
    }
    if (rest != 0) {
      HWY_ALIGN uint16_t xPad[kMaxStreams * kChunk], hOutPad[kChunk] = {}, outPad[kMaxStreams * kChunk];
      const ChunkRows xRows = padRows(x + body, dim, kN, rest, xPad);
      std::memcpy(hOutPad, hOut + body, rest * sizeof(uint16_t));
      ForwardChunk<kHalf, false, kN>(xRows, hOutPad, hRes, hPost, outPad, kChunk, p.bf16Convert);
      unpadRows(outPad, kN, rest, out + body, dim);
    }
  }
  if (stream) hwy::FlushStream();
}

/** The running partial sums of one token's backward: gradHRes[i][j] and gradHPost[j], kHalves vectors each. */
template <size_t kN>
struct BackwardSums {
  VF res[kN][kN][kHalves];
  VF post[kN][kHalves];
};

/** One chunk of one token's backward: gradX and gradHOut stored, the sums over D advanced. */
template <bool kHalf, bool kStream, size_t kN>
HWY_INLINE void BackwardChunk(ChunkRows g, ChunkRows x, const uint16_t* hOut, const float* hRes, const float* hPost,
                              uint16_t* gradX, uint16_t* gradHOut, size_t outStride, BackwardSums<kN>& sums,
                              bool convert) {
  const DF d;
  for (size_t h = 0; h < kHalves; ++h) {
    const size_t at = h * kLanes;
    VF gs[kN];
    for (size_t j = 0; j < kN; ++j) gs[j] = WidenBits<kHalf>(d, g.row(j) + at);
    const VF ho = WidenBits<kHalf>(d, hOut + at);
    for (size_t i = 0; i < kN; ++i) {
      if (hRes == nullptr) {
        const hn::Rebind<uint16_t, DF> d16;
        if constexpr (kStream) {
          hn::Stream(hn::LoadU(d16, g.row(i) + at), d16, gradX + i * outStride + at);
        } else {
          hn::StoreU(hn::LoadU(d16, g.row(i) + at), d16, gradX + i * outStride + at);
        }
        continue;
      }
      VF acc = hn::Mul(gs[0], hn::Set(d, hRes[i * kN]));
      for (size_t j = 1; j < kN; ++j) acc = hn::MulAdd(gs[j], hn::Set(d, hRes[i * kN + j]), acc);
      StoreRounded<kHalf, kStream>(acc, gradX + i * outStride + at, convert);
    }
    VF acc = hn::Mul(gs[0], hn::Set(d, hPost[0]));
    for (size_t j = 1; j < kN; ++j) acc = hn::MulAdd(gs[j], hn::Set(d, hPost[j]), acc);
    StoreRounded<kHalf, kStream>(acc, gradHOut + at, convert);
    for (size_t j = 0; j < kN; ++j) sums.post[j][h] = hn::MulAdd(gs[j], ho, sums.post[j][h]);
    for (size_t i = 0; i < kN; ++i) {
      const VF xi = WidenBits<kHalf>(d, x.row(i) + at);
      for (size_t j = 0; j < kN; ++j) sums.res[i][j][h] = hn::MulAdd(xi, gs[j], sums.res[i][j][h]);
    }
  }
}

/** The total of kHalves vectors of partial sums, through mhcPostCombineLanes. */
HWY_INLINE float Combine(const VF* halves) {
  const DF d;
  HWY_ALIGN float partial[kMhcPostSumLanes];
  for (size_t h = 0; h < kHalves; ++h) hn::Store(halves[h], d, partial + h * kLanes);
  return mhcPostCombineLanes(partial);
}

template <bool kHalf, size_t kN>
void BackwardTokens(const MhcPostBackwardProblem& p, int64_t first, int64_t count) {
  const DF d;
  const size_t dim = static_cast<size_t>(p.hidden);
  const size_t body = dim / kChunk * kChunk, rest = dim - body;
  const bool stream = Streamable(p.streamGrads, p.gradX, dim) && Streamable(true, p.gradHOut, dim);
  for (int64_t t = first; t < first + count; ++t) {
    const uint16_t* g = p.gradOutput + t * kN * dim;
    const uint16_t* x = p.x + t * kN * dim;
    const uint16_t* hOut = p.hOut + t * dim;
    const float* hRes = p.hRes != nullptr ? p.hRes + t * kN * kN : nullptr;
    const float* hPost = p.hPost + t * kN;
    uint16_t* gradX = p.gradX + t * kN * dim;
    uint16_t* gradHOut = p.gradHOut + t * dim;
    BackwardSums<kN> sums;
    for (size_t i = 0; i < kN; ++i) {
      for (size_t h = 0; h < kHalves; ++h) {
        sums.post[i][h] = hn::Zero(d);
        for (size_t j = 0; j < kN; ++j) sums.res[i][j][h] = hn::Zero(d);
      }
    }
    for (size_t e = 0; e < body; e += kChunk) {
      if (stream) {
        BackwardChunk<kHalf, true, kN>({g + e, dim}, {x + e, dim}, hOut + e, hRes, hPost, gradX + e, gradHOut + e, dim,
                                       sums, p.bf16Convert);
      } else {
        BackwardChunk<kHalf, false, kN>({g + e, dim}, {x + e, dim}, hOut + e, hRes, hPost, gradX + e, gradHOut + e, dim,
                                        sums, p.bf16Convert);
      }
    }
    if (rest != 0) {
      HWY_ALIGN uint16_t gPad[kMaxStreams * kChunk], xPad[kMaxStreams * kChunk], hOutPad[kChunk] = {};
      HWY_ALIGN uint16_t gradXPad[kMaxStreams * kChunk], gradHOutPad[kChunk];
      const ChunkRows gRows = padRows(g + body, dim, kN, rest, gPad);
      const ChunkRows xRows = padRows(x + body, dim, kN, rest, xPad);
      std::memcpy(hOutPad, hOut + body, rest * sizeof(uint16_t));
      BackwardChunk<kHalf, false, kN>(gRows, xRows, hOutPad, hRes, hPost, gradXPad, gradHOutPad, kChunk, sums,
                                      p.bf16Convert);
      unpadRows(gradXPad, kN, rest, gradX + body, dim);
      unpadRows(gradHOutPad, 1, rest, gradHOut + body, dim);
    }
    for (size_t i = 0; i < kN; ++i) {
      for (size_t j = 0; j < kN; ++j) p.gradHRes[(t * kN + i) * kN + j] = Combine(sums.res[i][j]);
      p.gradHPost[t * kN + i] = Combine(sums.post[i]);
    }
  }
  if (stream) hwy::FlushStream();
}

/** The instantiation for the problem's dtype and N (the check allows N in {4, 6, 8}). */
template <class Problem, class Run4h, class Run4b, class Run6h, class Run6b, class Run8h, class Run8b>
HWY_INLINE bool DispatchStreams(const Problem& p, int64_t first, int64_t count, Run4h r4h, Run4b r4b, Run6h r6h,
                                Run6b r6b, Run8h r8h, Run8b r8b) {
  const bool half = p.dtype == ACL_FLOAT16;
  switch (p.streams) {
    case 4:
      half ? r4h(p, first, count) : r4b(p, first, count);
      return true;
    case 6:
      half ? r6h(p, first, count) : r6b(p, first, count);
      return true;
    case 8:
      half ? r8h(p, first, count) : r8b(p, first, count);
      return true;
    default:
      return false;
  }
}

bool MhcPostForward(const MhcPostProblem& p, int64_t first, int64_t count) {
  return DispatchStreams(p, first, count, ForwardTokens<true, 4>, ForwardTokens<false, 4>, ForwardTokens<true, 6>,
                         ForwardTokens<false, 6>, ForwardTokens<true, 8>, ForwardTokens<false, 8>);
}

bool MhcPostBackward(const MhcPostBackwardProblem& p, int64_t first, int64_t count) {
  return DispatchStreams(p, first, count, BackwardTokens<true, 4>, BackwardTokens<false, 4>, BackwardTokens<true, 6>,
                         BackwardTokens<false, 6>, BackwardTokens<true, 8>, BackwardTokens<false, 8>);
}

#else  // no SIMD kernel for this target: the caller runs the scalar one

bool MhcPostForward(const MhcPostProblem&, int64_t, int64_t) { return false; }
bool MhcPostBackward(const MhcPostBackwardProblem&, int64_t, int64_t) { return false; }

#endif

}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gradkit::kernels {

HWY_EXPORT(MhcPostForward);
HWY_EXPORT(MhcPostBackward);

namespace {

void forwardSimd(const MhcPostProblem& p, int64_t first, int64_t count) {
  if (!HWY_DYNAMIC_DISPATCH(MhcPostForward)(p, first, count)) kMhcPostScalarKernels.forward(p, first, count);
}

void backwardSimd(const MhcPostBackwardProblem& p, int64_t first, int64_t count) {
  if (!HWY_DYNAMIC_DISPATCH(MhcPostBackward)(p, first, count)) kMhcPostScalarKernels.backward(p, first, count);
}

}  // namespace

const MhcPostKernels kMhcPostSimdKernels{forwardSimd, backwardSimd};

}  // namespace gradkit::kernels
#endif  // HWY_ONCE
