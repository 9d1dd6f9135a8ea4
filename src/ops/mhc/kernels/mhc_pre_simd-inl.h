// The SIMD MhcPre block kernel's frame, written once for every Highway target and included once per target by each
// kernel table's file (foreach_target, hence the toggle guard): the lane conversions, the prefetches of the next x,
// h_in, and the block driver. A table plugs in its staging and matmul (a Variant, see BlockTyped): the portable
// 8-lane one (mhc_pre_hwy.cpp) or AVX-512's token pairs (mhc_pre_avx512.cpp). Same operations in the same order as
// mhc_pre_scalar.cpp (mhc_pre_kernel.h):
//   stage:  xg = float(x) * gamma (HF32-rounded), squares[lane] = fma(x, x, squares[lane]), 8 k per vector;
//   matmul: per k, broadcast xg(t, k) and fma with the packed phi panel row; each chunk's sums are added to h_mix;
//   h_in:   x0 * h0, then fma per stream; narrowed once (RNE).
#if defined(GRADKIT_OPS_MHC_KERNELS_MHC_PRE_SIMD_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GRADKIT_OPS_MHC_KERNELS_MHC_PRE_SIMD_INL_H_
#undef GRADKIT_OPS_MHC_KERNELS_MHC_PRE_SIMD_INL_H_
#else
#define GRADKIT_OPS_MHC_KERNELS_MHC_PRE_SIMD_INL_H_
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "ops/mhc/kernels/mhc_pre_kernel.h"
#include "ops/mhc/kernels/mhc_pre_token.h"

// The kernel needs 8 fp32 lanes, native FMA and exact fp16 conversion (F16C): x86 from AVX2 on. On other targets
// this frame is empty and the tables' files answer false (their callers then run the scalar kernel).
#undef GRADKIT_MHC_PRE_SIMD_TARGET
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
#define GRADKIT_MHC_PRE_SIMD_TARGET 1
#else
#define GRADKIT_MHC_PRE_SIMD_TARGET 0
#endif

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if GRADKIT_MHC_PRE_SIMD_TARGET

using D8 = hn::CappedTag<float, 8>;
using V8 = hn::Vec<D8>;

/** 8 elements of x from `from`, widened exactly. */
template <bool kHalf>
HWY_INLINE V8 Widen(const uint16_t* from) {
  const D8 d;
  const hn::Rebind<uint16_t, D8> d16;
  const auto bits = hn::LoadU(d16, from);
  if constexpr (kHalf) {
    const hn::Rebind<hwy::float16_t, D8> dh;
    return hn::PromoteTo(d, hn::BitCast(dh, bits));
  } else {
    const hn::RebindToUnsigned<D8> du;
    return hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du, bits)));
  }
}

/** The bf16 rounding of every lane (RNE; NaN stays NaN with its sign, top payload and quiet bit set): 32-bit lanes
 *  whose high halves are the bf16 bits. */
template <class D>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<D>> Bf16Rounded(D, hn::Vec<D> v) {
  const hn::RebindToUnsigned<D> du;
  const auto bits = hn::BitCast(du, v);
  const auto lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
  const auto rounded = hn::Add(bits, hn::Add(lsb, hn::Set(du, 0x7fffu)));
  const auto quiet = hn::Or(bits, hn::Set(du, 0x00400000u));
  return hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), quiet, rounded);
}

/** 8 fp32 lanes narrowed to fp16 / bf16 bits (RNE; NaN stays NaN with its sign, top payload and quiet bit set). */
template <bool kHalf>
HWY_INLINE auto Narrow(V8 v) {
  const hn::Rebind<uint16_t, D8> d16;
  if constexpr (kHalf) {
    const hn::Rebind<hwy::float16_t, D8> dh;
    return hn::BitCast(d16, hn::DemoteTo(dh, v));  // F16C: RNE, NaN kept quiet
  } else {
    const hn::RebindToSigned<D8> di;
    return hn::DemoteTo(d16, hn::BitCast(di, hn::ShiftRight<16>(Bf16Rounded(D8(), v))));
  }
}

/** HF32 rounding of every finite lane (core/hf32.h's rule: add half of the 12 dropped bits, clear them). */
template <class D>
HWY_INLINE hn::Vec<D> RoundHf32(D d, hn::Vec<D> v) {
  const hn::RebindToUnsigned<D> du;
  const auto bits = hn::BitCast(du, v);
  const auto exponent = hn::Set(du, 0x7F800000u);
  const auto special = hn::Eq(hn::And(bits, exponent), exponent);
  const auto rounded = hn::And(hn::Add(bits, hn::Set(du, 0x800u)), hn::Set(du, ~0xFFFu));
  return hn::BitCast(d, hn::IfThenElse(special, bits, rounded));
}

/** Stages one chunk of `tokens` tokens: (x, k, gamma, kc, xg, chunk, squares, tokens), in a Variant's layout. */
using StageFn = void (*)(const uint16_t*, size_t, const float*, size_t, float*, size_t, float*, size_t);

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

/** h_in of 8 elements at column j: x0 * h0, then fma per stream, in stream order. kN: N, or 0 (runtime n). */
template <bool kHalf, size_t kN>
HWY_INLINE V8 HInVector(const uint16_t* x, size_t n, size_t dHidden, const V8* h, size_t j) {
  const size_t streams = kN != 0 ? kN : n;
  V8 acc = hn::Mul(Widen<kHalf>(x + j), h[0]);
  for (size_t i = 1; i < streams; ++i) acc = hn::MulAdd(Widen<kHalf>(x + i * dHidden + j), h[i], acc);
  return acc;
}

/** h_in of one token: D values from its N streams and gate vectors h; non-temporal stores when `stream` (then `out`
 *  is 16-byte aligned and D a multiple of 8). The Variant may run the first columns wider (Variant::HInHead). */
template <class Variant, bool kHalf, size_t kN>
HWY_INLINE void TokenHIn(const uint16_t* x, size_t n, size_t dHidden, const V8* h, uint16_t* out, bool stream) {
  const hn::Rebind<uint16_t, D8> d16;
  size_t j = Variant::template HInHead<kHalf, kN>(x, n, dHidden, h, out, stream);
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

/**
 * The block of tokens [first, first + count). A Variant supplies, as static members:
 *   kPaired                              whether it reads phi packed paired (MhcPreProblem::pairedPhi);
 *   Stage<kHalf>(gamma, hf32)            the StageFn that stages a chunk of xg in its layout;
 *   Products<kW>(xg, lda, panel, kc, mix, ldc, tokens, accumulate, next)
 *                                        h_mix (+)= the chunk's xg times a panel of kW column vectors;
 *   HInHead<kHalf, kN>(x, n, dHidden, h, out, stream)
 *                                        h_in's first columns written its own way; returns how many (0: none).
 */
template <class Variant, bool kHalf>
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
  const StageFn stage = Variant::template Stage<kHalf>(p.gamma != nullptr, p.hf32);
  const auto copies = static_cast<size_t>(p.phiCopies());  // 2 when paired

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
      if (w == 3) {
        Variant::template Products<3>(xg, chunk, panel, kc, out, fp, tokens, k0 != 0, next);
      } else if (w == 2) {
        Variant::template Products<2>(xg, chunk, panel, kc, out, fp, tokens, k0 != 0, next);
      } else {
        Variant::template Products<1>(xg, chunk, panel, kc, out, fp, tokens, k0 != 0, next);
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
      for (size_t i = 0; i < n; ++i) h[i] = hn::Set(D8(), g[i]);
      switch (n) {
        case 4:
          TokenHIn<Variant, kHalf, 4>(x + t * k, n, dHidden, h, hIn + t * dHidden, stream);
          break;
        case 6:
          TokenHIn<Variant, kHalf, 6>(x + t * k, n, dHidden, h, hIn + t * dHidden, stream);
          break;
        case 8:
          TokenHIn<Variant, kHalf, 8>(x + t * k, n, dHidden, h, hIn + t * dHidden, stream);
          break;
        default:
          TokenHIn<Variant, kHalf, 0>(x + t * k, n, dHidden, h, hIn + t * dHidden, stream);
          break;
      }
    } else {
      std::vector<V8> h(n);  // more streams than any profile allows: the general loop
      for (size_t i = 0; i < n; ++i) h[i] = hn::Set(D8(), g[i]);
      TokenHIn<Variant, kHalf, 0>(x + t * k, n, dHidden, h.data(), hIn + t * dHidden, stream);
    }
  }
  if (stream) hwy::FlushStream();
}

/** Runs the block with Variant; false when phi is not packed the Variant's way (the caller runs the scalar kernel,
 *  which reads both layouts). */
template <class Variant>
bool RunBlock(const MhcPreProblem& p, int64_t first, int64_t count, float* scratch) {
  if (p.pairedPhi != Variant::kPaired) return false;
  if (p.xDtype == ACL_FLOAT16) {
    BlockTyped<Variant, true>(p, first, count, scratch);
  } else {
    BlockTyped<Variant, false>(p, first, count, scratch);
  }
  return true;
}

#endif  // GRADKIT_MHC_PRE_SIMD_TARGET

}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
