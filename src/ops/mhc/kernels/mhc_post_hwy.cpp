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
constexpr size_t kPrefetchAhead = 2048;  // elements of each input row the streamed backward prefetches ahead

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

using D16 = hn::Rebind<uint16_t, DF>;
using V16 = hn::Vec<D16>;

/** Output row k of one vector of a chunk in fp32: gradX row k < kN (a sum over j of g[j] * hRes[k][j]), gradHOut. */
template <size_t kN>
HWY_INLINE VF OutputRow(const VF* gs, const float* hRes, const float* hPost, size_t k) {
  const DF d;
  const float* w = k < kN ? hRes + k * kN : hPost;
  VF acc = hn::Mul(gs[0], hn::Set(d, w[0]));
  for (size_t j = 1; j < kN; ++j) acc = hn::MulAdd(gs[j], hn::Set(d, w[j]), acc);
  return acc;
}

/**
 * One chunk of one token's backward: each output vector handed to the sink as soon as it is computed,
 * sink.Row(h, k, fp32) for gradX row k < kN and gradHOut (k = kN), sink.Copy(h, i, bits) for gradX row i without hRes
 * (g's bits), and the sums over D (res: gradHRes[i][j], post: gradHPost[j], kHalves vectors each) advanced. The
 * caller keeps res and post in local arrays whose address never escapes, and no output outlives its sink call, so
 * at N = 4 on AVX-512 the 20 accumulators stay in registers.
 */
template <bool kHalf, bool kPlain, size_t kN, class Sink>
HWY_INLINE void BackwardChunk(ChunkRows g, ChunkRows x, const uint16_t* hOut, const float* hRes, const float* hPost,
                              VF* res, VF* post, const Sink& sink) {
  const DF d;
  const D16 d16;
  for (size_t h = 0; h < kHalves; ++h) {
    const size_t at = h * kLanes;
    VF gs[kN];
    for (size_t j = 0; j < kN; ++j) gs[j] = WidenBits<kHalf>(d, g.row(j) + at);
    if constexpr (kPlain) {  // no hRes: gradX = g, bit for bit
      for (size_t i = 0; i < kN; ++i) sink.Copy(h, i, hn::LoadU(d16, g.row(i) + at));
    } else {
      for (size_t i = 0; i < kN; ++i) sink.Row(h, i, OutputRow<kN>(gs, hRes, hPost, i));
    }
    sink.Row(h, kN, OutputRow<kN>(gs, hRes, hPost, kN));
    const VF ho = WidenBits<kHalf>(d, hOut + at);
    for (size_t j = 0; j < kN; ++j) post[j * kHalves + h] = hn::MulAdd(gs[j], ho, post[j * kHalves + h]);
    for (size_t i = 0; i < kN; ++i) {
      const VF xi = WidenBits<kHalf>(d, x.row(i) + at);
      for (size_t j = 0; j < kN; ++j) {
        VF& sum = res[(i * kN + j) * kHalves + h];
        sum = hn::MulAdd(xi, gs[j], sum);
      }
    }
  }
}

/** A sink storing each output vector rounded (StoreRounded): gradX rows `stride` apart, then gradHOut. */
template <bool kHalf, bool kStream, bool kConvert, size_t kN>
struct StoreSink {
  uint16_t* gradX;
  uint16_t* gradHOut;
  size_t stride;
  HWY_INLINE uint16_t* To(size_t h, size_t k) const { return (k < kN ? gradX + k * stride : gradHOut) + h * kLanes; }
  HWY_INLINE void Row(size_t h, size_t k, VF v) const { StoreRounded<kHalf, kStream>(v, To(h, k), kConvert); }
  HWY_INLINE void Copy(size_t h, size_t i, V16 bits) const {
    const D16 d16;
    if constexpr (kStream) {
      hn::Stream(bits, d16, To(h, i));
    } else {
      hn::StoreU(bits, d16, To(h, i));
    }
  }
};

#if HWY_TARGET <= HWY_AVX3
/*
 * Whole 64-byte output lines on AVX-512 (16 lanes, kHalves = 1): the first chunk of a pair leaves its outputs in an
 * L1 buffer (FirstOfPair), the second rounds both into one line and writes it with one non-temporal store
 * (SecondOfPair). Half lines left the write-combining buffers to merge 2 * (N + 1) halves interleaved with the
 * arithmetic, which measured slower on Zen 4 than ordinary stores; and with AVX512_BF16 one VCVTNE2PS2BF16 rounds
 * the two vectors of a line (RNE, NaN quieted, as NarrowBits), where two VCVTNEPS2BF16 and an insert did.
 */
struct PairBuffer {
  HWY_ALIGN float rows[kMaxStreams + 1][kChunk];
  HWY_ALIGN uint16_t copies[kMaxStreams][kChunk];
};

struct FirstOfPair {
  PairBuffer* buffer;
  HWY_INLINE void Row(size_t, size_t k, VF v) const { hn::Store(v, DF(), buffer->rows[k]); }
  HWY_INLINE void Copy(size_t, size_t i, V16 bits) const { hn::Store(bits, D16(), buffer->copies[i]); }
};

/** The 64-byte line of `low` then `high` rounded to 16-bit floats (NarrowBits on each). */
template <bool kHalf>
HWY_INLINE __m512i NarrowLine(VF low, VF high) {
  const DF d;
  return _mm512_inserti64x4(_mm512_castsi256_si512(NarrowBits<kHalf>(d, low).raw), NarrowBits<kHalf>(d, high).raw, 1);
}

/**
 * Element `at` (< 2 * dim) of every input row of a token into L2 (PREFETCHT1), past the row's end the next token's.
 * With the hardware prefetchers alone the streamed backward ran 12-25% slower on Zen 4 (huge-page tensors): its
 * arithmetic leaves few of the 2 * N + 1 read streams' misses in flight. 4 KiB ahead measured best (2 to 16 KiB).
 */
template <size_t kN>
HWY_INLINE void PrefetchLines(const uint16_t* g, const uint16_t* x, const uint16_t* hOut, size_t dim, size_t at) {
  const size_t rowAt = at < dim ? at : at + (kN - 1) * dim;
  for (size_t i = 0; i < kN; ++i) {
    _mm_prefetch(reinterpret_cast<const char*>(g + i * dim + rowAt), _MM_HINT_T1);
    _mm_prefetch(reinterpret_cast<const char*>(x + i * dim + rowAt), _MM_HINT_T1);
  }
  _mm_prefetch(reinterpret_cast<const char*>(hOut + at), _MM_HINT_T1);
}

template <bool kHalf, bool kConvert, size_t kN>
struct SecondOfPair {
  const PairBuffer* buffer;
  uint16_t* gradX;  // the pair's first element in row 0
  uint16_t* gradHOut;
  size_t stride;
  HWY_INLINE void Put(size_t k, __m512i line) const {
    uint16_t* to = k < kN ? gradX + k * stride : gradHOut;
    _mm512_stream_si512(reinterpret_cast<__m512i*>(to), line);
  }
  HWY_INLINE void Row(size_t, size_t k, VF high) const {
    const DF d;
    const float* low = buffer->rows[k];
    if constexpr (kConvert && !kHalf) {
      // VCVTNE2PS2BF16 flushes fp32 denormals to zero, so a line with a zero (+-0 BF16) is checked exactly: a
      // normal fp32 never rounds to zero, and only a denormal takes the portable rounding.
      __m512i line;
      asm("vcvtne2ps2bf16 %2, %1, %0" : "=v"(line) : "v"(high.raw), "m"(*reinterpret_cast<const __m512*>(low)));
      if (HWY_UNLIKELY(_mm512_testn_epi16_mask(line, _mm512_set1_epi16(0x7fff)) != 0)) {
        const VF lowV = hn::Load(d, low);
        if ((_mm512_fpclass_ps_mask(lowV.raw, 0x20) | _mm512_fpclass_ps_mask(high.raw, 0x20)) != 0) {
          line = NarrowLine<kHalf>(lowV, high);
        }
      }
      Put(k, line);
    } else {
      Put(k, NarrowLine<kHalf>(hn::Load(d, low), high));
    }
  }
  HWY_INLINE void Copy(size_t, size_t i, V16 bits) const {
    const __m256i low = _mm256_load_si256(reinterpret_cast<const __m256i*>(buffer->copies[i]));
    Put(i, _mm512_inserti64x4(_mm512_castsi256_si512(low), bits.raw, 1));
  }
};
#endif

/** BackwardTokens for hRes present (kPlain false) or absent. */
template <bool kHalf, bool kConvert, bool kPlain, size_t kN>
void BackwardRuns(const MhcPostBackwardProblem& p, int64_t first, int64_t count) {
  const DF d;
  const size_t dim = static_cast<size_t>(p.hidden);
  const size_t body = dim / kChunk * kChunk, rest = dim - body;
  const bool stream = Streamable(p.streamGrads, p.gradX, dim) && Streamable(true, p.gradHOut, dim);
  // Streamed outputs go out as whole lines (PairBuffer) where a row holds whole pairs of chunks.
  const bool streamLines = stream && kLanes == 16 && dim % (2 * kChunk) == 0;
  const size_t ahead = std::min(kPrefetchAhead, dim) / (2 * kChunk) * (2 * kChunk);
  for (int64_t t = first; t < first + count; ++t) {
    const uint16_t* g = p.gradOutput + t * kN * dim;
    const uint16_t* x = p.x + t * kN * dim;
    const uint16_t* hOut = p.hOut + t * dim;
    const float* hRes = p.hRes != nullptr ? p.hRes + t * kN * kN : nullptr;
    const float* hPost = p.hPost + t * kN;
    uint16_t* gradX = p.gradX + t * kN * dim;
    uint16_t* gradHOut = p.gradHOut + t * dim;
    VF res[kN * kN * kHalves], post[kN * kHalves];
    for (VF& v : res) v = hn::Zero(d);
    for (VF& v : post) v = hn::Zero(d);
    if (streamLines) {
#if HWY_TARGET <= HWY_AVX3
      PairBuffer buffer;
      for (size_t e = 0; e < body; e += 2 * kChunk) {
        PrefetchLines<kN>(g, x, hOut, dim, e + ahead);
        BackwardChunk<kHalf, kPlain, kN>({g + e, dim}, {x + e, dim}, hOut + e, hRes, hPost, res, post,
                                         FirstOfPair{&buffer});
        const size_t e2 = e + kChunk;
        BackwardChunk<kHalf, kPlain, kN>({g + e2, dim}, {x + e2, dim}, hOut + e2, hRes, hPost, res, post,
                                         SecondOfPair<kHalf, kConvert, kN>{&buffer, gradX + e, gradHOut + e, dim});
      }
#endif
    } else if (stream) {
      for (size_t e = 0; e < body; e += kChunk) {
        BackwardChunk<kHalf, kPlain, kN>({g + e, dim}, {x + e, dim}, hOut + e, hRes, hPost, res, post,
                                         StoreSink<kHalf, true, kConvert, kN>{gradX + e, gradHOut + e, dim});
      }
    } else {
      for (size_t e = 0; e < body; e += kChunk) {
        BackwardChunk<kHalf, kPlain, kN>({g + e, dim}, {x + e, dim}, hOut + e, hRes, hPost, res, post,
                                         StoreSink<kHalf, false, kConvert, kN>{gradX + e, gradHOut + e, dim});
      }
    }
    if (rest != 0) {
      HWY_ALIGN uint16_t gPad[kMaxStreams * kChunk], xPad[kMaxStreams * kChunk], hOutPad[kChunk] = {};
      HWY_ALIGN uint16_t gradXPad[kMaxStreams * kChunk], gradHOutPad[kChunk];
      const ChunkRows gRows = padRows(g + body, dim, kN, rest, gPad);
      const ChunkRows xRows = padRows(x + body, dim, kN, rest, xPad);
      std::memcpy(hOutPad, hOut + body, rest * sizeof(uint16_t));
      BackwardChunk<kHalf, kPlain, kN>(gRows, xRows, hOutPad, hRes, hPost, res, post,
                                       StoreSink<kHalf, false, kConvert, kN>{gradXPad, gradHOutPad, kChunk});
      unpadRows(gradXPad, kN, rest, gradX + body, dim);
      unpadRows(gradHOutPad, 1, rest, gradHOut + body, dim);
    }
    // The partial sums leave the registers once per token, in lane order, for mhcPostCombineLanes.
    HWY_ALIGN float partial[(kN * kN + kN) * kMhcPostSumLanes];
    for (size_t k = 0; k < kN * kN * kHalves; ++k) hn::Store(res[k], d, partial + k * kLanes);
    for (size_t k = 0; k < kN * kHalves; ++k) hn::Store(post[k], d, partial + (kN * kN * kHalves + k) * kLanes);
    for (size_t k = 0; k < kN * kN; ++k) p.gradHRes[t * kN * kN + k] = mhcPostCombineLanes(partial + k * kChunk);
    for (size_t j = 0; j < kN; ++j) p.gradHPost[t * kN + j] = mhcPostCombineLanes(partial + (kN * kN + j) * kChunk);
  }
  if (stream) hwy::FlushStream();
}

template <bool kHalf, bool kConvert, size_t kN>
void BackwardTokens(const MhcPostBackwardProblem& p, int64_t first, int64_t count) {
  if (p.hRes == nullptr) {
    BackwardRuns<kHalf, kConvert, true, kN>(p, first, count);
  } else {
    BackwardRuns<kHalf, kConvert, false, kN>(p, first, count);
  }
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
  if (p.bf16Convert && kLanes == 16) {  // FLOAT16 never takes the BF16 instruction: the kConvert FLOAT16 copies unused
    return DispatchStreams(p, first, count, BackwardTokens<true, false, 4>, BackwardTokens<false, true, 4>,
                           BackwardTokens<true, false, 6>, BackwardTokens<false, true, 6>,
                           BackwardTokens<true, false, 8>, BackwardTokens<false, true, 8>);
  }
  return DispatchStreams(p, first, count, BackwardTokens<true, false, 4>, BackwardTokens<false, false, 4>,
                         BackwardTokens<true, false, 6>, BackwardTokens<false, false, 6>,
                         BackwardTokens<true, false, 8>, BackwardTokens<false, false, 8>);
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
