// The portable SIMD MhcPre table (kMhcPreHwyKernels): the block kernel of mhc_pre_simd-inl.h with 8-lane staging
// and matmul, compiled once per Highway target and dispatched at run time. It runs on x86 targets from AVX2 on
// (8 fp32 lanes per vector, native FMA, exact fp16 conversion through F16C); other targets run the scalar kernel.
//   stage:  xg = float(x) * gamma (HF32-rounded), squares[lane] = fma(x, x, squares[lane]), 8 k per vector;
//   matmul: 4 token rows x w vectors of h_mix in registers; per k, broadcast xg(t, k) and fma with the packed
//           phi panel row; each chunk's sums are added to h_mix in memory.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/mhc/kernels/mhc_pre_hwy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
//
#include <cstdint>
#include <cstring>

#include "hwy/highway.h"
#include "ops/mhc/kernels/mhc_pre_kernel.h"
#include "ops/mhc/kernels/mhc_pre_simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if GRADKIT_MHC_PRE_SIMD_TARGET  // set by mhc_pre_simd-inl.h for this target

/** xg of one vector: v * gamma (kGamma; `gamma` holds its 8 values), HF32-rounded (kHf32, opImplMode 1). */
template <bool kGamma, bool kHf32>
HWY_INLINE V8 Scaled(V8 v, V8 gamma) {
  V8 g = v;
  if constexpr (kGamma) g = hn::Mul(v, gamma);
  if constexpr (kHf32) g = RoundHf32(D8(), g);
  return g;
}

/**
 * Stages the chunk of kR tokens (rows `k` elements apart in x, `chunk` apart in xg): xg[kk] for kk < kc, advancing
 * each token's 8 partial sums of squares. The tokens are interleaved so that their fma chains overlap (one token's
 * chain alone would bound the loop by the fma latency).
 */
template <bool kHalf, bool kGamma, bool kHf32, size_t kR>
HWY_INLINE void StageRows(const uint16_t* x, size_t k, const float* gamma, size_t kc, float* xg, size_t chunk,
                          float* squares) {
  const D8 d;
  V8 sum[kR];
  for (size_t r = 0; r < kR; ++r) sum[r] = hn::LoadU(d, squares + r * 8);
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
  for (size_t r = 0; r < kR; ++r) hn::StoreU(sum[r], d, squares + r * 8);
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

/** The 8-lane variant of BlockTyped: phi unpaired, tokens staged row by row, h_in 8 lanes wide throughout. */
struct EightLanes {
  static constexpr bool kPaired = false;
  template <bool kHalf>
  static StageFn Stage(bool gamma, bool hf32) {
    if (gamma) return hf32 ? &StageChunk<kHalf, true, true> : &StageChunk<kHalf, true, false>;
    return hf32 ? &StageChunk<kHalf, false, true> : &StageChunk<kHalf, false, false>;
  }
  template <size_t kW>
  static void Products(const float* xg, size_t lda, const float* panel, size_t kc, float* mix, size_t ldc,
                       size_t tokens, bool accumulate, const NextX& next) {
    PanelProducts<kW>(xg, lda, panel, kc, mix, ldc, tokens, accumulate, next);
  }
  template <bool kHalf, size_t kN>
  static size_t HInHead(const uint16_t*, size_t, size_t, const V8*, uint16_t*, bool) {
    return 0;
  }
};

bool EightLaneBlock(const MhcPreProblem& p, int64_t first, int64_t count, float* scratch) {
  return RunBlock<EightLanes>(p, first, count, scratch);
}

#else

bool EightLaneBlock(const MhcPreProblem&, int64_t, int64_t, float*) { return false; }  // the caller runs the scalar

#endif

bool EightLanesRun() { return GRADKIT_MHC_PRE_SIMD_TARGET != 0; }

}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gradkit::kernels {

HWY_EXPORT(EightLaneBlock);
HWY_EXPORT(EightLanesRun);

namespace {

void blockHwy(const MhcPreProblem& problem, int64_t first, int64_t count, float* scratch) {
  if (!HWY_DYNAMIC_DISPATCH(EightLaneBlock)(problem, first, count, scratch)) {
    mhcPreBlockScalar(problem, first, count, scratch);
  }
}

bool hwyRuns() { return HWY_DYNAMIC_DISPATCH(EightLanesRun)(); }

}  // namespace

const MhcPreKernels kMhcPreHwyKernels{"hwy", hwyRuns, blockHwy, false};

}  // namespace gradkit::kernels
#endif  // HWY_ONCE
