// The SIMD MhcPre block kernel, compiled once per Highway target and dispatched at run time. It runs on x86
// targets from AVX2 on (8 fp32 lanes per vector, native FMA, exact fp16 conversion through F16C); other targets
// run the scalar kernel. Same operations in the same order as mhc_pre_scalar.cpp (mhc_pre_kernel.h):
//   stage:  xg = float(x) * gamma (HF32-rounded), chunk[lane] = fma(x, x, chunk[lane]) from 0, 8 k per vector,
//           then squares[lane] += chunk[lane];
//   matmul: 4 token rows x w vectors of h_mix in registers; per k, broadcast xg(t, k) and fma with the packed
//           phi panel row; each chunk's sums are added to h_mix in memory;
//   h_in:   x0 * h0, then fma per stream; narrowed once (RNE).
// On AVX-512 (when the plan packed phi paired) the matmul holds token pairs in 16-lane registers and h_in runs 16
// lanes wide (mhc_pre_avx512-inl.h); every lane still runs the same chain, so the bits are the same.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/mhc/kernels/mhc_pre_hwy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
//
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/hwy_lanes-inl.h"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "ops/mhc/kernels/mhc_pre_kernel.h"
#include "ops/mhc/kernels/mhc_pre_token.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2

using D8 = hn::CappedTag<float, 8>;
using V8 = hn::Vec<D8>;

/** 8 elements of x from `from`, widened exactly (core/hwy_lanes-inl.h). */
template <bool kHalf>
HWY_INLINE V8 Widen(const uint16_t* from) {
  return WidenBits<kHalf>(D8(), from);
}

/** 8 fp32 lanes narrowed to fp16 / bf16 bits (core/hwy_lanes-inl.h: RNE, NaN kept quiet). */
template <bool kHalf>
HWY_INLINE auto Narrow(V8 v) {
  return NarrowBits<kHalf>(D8(), v);
}

/** xg of one vector: v * gamma (kGamma; `gamma` holds its 8 values), HF32-rounded (kHf32, opImplMode 1). */
template <bool kGamma, bool kHf32>
HWY_INLINE V8 Scaled(V8 v, V8 gamma) {
  V8 g = v;
  if constexpr (kGamma) g = hn::Mul(v, gamma);
  if constexpr (kHf32) g = RoundHf32(D8(), g);
  return g;
}

/**
 * Stages the chunk of kR tokens (rows `k` elements apart in x, `chunk` apart in xg): xg[kk] for kk < kc, adding
 * the chunk's 8 partial sums of squares to each token's. The tokens are interleaved so that their fma chains overlap
 * (one token's chain alone would bound the loop by the fma latency).
 */
template <bool kHalf, bool kGamma, bool kHf32, size_t kR>
HWY_INLINE void StageRows(const uint16_t* x, size_t k, const float* gamma, size_t kc, float* xg, size_t chunk,
                          float* squares) {
  const D8 d;
  V8 sum[kR];
  for (size_t r = 0; r < kR; ++r) sum[r] = hn::Zero(d);  // the chunk's own partials (mhc_pre_kernel.h)
  size_t kk = 0;
  for (; kk + 8 <= kc; kk += 8) {
    const V8 g = kGamma ? hn::LoadU(d, gamma + kk) : hn::Zero(d);  // once for the kR rows (xg may alias it)
    for (size_t r = 0; r < kR; ++r) {
      const V8 v = Widen<kHalf>(x + r * k + kk);
      sum[r] = hn::MulAdd(v, v, sum[r]);
      hn::StoreU(Scaled<kGamma, kHf32>(v, g), d, xg + r * chunk + kk);
    }
  }
  if (kk < kc) {  // tail through small buffers: zero lanes add nothing to the squares
    const size_t rest = kc - kk;
    float scale[8] = {};
    if constexpr (kGamma) std::memcpy(scale, gamma + kk, rest * sizeof(float));
    for (size_t r = 0; r < kR; ++r) {
      uint16_t bits[8] = {};
      float out[8];
      std::memcpy(bits, x + r * k + kk, rest * sizeof(uint16_t));
      const V8 v = Widen<kHalf>(bits);
      sum[r] = hn::MulAdd(v, v, sum[r]);
      hn::StoreU(Scaled<kGamma, kHf32>(v, hn::LoadU(d, scale)), d, out);
      std::memcpy(xg + r * chunk + kk, out, rest * sizeof(float));
    }
  }
  for (size_t r = 0; r < kR; ++r) hn::StoreU(hn::Add(hn::LoadU(d, squares + r * 8), sum[r]), d, squares + r * 8);
}

/** Stages the chunk of `tokens` tokens, 4 at a time. */
template <bool kHalf, bool kGamma, bool kHf32>
HWY_NOINLINE void StageChunk(const uint16_t* x, size_t k, const float* gamma, size_t kc, float* xg, size_t chunk,
                             float* squares, size_t tokens) {
  size_t t = 0;
  for (; t + 4 <= tokens; t += 4) {
    StageRows<kHalf, kGamma, kHf32, 4>(x + t * k, k, gamma, kc, xg + t * chunk, chunk, squares + t * 8);
  }
  for (; t < tokens; ++t) {
    StageRows<kHalf, kGamma, kHf32, 1>(x + t * k, k, gamma, kc, xg + t * chunk, chunk, squares + t * 8);
  }
}

using StageFn = void (*)(const uint16_t*, size_t, const float*, size_t, float*, size_t, float*, size_t);

/** The staging instance for gamma given or not and opImplMode. */
template <bool kHalf>
StageFn ChooseStage(bool gamma, bool hf32) {
  if (gamma) return hf32 ? &StageChunk<kHalf, true, true> : &StageChunk<kHalf, true, false>;
  return hf32 ? &StageChunk<kHalf, false, true> : &StageChunk<kHalf, false, false>;
}

/**
 * The x the next staging step reads: `rows` rows of `elements` elements from `base`, `stride` apart. The matmul
 * asks for it 64 bytes at a time, spread over its k loop, so that x streams in from memory while the products
 * run (staging alone would wait for it: its 32 short row pieces are more streams than the hardware tracks).
 */
struct NextX {
  const uint16_t* base = nullptr;
  size_t stride = 0, elements = 0, rows = 0;
};

/** The prefetches of `next`'s rows [row0, row0 + maxRows), 64 bytes each, spread over a k loop of kc: one share
 *  per step of 8 k. */
class SpreadPrefetch {
 public:
  SpreadPrefetch(const NextX& next, size_t row0, size_t maxRows, size_t kc)
      : next_(next), row0_(row0), linesPerRow_((next.elements + 31) / 32) {
    const size_t rows = row0 < next.rows ? HWY_MIN(maxRows, next.rows - row0) : 0;
    const size_t steps = (kc + 7) / 8;
    lines_ = rows * linesPerRow_;
    perStep_ = (lines_ + steps - 1) / steps;
  }
  HWY_INLINE void step() {
    for (size_t q = 0; q < perStep_ && line_ < lines_; ++q, ++line_) {
      hwy::Prefetch(next_.base + (row0_ + line_ / linesPerRow_) * next_.stride + (line_ % linesPerRow_) * 32);
    }
  }

 private:
  const NextX& next_;
  size_t row0_, linesPerRow_, lines_ = 0, perStep_ = 0, line_ = 0;
};

/** kR token rows x kW vectors of h_mix: c (+)= sum over kk < kc of xg(r, kk) * panel(kk, :); prefetches the
 *  rows [row0, row0 + kR) of `next`. */
template <size_t kW, size_t kR>
HWY_INLINE void MicroKernel(const float* HWY_RESTRICT xg, size_t lda, const float* HWY_RESTRICT panel, size_t kc,
                            float* HWY_RESTRICT c, size_t ldc, bool accumulate, const NextX& next, size_t row0) {
  const D8 d;
  V8 acc[kR][kW];
  for (size_t r = 0; r < kR; ++r) {
    for (size_t w = 0; w < kW; ++w) acc[r][w] = hn::Zero(d);
  }
  SpreadPrefetch prefetch(next, row0, kR, kc);
  for (size_t k0 = 0; k0 < kc; k0 += 8) {
    prefetch.step();
    const size_t end = HWY_MIN(kc, k0 + 8);
    for (size_t kk = k0; kk < end; ++kk) {
      V8 b[kW];
      for (size_t w = 0; w < kW; ++w) b[w] = hn::LoadU(d, panel + kk * kW * 8 + w * 8);
      for (size_t r = 0; r < kR; ++r) {
        const V8 a = hn::Set(d, xg[r * lda + kk]);
        for (size_t w = 0; w < kW; ++w) acc[r][w] = hn::MulAdd(a, b[w], acc[r][w]);
      }
    }
  }
  for (size_t r = 0; r < kR; ++r) {
    for (size_t w = 0; w < kW; ++w) {
      float* out = c + r * ldc + w * 8;
      hn::StoreU(accumulate ? hn::Add(hn::LoadU(d, out), acc[r][w]) : acc[r][w], d, out);
    }
  }
}

template <size_t kW>
HWY_NOINLINE void PanelProducts(const float* xg, size_t lda, const float* panel, size_t kc, float* mix, size_t ldc,
                                size_t count, bool accumulate, const NextX& next) {
  size_t t = 0;
  for (; t + 4 <= count; t += 4) {
    MicroKernel<kW, 4>(xg + t * lda, lda, panel, kc, mix + t * ldc, ldc, accumulate, next, t);
  }
  switch (count - t) {
    case 3:
      return MicroKernel<kW, 3>(xg + t * lda, lda, panel, kc, mix + t * ldc, ldc, accumulate, next, t);
    case 2:
      return MicroKernel<kW, 2>(xg + t * lda, lda, panel, kc, mix + t * ldc, ldc, accumulate, next, t);
    case 1:
      return MicroKernel<kW, 1>(xg + t * lda, lda, panel, kc, mix + t * ldc, ldc, accumulate, next, t);
    default:
      return;
  }
}

/** h_in of 8 elements at column j: x0 * h0, then fma per stream, in stream order. kN: N, or 0 (runtime n). */
template <bool kHalf, size_t kN>
HWY_INLINE V8 HInVector(const uint16_t* x, size_t n, size_t dHidden, const V8* h, size_t j) {
  const size_t streams = kN != 0 ? kN : n;
  V8 acc = hn::Mul(Widen<kHalf>(x + j), h[0]);
  for (size_t i = 1; i < streams; ++i) acc = hn::MulAdd(Widen<kHalf>(x + i * dHidden + j), h[i], acc);
  return acc;
}

#if HWY_TARGET <= HWY_AVX3
#include "ops/mhc/kernels/mhc_pre_avx512-inl.h"  // 16-lane h_in, paired matmul
#endif

/** h_in of one token: D values from its N streams and gate vectors h; non-temporal stores when
 *  `stream` (then `out` is 16-byte aligned and D a multiple of 8). On AVX-512 the first columns run 16 lanes wide. */
template <bool kHalf, size_t kN>
HWY_INLINE void TokenHIn(const uint16_t* x, size_t n, size_t dHidden, const V8* h, uint16_t* out, bool stream) {
  const hn::Rebind<uint16_t, D8> d16;
#if HWY_TARGET <= HWY_AVX3
  size_t j = TokenHIn16<kHalf, kN>(x, n, dHidden, h, out, stream);
#else
  size_t j = 0;
#endif
  for (; j + 16 <= dHidden; j += 16) {  // two independent chains per step
    const auto lo = Narrow<kHalf>(HInVector<kHalf, kN>(x, n, dHidden, h, j));
    const auto hi = Narrow<kHalf>(HInVector<kHalf, kN>(x, n, dHidden, h, j + 8));
    if (stream) {
      hn::Stream(lo, d16, out + j);
      hn::Stream(hi, d16, out + j + 8);
    } else {
      hn::StoreU(lo, d16, out + j);
      hn::StoreU(hi, d16, out + j + 8);
    }
  }
  for (; j + 8 <= dHidden; j += 8) {
    const auto v = Narrow<kHalf>(HInVector<kHalf, kN>(x, n, dHidden, h, j));
    if (stream) {
      hn::Stream(v, d16, out + j);
    } else {
      hn::StoreU(v, d16, out + j);
    }
  }
  if (j < dHidden) {  // tail through small buffers
    const size_t rest = dHidden - j;
    uint16_t bits[8] = {};
    std::memcpy(bits, x + j, rest * sizeof(uint16_t));
    V8 acc = hn::Mul(Widen<kHalf>(bits), h[0]);
    for (size_t i = 1; i < n; ++i) {
      std::memcpy(bits, x + i * dHidden + j, rest * sizeof(uint16_t));
      acc = hn::MulAdd(Widen<kHalf>(bits), h[i], acc);
    }
    uint16_t narrow[8];
    hn::StoreU(Narrow<kHalf>(acc), d16, narrow);
    std::memcpy(out + j, narrow, rest * sizeof(uint16_t));
  }
}

// Streams whose gate vectors live on the stack (every profile's N).
constexpr size_t kMaxUnrolledStreams = 8;

template <bool kHalf>
void BlockTyped(const MhcPreProblem& p, int64_t first, int64_t count, float* scratch) {
  const mhc_pre::ScratchLayout layout = mhc_pre::scratchLayout(p);
  float* xg = scratch + layout.xg;
  float* mix = scratch + layout.mix;
  float* squares = scratch + layout.squares;
  float* gates = scratch + layout.gates;
  const size_t k = static_cast<size_t>(p.width()), chunk = static_cast<size_t>(p.chunkWidth());
  const size_t fp = static_cast<size_t>(p.paddedFusion()), vectors = fp / 8;
  const size_t tokens = static_cast<size_t>(count);
  const auto* x = static_cast<const uint16_t*>(p.x) + static_cast<size_t>(first) * k;
  std::fill(squares, squares + tokens * 8, 0.0f);
#if HWY_TARGET <= HWY_AVX3
  const bool paired = p.pairedPhi;
  const StageFn stage =
      paired ? ChoosePairedStage<kHalf>(p.gamma != nullptr, p.hf32) : ChooseStage<kHalf>(p.gamma != nullptr, p.hf32);
#else
  constexpr bool paired = false;  // Block refuses paired phi on this target
  const StageFn stage = ChooseStage<kHalf>(p.gamma != nullptr, p.hf32);
#endif
  const auto copies = static_cast<size_t>(p.phiCopies());  // 2 when paired (Block refuses paired elsewhere)

  for (size_t k0 = 0; k0 < k; k0 += chunk) {
    const size_t kc = std::min(chunk, k - k0);
    const float* gamma = p.gamma != nullptr ? p.gamma + k0 : nullptr;
    stage(x + k0, k, gamma, kc, xg, chunk, squares, tokens);
    // What the next staging step reads: this block's next chunk, or the first chunk of the following tokens.
    NextX next;
    if (k0 + chunk < k) {
      next = {x + k0 + chunk, k, std::min(chunk, k - k0 - chunk), tokens};
    } else {
      const size_t after = static_cast<size_t>(p.tokens - first) - tokens;
      next = {x + tokens * k, k, std::min(chunk, k), std::min<size_t>(after, kMhcPreBlockTokens)};
    }
    for (size_t start = 0, w = 0; start < vectors; start += w) {
      w = static_cast<size_t>(mhcPrePanelVectors(static_cast<int64_t>(vectors - start)));
      const float* panel = p.packedPhi + (start * 8 * k + k0 * w * 8) * copies;
      float* out = mix + start * 8;
#if HWY_TARGET <= HWY_AVX3
      if (paired) {
        const size_t pairs = (tokens + 1) / 2;
        if (w == 3) {
          PairedPanelProducts<3>(xg, chunk, panel, kc, out, fp, pairs, k0 != 0, next);
        } else if (w == 2) {
          PairedPanelProducts<2>(xg, chunk, panel, kc, out, fp, pairs, k0 != 0, next);
        } else {
          PairedPanelProducts<1>(xg, chunk, panel, kc, out, fp, pairs, k0 != 0, next);
        }
        next.rows = 0;
        continue;
      }
#endif
      if (w == 3) {
        PanelProducts<3>(xg, chunk, panel, kc, out, fp, tokens, k0 != 0, next);
      } else if (w == 2) {
        PanelProducts<2>(xg, chunk, panel, kc, out, fp, tokens, k0 != 0, next);
      } else {
        PanelProducts<1>(xg, chunk, panel, kc, out, fp, tokens, k0 != 0, next);
      }
      next.rows = 0;  // the first panel asked for it
    }
  }

  const size_t n = static_cast<size_t>(p.streams), dHidden = static_cast<size_t>(p.hidden);
  auto* hIn = static_cast<uint16_t*>(p.hIn) + static_cast<size_t>(first) * dHidden;
  const bool stream = p.streamHIn && dHidden % 8 == 0 && reinterpret_cast<uintptr_t>(hIn) % 16 == 0;
  for (size_t t = 0; t < tokens; ++t) {
    mhc_pre::tokenGates(p, first + static_cast<int64_t>(t), mix + t * fp, squares + t * 8, gates + t * n);
    const float* g = gates + t * n;
    if (n <= kMaxUnrolledStreams) {
      V8 h[kMaxUnrolledStreams];
      for (size_t i = 0; i < n; ++i) h[i] = hn::Set(hn::CappedTag<float, 8>(), g[i]);
      switch (n) {
        case 4:
          TokenHIn<kHalf, 4>(x + t * k, n, dHidden, h, hIn + t * dHidden, stream);
          break;
        case 6:
          TokenHIn<kHalf, 6>(x + t * k, n, dHidden, h, hIn + t * dHidden, stream);
          break;
        case 8:
          TokenHIn<kHalf, 8>(x + t * k, n, dHidden, h, hIn + t * dHidden, stream);
          break;
        default:
          TokenHIn<kHalf, 0>(x + t * k, n, dHidden, h, hIn + t * dHidden, stream);
          break;
      }
    } else {
      std::vector<V8> h(n);  // more streams than any profile allows: the general loop
      for (size_t i = 0; i < n; ++i) h[i] = hn::Set(hn::CappedTag<float, 8>(), g[i]);
      TokenHIn<kHalf, 0>(x + t * k, n, dHidden, h.data(), hIn + t * dHidden, stream);
    }
  }
  if (stream) hwy::FlushStream();
}

bool Block(const MhcPreProblem& p, int64_t first, int64_t count, float* scratch) {
#if HWY_TARGET > HWY_AVX3
  if (p.pairedPhi) return false;  // planned on an AVX-512 target, run on another: the scalar kernel reads both
#endif
  if (p.xDtype == ACL_FLOAT16) {
    BlockTyped<true>(p, first, count, scratch);
  } else {
    BlockTyped<false>(p, first, count, scratch);
  }
  return true;
}

#else

bool Block(const MhcPreProblem&, int64_t, int64_t, float*) { return false; }  // the caller runs the scalar kernel

#endif

/** Whether Block wants phi packed paired on this target. */
bool PairedPhi() {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  return true;
#else
  return false;
#endif
}

}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gradkit::kernels {

HWY_EXPORT(Block);
HWY_EXPORT(PairedPhi);

namespace {

void blockSimd(const MhcPreProblem& problem, int64_t first, int64_t count, float* scratch) {
  if (!HWY_DYNAMIC_DISPATCH(Block)(problem, first, count, scratch)) mhcPreBlockScalar(problem, first, count, scratch);
}

bool pairedPhiSimd() { return HWY_DYNAMIC_DISPATCH(PairedPhi)(); }

}  // namespace

const MhcPreKernels kMhcPreSimdKernels{blockSimd, pairedPhiSimd};

}  // namespace gradkit::kernels
#endif  // HWY_ONCE
