// The Highway softmax kernels of flash attention (fa_softmax.h), compiled once per target and dispatched at run time.
// x86 targets from AVX2 on (native FMA, 256-bit vectors) run 8 columns at a time, one vector lane per stripe, with
// the operations of fa_softmax_scalar.cpp in the same order; the rest of a row (fewer than 8 columns) and every
// other target run the scalar steps, so the bits are the scalar kernels' bits. The dropout's Philox stream runs 4
// blocks per vector there (integer operations: the scalar bytes).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/flash_attention/kernels/fa_softmax_hwy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
//
#include <algorithm>
#include <cfloat>
#include <cstdint>
#include <cstring>
#include <limits>

#include "core/hwy_lanes-inl.h"
#include "core/philox.h"
#include "hwy/highway.h"
#include "ops/flash_attention/kernels/fa_exp-inl.h"
#include "ops/flash_attention/kernels/fa_run.h"
#include "ops/flash_attention/kernels/fa_softmax.h"
#include "ops/flash_attention/kernels/fa_tile.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2

using D8 = hn::FixedTag<float, kFaStripes>;
using V8 = hn::Vec<D8>;

HWY_INLINE V8 Exp8(V8 x) { return FaExpVec(D8(), x); }

#if HWY_TARGET <= HWY_AVX3
// 16 columns per step where vectors hold 16 floats: the element-wise work (scale, exp, division) runs on the whole
// vector and each half joins the stripes in column order (columns j..j+7, then j+8..j+15), so the bits stay the
// 8-lane kernel's. Zen 5 runs 512-bit vectors at full width: the forward's exp pass took about 40 % of a bf16 call.
constexpr int64_t kWide = 2 * kFaStripes;
using D16 = hn::FixedTag<float, kWide>;
using V16 = hn::Vec<D16>;
#endif

/** The stripe max step of fa_softmax.h on 8 stripes at once: v holds the next 8 columns. */
HWY_INLINE V8 JoinMax(V8 top, V8 v) { return hn::IfThenElse(hn::Or(hn::Gt(v, top), hn::IsNaN(v)), v, top); }
/** The stripe sums' step: v holds the next 8 columns. */
HWY_INLINE V8 JoinSum(V8 sum, V8 v) { return hn::Add(sum, v); }
#if HWY_TARGET <= HWY_AVX3
/** The same steps for 16 columns: the low half's 8, then the high half's. */
HWY_INLINE V8 JoinMax(V8 top, V16 v) { return JoinMax(JoinMax(top, hn::LowerHalf(D8(), v)), hn::UpperHalf(D8(), v)); }
HWY_INLINE V8 JoinSum(V8 sum, V16 v) { return JoinSum(JoinSum(sum, hn::LowerHalf(D8(), v)), hn::UpperHalf(D8(), v)); }
#endif

/** Columns [j, j + Lanes(d)) of kR rows: scaled in place, joined to their stripe maxima. */
template <size_t kR, class D>
HWY_INLINE void ScaleMaxStep(D d, float* const* rows, int64_t j, float scale, V8* top) {
  for (size_t i = 0; i < kR; ++i) {
    const auto v = hn::Mul(hn::LoadU(d, rows[i] + j), hn::Set(d, scale));
    hn::StoreU(v, d, rows[i] + j);
    top[i] = JoinMax(top[i], v);
  }
}

/** Columns [j, j + Lanes(d)) of kR rows: replaced by exp(s - m[i]), joined to their stripe sums. */
template <size_t kR, class D>
HWY_INLINE void ExpSumStep(D d, float* const* rows, int64_t j, const float* m, V8* sum) {
  for (size_t i = 0; i < kR; ++i) {
    const auto e = FaExpVec(d, hn::Sub(hn::LoadU(d, rows[i] + j), hn::Set(d, m[i])));
    hn::StoreU(e, d, rows[i] + j);
    sum[i] = JoinSum(sum[i], e);
  }
}

/**
 * step(d, j) over the whole 8-column groups of a row of `cols` (the rest is the scalar steps'): 16 columns at a time
 * (d of 16 lanes) where vectors hold 16 floats, then 8.
 */
template <class Step>
HWY_INLINE void ForEachColumnStep(int64_t cols, const Step& step) {
  const int64_t full = cols / kFaStripes * kFaStripes;
  int64_t j = 0;
#if HWY_TARGET <= HWY_AVX3
  for (; j + kWide <= full; j += kWide) step(D16(), j);
#endif
  for (; j < full; j += kFaStripes) step(D8(), j);
}

/** Columns [0, Lanes(d)) at s: P = flush(exp(s * scale - m) / l), fa_softmax.h's backward step. */
template <class D>
HWY_INLINE void BackwardStep(D d, float* s, float scale, float m, float l) {
  const auto v = hn::Sub(hn::Mul(hn::LoadU(d, s), hn::Set(d, scale)), hn::Set(d, m));
  hn::StoreU(FaExpVecOps<D>{}.flushSubnormal(hn::Div(FaExpVec(d, v), hn::Set(d, l))), d, s);
}

bool ForwardRows(const FaForwardRows& t) {
  const D8 d;
  const float inf = std::numeric_limits<float>::infinity();
  const int64_t full = t.cols / kFaStripes * kFaStripes;
  HWY_ALIGN float part[kFaStripes];
  for (int64_t r0 = 0; r0 < t.rows; r0 += 2) {
    const int64_t count = std::min<int64_t>(2, t.rows - r0);
    float* rows[2] = {t.s + r0 * t.ld, t.s + (r0 + count - 1) * t.ld};
    // Two rows at once where there are two: their dependent stripe chains overlap in the core.
    V8 top[2] = {hn::Set(d, -inf), hn::Set(d, -inf)}, sum[2] = {hn::Zero(d), hn::Zero(d)};
    if (count == 2) {
      ForEachColumnStep(t.cols, [&](auto dj, int64_t j) { ScaleMaxStep<2>(dj, rows, j, t.scale, top); });
    } else {
      ForEachColumnStep(t.cols, [&](auto dj, int64_t j) { ScaleMaxStep<1>(dj, rows, j, t.scale, top); });
    }
    float m[2];
    bool live[2] = {false, false};
    for (int64_t i = 0; i < count; ++i) {
      const int64_t r = r0 + i;
      hn::Store(top[i], d, part);
      fa_detail::scaleMaxTail(rows[i], full, t.cols, t.scale, part);
      m[i] = fa_detail::newRowMax(t.rowMax[r], faReduceMax(part), &t.rowAlpha[r]);
      t.rowMax[r] = m[i];
      live[i] = m[i] != -inf;
      if (!live[i]) std::fill(rows[i], rows[i] + t.cols, 0.0f);
    }
    if (count == 2 && live[0] && live[1]) {
      ForEachColumnStep(t.cols, [&](auto dj, int64_t j) { ExpSumStep<2>(dj, rows, j, m, sum); });
    } else {
      for (int64_t i = 0; i < count; ++i) {
        if (!live[i]) continue;
        ForEachColumnStep(t.cols, [&](auto dj, int64_t j) { ExpSumStep<1>(dj, rows + i, j, m + i, sum + i); });
      }
    }
    for (int64_t i = 0; i < count; ++i) {
      if (!live[i]) continue;
      const int64_t r = r0 + i;
      hn::Store(sum[i], d, part);
      fa_detail::expSumTail(rows[i], full, t.cols, m[i], part);
      t.rowSum[r] = t.rowSum[r] * t.rowAlpha[r] + faReduceSum(part);
    }
  }
  return true;
}

bool BackwardRows(const FaBackwardRows& t) {
  const int64_t full = t.cols / kFaStripes * kFaStripes;
  for (int64_t r = 0; r < t.rows; ++r) {
    float* s = t.s + r * t.ld;
    const float m = t.rowMax[r], l = t.rowSum[r];
    if (m == -FLT_MAX) {  // a fully masked row: P = 0 (backwardTail's rule)
      fa_detail::backwardTail(s, 0, t.cols, t.scale, m, l);
      continue;
    }
    ForEachColumnStep(t.cols, [&](auto dj, int64_t j) { BackwardStep(dj, s + j, t.scale, m, l); });
    fa_detail::backwardTail(s, full, t.cols, t.scale, m, l);
  }
  return true;
}

bool ExpN(const float* x, float* y, int64_t count) {
  const D8 d;
  int64_t i = 0;
  for (; i + kFaStripes <= count; i += kFaStripes) hn::StoreU(Exp8(hn::LoadU(d, x + i)), d, y + i);
  for (; i < count; ++i) y[i] = faExpScalar(x[i]);
  return true;
}

/** Philox4x32-7 on 4 blocks at a time: each 64-bit lane holds one block's word in its low half (MulEven reads only
 *  the low halves, so the high halves may hold anything between rounds). Integer operations: the scalar bits. */
bool PhiloxBytes(const FaDropout& dropout, uint64_t firstBlock, int64_t blocks, uint8_t* out) {
  using D64 = hn::FixedTag<uint64_t, 4>;
  const D64 d64;
  const hn::Repartition<uint32_t, D64> d32;
  using V = hn::Vec<D64>;
  const philox::Counter base = {static_cast<uint32_t>(dropout.counterLow),
                                static_cast<uint32_t>(dropout.counterLow >> 32), 0, 0};
  const auto keys = philox::roundKeys<7>({dropout.key[0], dropout.key[1]});
  const auto m0 = hn::Set(d32, philox::kM0), m1 = hn::Set(d32, philox::kM1);
  int64_t t = 0;
  for (; t + 4 <= blocks; t += 4) {
    HWY_ALIGN uint64_t words[4][4];
    for (int lane = 0; lane < 4; ++lane) {
      const philox::Counter c = philox::addToCounter(base, firstBlock + static_cast<uint64_t>(t + lane));
      for (int w = 0; w < 4; ++w) words[w][lane] = c[w];
    }
    V c0 = hn::Load(d64, words[0]), c1 = hn::Load(d64, words[1]);
    V c2 = hn::Load(d64, words[2]), c3 = hn::Load(d64, words[3]);
    for (const philox::Key& key : keys) {
      const V p0 = hn::MulEven(hn::BitCast(d32, c0), m0);
      const V p1 = hn::MulEven(hn::BitCast(d32, c2), m1);
      c0 = hn::Xor(hn::Xor(hn::ShiftRight<32>(p1), c1), hn::Set(d64, key[0]));
      c1 = p1;
      c2 = hn::Xor(hn::Xor(hn::ShiftRight<32>(p0), c3), hn::Set(d64, key[1]));
      c3 = p0;
    }
    hn::Store(c0, d64, words[0]);
    hn::Store(c1, d64, words[1]);
    hn::Store(c2, d64, words[2]);
    hn::Store(c3, d64, words[3]);
    for (int lane = 0; lane < 4; ++lane) {
      for (int w = 0; w < 4; ++w) {
        const auto word = static_cast<uint32_t>(words[w][lane]);
        std::memcpy(out + 16 * (t + lane) + 4 * w, &word, 4);  // x86: least significant byte first
      }
    }
  }
  if (t < blocks) faPhiloxBytesScalar(dropout, firstBlock + static_cast<uint64_t>(t), blocks - t, out + 16 * t);
  return true;
}

bool RoundRowsToBf16(const float* src, int64_t ld, int64_t rows, int64_t cols, uint16_t* dst, int64_t dstLd) {
  for (int64_t r = 0; r < rows; ++r) NarrowRow<false>(src + r * ld, cols, dst + r * dstLd);
  return true;
}

#else

bool RoundRowsToBf16(const float*, int64_t, int64_t, int64_t, uint16_t*, int64_t) { return false; }
bool PhiloxBytes(const FaDropout&, uint64_t, int64_t, uint8_t*) { return false; }
bool ForwardRows(const FaForwardRows&) { return false; }  // the caller runs the scalar kernel
bool BackwardRows(const FaBackwardRows&) { return false; }
bool ExpN(const float*, float*, int64_t) { return false; }

#endif

}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gradkit::kernels {

HWY_EXPORT(ForwardRows);
HWY_EXPORT(BackwardRows);
HWY_EXPORT(ExpN);
HWY_EXPORT(PhiloxBytes);
HWY_EXPORT(RoundRowsToBf16);

namespace {

void forwardRowsSimd(const FaForwardRows& tile) {
  if (HWY_DYNAMIC_DISPATCH(ForwardRows)(tile)) return;
  kFaScalarKernels.forwardRows(tile);
}

void backwardRowsSimd(const FaBackwardRows& tile) {
  if (HWY_DYNAMIC_DISPATCH(BackwardRows)(tile)) return;
  kFaScalarKernels.backwardRows(tile);
}

void expSimd(const float* x, float* y, int64_t count) {
  if (HWY_DYNAMIC_DISPATCH(ExpN)(x, y, count)) return;
  kFaScalarKernels.exp(x, y, count);
}

void philoxBytesSimd(const FaDropout& dropout, uint64_t firstBlock, int64_t blocks, uint8_t* out) {
  if (HWY_DYNAMIC_DISPATCH(PhiloxBytes)(dropout, firstBlock, blocks, out)) return;
  faPhiloxBytesScalar(dropout, firstBlock, blocks, out);
}

}  // namespace

void faRoundRowsToBf16Simd(const float* src, int64_t ld, int64_t rows, int64_t cols, uint16_t* dst, int64_t dstLd) {
  if (HWY_DYNAMIC_DISPATCH(RoundRowsToBf16)(src, ld, rows, cols, dst, dstLd)) return;
  faRoundRowsToBf16(src, ld, rows, cols, dst, dstLd);
}

const FaKernelTable kFaSimdKernels{faRunGemm, forwardRowsSimd, backwardRowsSimd,
                                   expSimd,   philoxBytesSimd, faRoundRowsToBf16Simd};

}  // namespace gradkit::kernels
#endif  // HWY_ONCE
