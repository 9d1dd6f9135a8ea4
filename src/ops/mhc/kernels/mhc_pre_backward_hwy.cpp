// SIMD MhcPreBackward kernels, compiled once per Highway target and dispatched at run time. Elementwise work uses
// the scalar kernels' exact operations (separate multiply and add, RNE narrowing), so stageXg and gradXRow give
// the scalar bits; streamDots sums in vector lanes (another order than the scalar kernel).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/mhc/kernels/mhc_pre_backward_hwy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
//
#include <cmath>
#include <cstring>

#include "hwy/highway.h"
#include "ops/mhc/kernels/mhc_pre_backward_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;

// x86 converts fp16 exactly (RNE, NaN and Inf kept) from AVX2 on (F16C); Highway 1.0.3 emulates it by truncation on
// older targets, which therefore run the scalar kernels for fp16.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
constexpr bool kExactHalf = true;
#else
constexpr bool kExactHalf = false;
#endif

/** Lanes i.. of a FLOAT16 (kHalf) or BF16 buffer widened exactly to f32. */
template <bool kHalf, class D>
HWY_INLINE hn::Vec<D> LoadWide(D d, const void* base, size_t i) {
  const hn::Rebind<uint16_t, D> d16;
  const auto bits = hn::LoadU(d16, static_cast<const uint16_t*>(base) + i);
  if constexpr (kHalf) {
    const hn::Rebind<hwy::float16_t, D> dh;
    return hn::PromoteTo(d, hn::BitCast(dh, bits));
  } else {
    const hn::RebindToUnsigned<D> du;
    return hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du, bits)));
  }
}

/** Stores f32 lanes at element i as FLOAT16 (kHalf) or BF16, rounded to nearest even (NaN stays NaN). */
template <bool kHalf, class D>
HWY_INLINE void StoreNarrow(D d, hn::Vec<D> v, void* base, size_t i) {
  const hn::Rebind<uint16_t, D> d16;
  uint16_t* at = static_cast<uint16_t*>(base) + i;
  if constexpr (kHalf) {
    const hn::Rebind<hwy::float16_t, D> dh;
    hn::StoreU(hn::BitCast(d16, hn::DemoteTo(dh, v)), d16, at);  // F16C: RNE
  } else {
    // Highway 1.0.3's bf16 DemoteTo truncates: round the bits (lsb + 0x7fff), but truncate NaN (keeps it NaN).
    const hn::RebindToUnsigned<D> du;
    const hn::RebindToSigned<D> di;
    const auto bits = hn::BitCast(du, v);
    const auto lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
    const auto increment = hn::IfThenZeroElse(hn::RebindMask(du, hn::IsNaN(v)), hn::Add(lsb, hn::Set(du, 0x7fffu)));
    const auto high = hn::ShiftRight<16>(hn::Add(bits, increment));
    hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, high)), d16, at);
  }
}

/** roundToHf32 (core/hf32.h) on every lane: + 0x800 then clear the low 12 bits, Inf and NaN unchanged. */
template <class D>
HWY_INLINE hn::Vec<D> RoundHf32(D d, hn::Vec<D> v) {
  const hn::RebindToUnsigned<D> du;
  const auto bits = hn::BitCast(du, v);
  const auto exponent = hn::Set(du, 0x7F800000u);
  const auto special = hn::Eq(hn::And(bits, exponent), exponent);
  const auto rounded = hn::And(hn::Add(bits, hn::Set(du, 0x800u)), hn::Set(du, ~0xFFFu));
  return hn::BitCast(d, hn::IfThenElse(special, bits, rounded));
}

template <bool kHalf>
void StreamDotsTyped(const void* x, const void* gin, size_t streams, size_t hidden, float* gPre) {
  const DF d;
  const size_t lanes = hn::Lanes(d);
  for (size_t i = 0; i < streams; ++i) {
    const size_t base = i * hidden;
    auto acc0 = hn::Zero(d), acc1 = hn::Zero(d), acc2 = hn::Zero(d), acc3 = hn::Zero(d);
    size_t k = 0;
    for (; k + 4 * lanes <= hidden; k += 4 * lanes) {
      acc0 = hn::MulAdd(LoadWide<kHalf>(d, gin, k), LoadWide<kHalf>(d, x, base + k), acc0);
      acc1 = hn::MulAdd(LoadWide<kHalf>(d, gin, k + lanes), LoadWide<kHalf>(d, x, base + k + lanes), acc1);
      acc2 = hn::MulAdd(LoadWide<kHalf>(d, gin, k + 2 * lanes), LoadWide<kHalf>(d, x, base + k + 2 * lanes), acc2);
      acc3 = hn::MulAdd(LoadWide<kHalf>(d, gin, k + 3 * lanes), LoadWide<kHalf>(d, x, base + k + 3 * lanes), acc3);
    }
    for (; k + lanes <= hidden; k += lanes) {
      acc0 = hn::MulAdd(LoadWide<kHalf>(d, gin, k), LoadWide<kHalf>(d, x, base + k), acc0);
    }
    HWY_ALIGN float part[HWY_MAX_BYTES / sizeof(float)];
    hn::Store(hn::Add(hn::Add(acc0, acc1), hn::Add(acc2, acc3)), d, part);
    float sum = 0.0f;
    for (size_t lane = 0; lane < lanes; ++lane) sum += part[lane];
    const hn::CappedTag<float, 1> d1;
    float tail = 0.0f;
    for (; k < hidden; ++k) {
      tail += hn::GetLane(LoadWide<kHalf>(d1, gin, k)) * hn::GetLane(LoadWide<kHalf>(d1, x, base + k));
    }
    gPre[i] = sum + tail;
  }
}

bool StreamDots(bool half, const void* x, const void* gin, size_t streams, size_t hidden, float* gPre) {
  if (half && !kExactHalf) return false;
  if (half) {
    StreamDotsTyped<true>(x, gin, streams, hidden, gPre);
  } else {
    StreamDotsTyped<false>(x, gin, streams, hidden, gPre);
  }
  return true;
}

template <bool kHalf>
void StageXgTyped(const void* x, size_t ldx, const float* gamma, size_t rows, size_t cols, bool hf32, float* xg,
                  size_t ldxg) {
  const DF d;
  const size_t lanes = hn::Lanes(d);
  for (size_t r = 0; r < rows; ++r) {
    float* out = xg + r * ldxg;
    const size_t rowStart = r * ldx;
    size_t c = 0;
    for (; c + lanes <= cols; c += lanes) {
      auto v = LoadWide<kHalf>(d, x, rowStart + c);
      if (gamma != nullptr) v = hn::Mul(v, hn::LoadU(d, gamma + c));
      if (hf32) v = RoundHf32(d, v);
      hn::StoreU(v, d, out + c);
    }
    const hn::CappedTag<float, 1> d1;
    for (; c < cols; ++c) {
      auto v = LoadWide<kHalf>(d1, x, rowStart + c);
      if (gamma != nullptr) v = hn::Mul(v, hn::LoadU(d1, gamma + c));
      if (hf32) v = RoundHf32(d1, v);
      hn::StoreU(v, d1, out + c);
    }
  }
}

bool StageXg(bool half, const void* x, size_t ldx, const float* gamma, size_t rows, size_t cols, bool hf32, float* xg,
             size_t ldxg) {
  if (half && !kExactHalf) return false;
  if (half) {
    StageXgTyped<true>(x, ldx, gamma, rows, cols, hf32, xg, ldxg);
  } else {
    StageXgTyped<false>(x, ldx, gamma, rows, cols, hf32, xg, ldxg);
  }
  return true;
}

template <bool kHalf, class D>
HWY_INLINE void GradXVector(D d, const MhcGradXRow& row, size_t c) {
  const auto xf = LoadWide<kHalf>(d, row.x, c);
  const auto dxg = hn::LoadU(d, row.dxg + c);
  const auto hin = hn::Mul(LoadWide<kHalf>(d, row.gin, c), hn::Set(d, row.hPre));
  const auto rms = hn::Mul(xf, hn::Set(d, row.rmsCoef));
  const auto mm = row.gamma != nullptr ? hn::Mul(hn::LoadU(d, row.gamma + c), dxg) : dxg;
  auto sum = hn::Add(hn::Add(hin, rms), mm);
  if (row.gradXPost != nullptr) sum = hn::Add(sum, LoadWide<kHalf>(d, row.gradXPost, c));
  if (row.gammaSum != nullptr) {
    hn::StoreU(hn::Add(hn::LoadU(d, row.gammaSum + c), hn::Mul(xf, dxg)), d, row.gammaSum + c);
  }
  StoreNarrow<kHalf>(d, sum, row.gradX, c);
}

template <bool kHalf>
void GradXRowTyped(const MhcGradXRow& row, size_t n) {
  const DF d;
  const size_t lanes = hn::Lanes(d);
  size_t c = 0;
  for (; c + lanes <= n; c += lanes) GradXVector<kHalf>(d, row, c);
  const hn::CappedTag<float, 1> d1;
  for (; c < n; ++c) GradXVector<kHalf>(d1, row, c);
}

bool GradXRow(bool half, const MhcGradXRow& row, size_t n) {
  if (half && !kExactHalf) return false;
  if (half) {
    GradXRowTyped<true>(row, n);
  } else {
    GradXRowTyped<false>(row, n);
  }
  return true;
}

// Register blocks of the two matmuls: kR rows x 2 vectors of accumulators (AVX2 has 16 registers: 12 + 2 + 1).
#if HWY_TARGET == HWY_AVX2 || !HWY_NATIVE_FMA
constexpr size_t kRows = 6;
#else
constexpr size_t kRows = 8;
#endif

// dxg rows [r0, r0 + kR) x columns [c, c + 2 vectors): fma chains over f.
template <size_t kR>
HWY_INLINE void DxgTile(const float* HWY_RESTRICT dm, size_t fusion, size_t r0, const float* HWY_RESTRICT phi,
                        size_t ldPhi, size_t c, float* HWY_RESTRICT dxg, size_t ldDxg) {
  const DF d;
  const size_t lanes = hn::Lanes(d);
  hn::Vec<DF> acc0[kR], acc1[kR];
  for (size_t r = 0; r < kR; ++r) acc0[r] = acc1[r] = hn::Zero(d);
  for (size_t f = 0; f < fusion; ++f) {
    const auto b0 = hn::LoadU(d, phi + f * ldPhi + c);
    const auto b1 = hn::LoadU(d, phi + f * ldPhi + c + lanes);
    for (size_t r = 0; r < kR; ++r) {
      const auto a = hn::Set(d, dm[(r0 + r) * fusion + f]);
      acc0[r] = hn::MulAdd(a, b0, acc0[r]);
      acc1[r] = hn::MulAdd(a, b1, acc1[r]);
    }
  }
  for (size_t r = 0; r < kR; ++r) {
    hn::StoreU(acc0[r], d, dxg + (r0 + r) * ldDxg + c);
    hn::StoreU(acc1[r], d, dxg + (r0 + r) * ldDxg + c + lanes);
  }
}

void DxgBlock(const float* dm, size_t fusion, size_t rows, const float* phi, size_t ldPhi, size_t cols, float* dxg,
              size_t ldDxg) {
  const DF d;
  const size_t step = 2 * hn::Lanes(d);
  const size_t full = cols / step * step;
  for (size_t c = 0; c < full; c += step) {
    size_t r = 0;
    for (; r + kRows <= rows; r += kRows) DxgTile<kRows>(dm, fusion, r, phi, ldPhi, c, dxg, ldDxg);
    for (; r < rows; ++r) DxgTile<1>(dm, fusion, r, phi, ldPhi, c, dxg, ldDxg);
  }
  if (full < cols) {  // the last columns: the same chains one element at a time
    for (size_t r = 0; r < rows; ++r) {
      for (size_t c = full; c < cols; ++c) {
        float acc = 0.0f;
        for (size_t f = 0; f < fusion; ++f) acc = std::fma(dm[r * fusion + f], phi[f * ldPhi + c], acc);
        dxg[r * ldDxg + c] = acc;
      }
    }
  }
}

template <class D>
HWY_INLINE void KahanStore(D d, hn::Vec<D> part, float* sum, float* comp) {
  const auto s = hn::LoadU(d, sum);
  const auto low = hn::LoadU(d, comp);
  const auto y = hn::Sub(part, low);
  const auto t = hn::Add(s, y);
  hn::StoreU(hn::Sub(hn::Sub(t, s), y), d, comp);
  hn::StoreU(t, d, sum);
}

// grad_phi rows [f0, f0 + kR) x columns [c, c + 2 vectors): fma chains over the block's tokens, then Kahan-added.
template <size_t kR>
HWY_INLINE void PhiGradTile(const float* HWY_RESTRICT dm, size_t fusion, size_t rows, size_t f0,
                            const float* HWY_RESTRICT xg, size_t ldXg, size_t c, float* gradPhi, float* comp,
                            size_t ldPhi) {
  const DF d;
  const size_t lanes = hn::Lanes(d);
  hn::Vec<DF> acc0[kR], acc1[kR];
  for (size_t r = 0; r < kR; ++r) acc0[r] = acc1[r] = hn::Zero(d);
  for (size_t t = 0; t < rows; ++t) {
    const auto b0 = hn::LoadU(d, xg + t * ldXg + c);
    const auto b1 = hn::LoadU(d, xg + t * ldXg + c + lanes);
    for (size_t r = 0; r < kR; ++r) {
      const auto a = hn::Set(d, dm[t * fusion + f0 + r]);
      acc0[r] = hn::MulAdd(a, b0, acc0[r]);
      acc1[r] = hn::MulAdd(a, b1, acc1[r]);
    }
  }
  for (size_t r = 0; r < kR; ++r) {
    const size_t at = (f0 + r) * ldPhi + c;
    KahanStore(d, acc0[r], gradPhi + at, comp + at);
    KahanStore(d, acc1[r], gradPhi + at + lanes, comp + at + lanes);
  }
}

void PhiGradBlock(const float* dm, size_t fusion, size_t rows, const float* xg, size_t ldXg, size_t cols,
                  float* gradPhi, float* comp, size_t ldPhi) {
  const DF d;
  const size_t step = 2 * hn::Lanes(d);
  const size_t full = cols / step * step;
  for (size_t c = 0; c < full; c += step) {
    size_t f = 0;
    for (; f + kRows <= fusion; f += kRows) PhiGradTile<kRows>(dm, fusion, rows, f, xg, ldXg, c, gradPhi, comp, ldPhi);
    for (; f < fusion; ++f) PhiGradTile<1>(dm, fusion, rows, f, xg, ldXg, c, gradPhi, comp, ldPhi);
  }
  for (size_t f = 0; f < fusion && full < cols; ++f) {  // the last columns, one element at a time
    for (size_t c = full; c < cols; ++c) {
      float acc = 0.0f;
      for (size_t t = 0; t < rows; ++t) acc = std::fma(dm[t * fusion + f], xg[t * ldXg + c], acc);
      float& sum = gradPhi[f * ldPhi + c];
      float& low = comp[f * ldPhi + c];
      const float y = acc - low;
      const float total = sum + y;
      low = (total - sum) - y;
      sum = total;
    }
  }
}

}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gradkit::kernels {

HWY_EXPORT(StreamDots);
HWY_EXPORT(StageXg);
HWY_EXPORT(GradXRow);
HWY_EXPORT(DxgBlock);
HWY_EXPORT(PhiGradBlock);

namespace {

void streamDotsSimd(aclDataType dtype, const void* x, const void* gin, int64_t streams, int64_t hidden, float* gPre) {
  if (!HWY_DYNAMIC_DISPATCH(StreamDots)(dtype == ACL_FLOAT16, x, gin, static_cast<size_t>(streams),
                                        static_cast<size_t>(hidden), gPre)) {
    mhcStreamDotsScalar(dtype, x, gin, streams, hidden, gPre);
  }
}

void stageXgSimd(aclDataType dtype, const void* x, int64_t ldx, const float* gamma, int64_t rows, int64_t cols,
                 bool hf32, float* xg, int64_t ldxg) {
  if (!HWY_DYNAMIC_DISPATCH(StageXg)(dtype == ACL_FLOAT16, x, static_cast<size_t>(ldx), gamma,
                                     static_cast<size_t>(rows), static_cast<size_t>(cols), hf32, xg,
                                     static_cast<size_t>(ldxg))) {
    mhcStageXgScalar(dtype, x, ldx, gamma, rows, cols, hf32, xg, ldxg);
  }
}

void gradXRowSimd(aclDataType dtype, const MhcGradXRow& row, int64_t n) {
  if (!HWY_DYNAMIC_DISPATCH(GradXRow)(dtype == ACL_FLOAT16, row, static_cast<size_t>(n))) {
    mhcGradXRowScalar(dtype, row, n);
  }
}

void dxgBlockSimd(const float* dm, int64_t fusion, int64_t rows, const float* phi, int64_t ldPhi, int64_t cols,
                  float* dxg, int64_t ldDxg) {
  HWY_DYNAMIC_DISPATCH(DxgBlock)
  (dm, static_cast<size_t>(fusion), static_cast<size_t>(rows), phi, static_cast<size_t>(ldPhi),
   static_cast<size_t>(cols), dxg, static_cast<size_t>(ldDxg));
}

void phiGradBlockSimd(const float* dm, int64_t fusion, int64_t rows, const float* xg, int64_t ldXg, int64_t cols,
                      float* gradPhi, float* comp, int64_t ldPhi) {
  HWY_DYNAMIC_DISPATCH(PhiGradBlock)
  (dm, static_cast<size_t>(fusion), static_cast<size_t>(rows), xg, static_cast<size_t>(ldXg), static_cast<size_t>(cols),
   gradPhi, comp, static_cast<size_t>(ldPhi));
}

}  // namespace

const MhcPreBackwardKernels kMhcPreBackwardSimdKernels{streamDotsSimd, stageXgSimd, gradXRowSimd, dxgBlockSimd,
                                                       phiGradBlockSimd};

}  // namespace gradkit::kernels
#endif  // HWY_ONCE
