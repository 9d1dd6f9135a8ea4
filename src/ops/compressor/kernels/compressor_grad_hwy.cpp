// SIMD CompressorGrad kernels, compiled once per Highway target and dispatched at run time. Lanes are channels: every
// lane runs the scalar kernel's operations in the scalar kernel's order (no fused multiply-add anywhere; RNE narrowing
// and exact widening with the scalar NaN rule), so the bits are the scalar bits. Channels past the last whole vector,
// and FLOAT16 on targets without an exact conversion, run the scalar kernels.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/compressor/kernels/compressor_grad_hwy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
//
#include <cstddef>
#include <cstdint>

#include "core/hwy_lanes-inl.h"
#include "hwy/highway.h"
#include "ops/compressor/kernels/compressor_grad_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;

/** Lanes i.. of a FLOAT16 (kHalf) or BF16 buffer widened exactly, NaN quieted as bf16ToFloat / halfToFloat do. */
template <bool kHalf, class D>
HWY_INLINE hn::Vec<D> LoadWide(D d, const void* base, size_t i) {
  const hn::Rebind<uint16_t, D> d16;
  const auto bits = hn::LoadU(d16, static_cast<const uint16_t*>(base) + i);
  if constexpr (kHalf) {
    const hn::Rebind<hwy::float16_t, D> dh;
    return hn::PromoteTo(d, hn::BitCast(dh, bits));
  } else {
    const hn::RebindToUnsigned<D> du;
    const auto wide = hn::ShiftLeft<16>(hn::PromoteTo(du, bits));
    const auto value = hn::BitCast(d, wide);
    return hn::IfThenElse(hn::IsNaN(value), hn::BitCast(d, hn::Or(wide, hn::Set(du, 0x400000u))), value);
  }
}

/** BF16 bits of every lane in the low half of a u32 lane: RNE, NaN truncated with its quiet bit set (floatToBf16). */
template <class D>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<D>> Bf16Bits(D d, hn::Vec<D> v) {
  const hn::RebindToUnsigned<D> du;
  const auto bits = hn::BitCast(du, v);
  const auto lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
  const auto rounded = hn::ShiftRight<16>(hn::Add(bits, hn::Add(lsb, hn::Set(du, 0x7fffu))));
  const auto nan = hn::Or(hn::ShiftRight<16>(bits), hn::Set(du, 0x40u));
  return hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), nan, rounded);
}

/** Stores lanes at element i of a FLOAT16 (kHalf) or BF16 buffer, rounded to nearest even as floatToHalf / floatToBf16.
 */
template <bool kHalf, class D>
HWY_INLINE void StoreNarrow(D d, hn::Vec<D> v, void* base, size_t i) {
  const hn::Rebind<uint16_t, D> d16;
  uint16_t* at = static_cast<uint16_t*>(base) + i;
  if constexpr (kHalf) {
    const hn::Rebind<hwy::float16_t, D> dh;
    hn::StoreU(hn::BitCast(d16, hn::DemoteTo(dh, v)), d16, at);
  } else {
    const hn::RebindToSigned<D> di;
    hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, Bf16Bits(d, v))), d16, at);
  }
}

/** Dekker's TwoProduct per lane (Veltkamp split with 4097), as the scalar twoProduct. */
template <class D>
HWY_INLINE void TwoProduct(D d, hn::Vec<D> a, hn::Vec<D> b, hn::Vec<D>& hi, hn::Vec<D>& lo) {
  const auto splitter = hn::Set(d, 4097.0f);
  const auto ca = hn::Mul(splitter, a);
  const auto aHi = hn::Sub(ca, hn::Sub(ca, a));
  const auto aLo = hn::Sub(a, aHi);
  const auto cb = hn::Mul(splitter, b);
  const auto bHi = hn::Sub(cb, hn::Sub(cb, b));
  const auto bLo = hn::Sub(b, bHi);
  hi = hn::Mul(a, b);
  lo = hn::Sub(hn::Mul(aLo, bLo),
               hn::Sub(hn::Sub(hn::Sub(hi, hn::Mul(aHi, bHi)), hn::Mul(aLo, bHi)), hn::Mul(aHi, bLo)));
}

/** Knuth's TwoSum per lane, as the scalar twoSum. */
template <class D>
HWY_INLINE void TwoSum(D d, hn::Vec<D> a, hn::Vec<D> b, hn::Vec<D>& sum, hn::Vec<D>& err) {
  sum = hn::Add(a, b);
  const auto bVirtual = hn::Sub(sum, a);
  const auto aVirtual = hn::Sub(sum, bVirtual);
  err = hn::Add(hn::Sub(a, aVirtual), hn::Sub(b, bVirtual));
}

/** The channels [0, vectorWidth) this target handles; the scalar kernel takes the rest. */
size_t VectorWidth(int64_t width) {
  const DF d;
  const size_t lanes = hn::Lanes(d);
  return static_cast<size_t>(width) / lanes * lanes;
}

size_t ColumnSums(const CompressorGradBlock& block, float* wHi, float* wLo) {
  const DF d;
  const size_t lanes = hn::Lanes(d), width = VectorWidth(block.width);
  const size_t rows = static_cast<size_t>(block.rows), ld = static_cast<size_t>(block.ld);
  for (size_t c = 0; c < width; c += lanes) {
    auto sum = hn::Zero(d), errors = hn::Zero(d);
    for (size_t n = 0; n < rows; ++n) {
      hn::Vec<DF> product, productErr, next, sumErr;
      TwoProduct(d, hn::LoadU(d, block.s + n * ld + c), hn::LoadU(d, block.k + n * ld + c), product, productErr);
      TwoSum(d, sum, product, next, sumErr);
      sum = next;
      errors = hn::Add(errors, hn::Add(sumErr, productErr));
    }
    hn::StoreU(sum, d, wHi + c);
    hn::StoreU(errors, d, wLo + c);
  }
  return width;
}

template <bool kHalf>
size_t RouteTyped(const CompressorGradRoute& r) {
  const DF d;
  const size_t lanes = hn::Lanes(d), width = VectorWidth(r.block.width);
  const size_t ld = static_cast<size_t>(r.block.ld);
  for (int64_t i = 0; i < r.count; ++i) {
    const int64_t row = r.r0 + i;
    const size_t n = static_cast<size_t>(row * r.coff + r.h);
    const float* s = r.block.s + n * ld;
    const float* k = r.block.k + n * ld;
    float* aKv = r.aKv + i * r.ldA;
    float* aScore = r.aScore + i * r.ldA;
    float* apeSum = r.apeSum + row * r.ldApe;
    float* apeComp = r.apeComp + row * r.ldApe;
    for (size_t c = 0; c < width; c += lanes) {
      const auto dc = LoadWide<kHalf>(d, r.dC, c);
      const auto sv = hn::LoadU(d, s + c);
      const auto dk = hn::Mul(dc, sv);
      const auto kv = hn::LoadU(d, k + c);
      hn::Vec<DF> diff, err;
      TwoSum(d, kv, hn::Neg(hn::LoadU(d, r.wHi + c)), diff, err);
      const auto low = hn::Sub(err, hn::LoadU(d, r.wLo + c));
      const auto dz = hn::Mul(sv, hn::Add(hn::Mul(dc, diff), hn::Mul(dc, low)));
      hn::StoreU(dk, d, aKv + c);
      hn::StoreU(dz, d, aScore + c);
      const auto sum = hn::LoadU(d, apeSum + c);
      const auto comp = hn::LoadU(d, apeComp + c);
      const auto y = hn::Sub(dz, comp);
      const auto t = hn::Add(sum, y);
      hn::StoreU(hn::Sub(hn::Sub(t, sum), y), d, apeComp + c);
      hn::StoreU(t, d, apeSum + c);
    }
  }
  return width;
}

// Returns the channels handled, or SIZE_MAX when this target leaves the whole route to the scalar kernel.
size_t Route(bool half, const CompressorGradRoute& r) {
  if (half && !kExactHalf) return SIZE_MAX;
  return half ? RouteTyped<true>(r) : RouteTyped<false>(r);
}

template <bool kHalf>
size_t WidenTyped(const void* from, float* to, size_t count) {
  const DF d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + 4 * lanes <= count; i += 4 * lanes) {
    const auto v0 = LoadWide<kHalf>(d, from, i);
    const auto v1 = LoadWide<kHalf>(d, from, i + lanes);
    const auto v2 = LoadWide<kHalf>(d, from, i + 2 * lanes);
    const auto v3 = LoadWide<kHalf>(d, from, i + 3 * lanes);
    hn::StoreU(v0, d, to + i);
    hn::StoreU(v1, d, to + i + lanes);
    hn::StoreU(v2, d, to + i + 2 * lanes);
    hn::StoreU(v3, d, to + i + 3 * lanes);
  }
  for (; i + lanes <= count; i += lanes) hn::StoreU(LoadWide<kHalf>(d, from, i), d, to + i);
  return i;
}

size_t Widen(bool half, const void* from, float* to, size_t count) {
  if (half && !kExactHalf) return 0;
  return half ? WidenTyped<true>(from, to, count) : WidenTyped<false>(from, to, count);
}

template <bool kHalf>
size_t NarrowTyped(const float* from, void* to, size_t count) {
  const DF d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + 2 * lanes <= count; i += 2 * lanes) {
    const auto v0 = hn::LoadU(d, from + i);
    const auto v1 = hn::LoadU(d, from + i + lanes);
    StoreNarrow<kHalf>(d, v0, to, i);
    StoreNarrow<kHalf>(d, v1, to, i + lanes);
  }
  for (; i + lanes <= count; i += lanes) StoreNarrow<kHalf>(d, hn::LoadU(d, from + i), to, i);
  return i;
}

size_t Narrow(bool half, const float* from, void* to, size_t count) {
  if (half && !kExactHalf) return 0;
  return half ? NarrowTyped<true>(from, to, count) : NarrowTyped<false>(from, to, count);
}

}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gradkit::kernels {

HWY_EXPORT(ColumnSums);
HWY_EXPORT(Route);
HWY_EXPORT(Widen);
HWY_EXPORT(Narrow);

namespace {

const CompressorGradKernels& scalar() { return kCompressorGradScalarKernels; }

void columnSumsSimd(const CompressorGradBlock& block, float* wHi, float* wLo) {
  const auto done = static_cast<int64_t>(HWY_DYNAMIC_DISPATCH(ColumnSums)(block, wHi, wLo));
  if (done == block.width) return;
  CompressorGradBlock rest = block;
  rest.s += done, rest.k += done, rest.width -= done;
  scalar().columnSums(rest, wHi + done, wLo + done);
}

void routeSimd(const CompressorGradRoute& route) {
  const size_t handled = HWY_DYNAMIC_DISPATCH(Route)(route.half, route);
  if (handled == SIZE_MAX) return scalar().route(route);
  const auto done = static_cast<int64_t>(handled);
  if (done == route.block.width) return;
  CompressorGradRoute rest = route;
  rest.block.s += done, rest.block.k += done, rest.block.width -= done;
  rest.dC = static_cast<const uint16_t*>(route.dC) + done;
  rest.wHi += done, rest.wLo += done, rest.aKv += done, rest.aScore += done, rest.apeSum += done, rest.apeComp += done;
  scalar().route(rest);
}

void widenSimd(bool half, const void* from, float* to, int64_t count) {
  const auto done = static_cast<int64_t>(HWY_DYNAMIC_DISPATCH(Widen)(half, from, to, static_cast<size_t>(count)));
  if (done < count) scalar().widen(half, static_cast<const uint16_t*>(from) + done, to + done, count - done);
}

void narrowSimd(bool half, const float* from, void* to, int64_t count) {
  const auto done = static_cast<int64_t>(HWY_DYNAMIC_DISPATCH(Narrow)(half, from, to, static_cast<size_t>(count)));
  if (done < count) scalar().narrow(half, from + done, static_cast<uint16_t*>(to) + done, count - done);
}

}  // namespace

const CompressorGradKernels kCompressorGradSimdKernels{columnSumsSimd, routeSimd, widenSimd, narrowSimd};

}  // namespace gradkit::kernels
#endif  // HWY_ONCE
