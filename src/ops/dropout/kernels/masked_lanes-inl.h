// Per-target SIMD pieces shared by the kernels that consume the packed dropout mask (DoMask, V3Grad):
// expanding mask bits to lane masks, walking a range in whole mask bytes, and widening / narrowing
// fp32, fp16 and bf16 lanes exactly. Included once per Highway target (foreach_target), hence the toggle guard.
#if defined(GRADKIT_OPS_DROPOUT_KERNELS_MASKED_LANES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GRADKIT_OPS_DROPOUT_KERNELS_MASKED_LANES_INL_H_
#undef GRADKIT_OPS_DROPOUT_KERNELS_MASKED_LANES_INL_H_
#else
#define GRADKIT_OPS_DROPOUT_KERNELS_MASKED_LANES_INL_H_
#endif

#include <stdint.h>
#include <string.h>

#include <type_traits>

#include "core/hwy_lanes-inl.h"  // kExactHalf: whether this target converts fp16 exactly
#include "hwy/cache_control.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {
namespace masked {
namespace hn = hwy::HWY_NAMESPACE;

/** Element formats the masked kernels read and write. */
enum Format : int { kF32 = 0, kF16 = 1, kBF16 = 2 };

/** The most f32 lanes one vector may have here (the lane-bit table's length and the bits of a uint32). */
inline constexpr size_t kMaxLanes = 16;

/** Lane j of the result is true when bit j of `bits` is set (LSB first). D: an f32 tag of <= kMaxLanes lanes. */
template <class D>
HWY_INLINE auto MaskFromBits(D d, uint32_t bits) {
  const hn::RebindToUnsigned<D> du;
  alignas(64) static constexpr uint32_t kLaneBit[kMaxLanes] = {1u,   2u,   4u,    8u,    16u,   32u,   64u,    128u,
                                                               256u, 512u, 1024u, 2048u, 4096u, 8192u, 16384u, 32768u};
  return hn::RebindMask(d, hn::TestBit(hn::Set(du, bits), hn::Load(du, kLaneBit)));
}

/** Stores `v` at `p`, non-temporally when asked and the vector is a whole 16-byte unit (`p` then aligned). */
template <class D, class V, class T>
HWY_INLINE void StoreOut(D d, V v, T* p, bool stream) {
  if constexpr (sizeof(T) * hn::MaxLanes(D()) >= 16) {
    if (stream) {
      hn::Stream(v, d, p);
      return;
    }
  }
  hn::StoreU(v, d, p);
}

/** Lanes i.. of `base` (format kIn) widened exactly to f32. */
template <int kIn, class D>
HWY_INLINE hn::Vec<D> LoadWide(D d, const void* base, size_t i) {
  if constexpr (kIn == kF32) {
    return hn::LoadU(d, static_cast<const float*>(base) + i);
  } else {
    const hn::Rebind<uint16_t, D> d16;
    const auto bits = hn::LoadU(d16, static_cast<const uint16_t*>(base) + i);
    if constexpr (kIn == kF16) {
      const hn::Rebind<hwy::float16_t, D> dh;
      return hn::PromoteTo(d, hn::BitCast(dh, bits));
    } else {
      const hn::RebindToUnsigned<D> du;
      return hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du, bits)));
    }
  }
}

/**
 * f32 lanes rounded to bf16 (nearest even), as u32 lanes whose upper 16 bits are the bf16 bits. NaN lanes must be
 * quiet (every caller narrows the result of a multiply, which quiets them); they are truncated, which keeps sign
 * and top payload as gradkit::floatToBf16 does. Highway 1.0.3's DemoteTo truncates, hence the integer rounding.
 * kAnyNan = false skips the NaN test: valid when every NaN lane has zero low 16 bits (then the rounding increment
 * cannot carry out of them, so rounding and truncation agree).
 */
template <bool kAnyNan = true, class D>
HWY_INLINE auto RoundBf16High(D d, hn::Vec<D> v) {
  const hn::RebindToUnsigned<D> du;
  const auto bits = hn::BitCast(du, v);
  const auto lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
  auto increment = hn::Add(lsb, hn::Set(du, 0x7fffu));
  if constexpr (kAnyNan) increment = hn::IfThenZeroElse(hn::RebindMask(du, hn::IsNaN(v)), increment);
  return hn::Add(bits, increment);
}

/** f32 lanes -> bf16 bits (see RoundBf16High; quiet NaNs only), one u16 lane per f32 lane. */
template <class D>
HWY_INLINE auto NarrowBf16(D d, hn::Vec<D> v) {
  const hn::RebindToSigned<D> di;
  const hn::Rebind<uint16_t, D> d16;
  return hn::DemoteTo(d16, hn::BitCast(di, hn::ShiftRight<16>(RoundBf16High(d, v))));
}

/** Narrows the f32 lanes `v` to format kOut (RNE) and stores them at element i of `base`. */
template <int kOut, class D>
HWY_INLINE void StoreNarrow(D d, hn::Vec<D> v, void* base, size_t i, bool stream) {
  if constexpr (kOut == kF32) {
    StoreOut(d, v, static_cast<float*>(base) + i, stream);
  } else {
    const hn::Rebind<uint16_t, D> d16;
    uint16_t* at = static_cast<uint16_t*>(base) + i;
    if constexpr (kOut == kF16) {
      const hn::Rebind<hwy::float16_t, D> dh;
      StoreOut(d16, hn::BitCast(d16, hn::DemoteTo(dh, v)), at, stream);  // F16C: RNE, NaN kept quiet
    } else {
      StoreOut(d16, NarrowBf16(d, v), at, stream);
    }
  }
}

/**
 * Calls body(tag, i, laneMask, stream) for every vector of [0, n): `tag` is `d` (full vectors) or a one-lane tag
 * (the last n % Lanes(d) elements), laneMask holds the keep bits of elements i.. from `mask` (element 0 = bit 0 of
 * mask[0]). Reads only the ceil(n / 8) mask bytes of the range. `stream` is passed on for full vectors only.
 * Requires Lanes(d) <= kMaxLanes and a power of two (true for every x86 and Arm target).
 */
template <class D, class Body>
HWY_INLINE void ForEachMaskedVector(D d, const uint8_t* mask, size_t n, bool stream, const Body& body) {
  const size_t lanes = hn::Lanes(d);
  const uint32_t low = lanes >= 32 ? ~0u : (1u << lanes) - 1u;
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {  // 64 elements = one 8-byte load of mask bits
    uint64_t bits;
    memcpy(&bits, mask + i / 8, sizeof(bits));
    for (size_t j = 0; j < 64; j += lanes) {
      body(d, i + j, MaskFromBits(d, static_cast<uint32_t>(bits >> j) & low), stream);
    }
  }
  if (i == n) return;
  uint64_t bits = 0;
  memcpy(&bits, mask + i / 8, (n - i + 7) / 8);
  size_t j = 0;
  for (; i + j + lanes <= n; j += lanes) {
    body(d, i + j, MaskFromBits(d, static_cast<uint32_t>(bits >> j) & low), stream);
  }
  const hn::CappedTag<float, 1> one;
  for (; i + j < n; ++j) body(one, i + j, MaskFromBits(one, static_cast<uint32_t>(bits >> j) & 1u), false);
}

/**
 * bf16 -> bf16 over the whole 64-element blocks of [0, n): each u32 lane holds two neighbouring elements, so the
 * even ones widen with a shift and the odd ones with a mask, and the rounded results recombine with one blend (no
 * cross-lane packing). compute(tag, v, keep) gives the f32 result lanes (quiet NaNs only; kAnyNan as in
 * RoundBf16High). Returns how many elements were done: a multiple of 64, or 0 where a u16 vector does not hold two
 * elements per u32 lane.
 */
template <bool kAnyNan, class Compute>
HWY_INLINE size_t Bf16PairBlocks(const uint16_t* in, const uint8_t* mask, uint16_t* out, size_t n, bool stream,
                                 const Compute& compute) {
#if HWY_TARGET == HWY_SCALAR  // one lane per vector: no pairs
  (void)in, (void)mask, (void)out, (void)n, (void)stream, (void)compute;
  return 0;
#else
  using DF = hn::ScalableTag<float>;
  using DU = hn::RebindToUnsigned<DF>;
  const DF df;
  const DU du;
  const hn::Repartition<uint16_t, DU> d16;
  const size_t step = 2 * hn::Lanes(du);  // elements per vector of pairs
  if (hn::Lanes(d16) != step || step > 2 * kMaxLanes) return 0;
  alignas(64) static constexpr uint32_t kEvenBit[kMaxLanes] = {
      1u << 0,  1u << 2,  1u << 4,  1u << 6,  1u << 8,  1u << 10, 1u << 12, 1u << 14,
      1u << 16, 1u << 18, 1u << 20, 1u << 22, 1u << 24, 1u << 26, 1u << 28, 1u << 30};
  alignas(64) static constexpr uint32_t kOddBit[kMaxLanes] = {
      1u << 1,  1u << 3,  1u << 5,  1u << 7,  1u << 9,  1u << 11, 1u << 13, 1u << 15,
      1u << 17, 1u << 19, 1u << 21, 1u << 23, 1u << 25, 1u << 27, 1u << 29, 1u << 31};
  const auto evenBit = hn::Load(du, kEvenBit);
  const auto oddBit = hn::Load(du, kOddBit);
  const auto highHalf = hn::Set(du, 0xffff0000u);
  const uint32_t low = step >= 32 ? ~0u : (1u << step) - 1u;
  constexpr uintptr_t kPrefetchBytes = 2048;
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    // This loop does about twice the work per byte of the fp32 one; prefetching the input 2 KiB ahead keeps
    // enough loads in flight (about 10% faster on 64M elements here). A prefetch past the end does not fault.
    const uintptr_t ahead = reinterpret_cast<uintptr_t>(in + i) + kPrefetchBytes;  // no pointer past the array
    hwy::Prefetch(reinterpret_cast<const uint8_t*>(ahead));
    hwy::Prefetch(reinterpret_cast<const uint8_t*>(ahead + 64));
    uint64_t bits;
    memcpy(&bits, mask + i / 8, sizeof(bits));
    for (size_t j = 0; j < 64; j += step) {
      const auto pairBits = hn::Set(du, static_cast<uint32_t>(bits >> j) & low);
      const auto pairs = hn::BitCast(du, hn::LoadU(d16, in + i + j));
      const auto even = hn::BitCast(df, hn::ShiftLeft<16>(pairs));
      const auto odd = hn::BitCast(df, hn::And(pairs, highHalf));
      const auto evenOut =
          RoundBf16High<kAnyNan>(df, compute(df, even, hn::RebindMask(df, hn::TestBit(pairBits, evenBit))));
      const auto oddOut =
          RoundBf16High<kAnyNan>(df, compute(df, odd, hn::RebindMask(df, hn::TestBit(pairBits, oddBit))));
      const auto packed = hn::OddEven(hn::BitCast(d16, oddOut), hn::BitCast(d16, hn::ShiftRight<16>(evenOut)));
      StoreOut(d16, packed, out + i + j, stream);
    }
  }
  return i;
#endif
}

/**
 * out[i] = RN_kOut(compute(tag, widen(in[i]), keep_i)) for i in [0, n): the elementwise driver of the masked
 * kernels (element 0 = bit 0 of mask[0]). compute must return quiet NaNs only (a multiply's result). `factor` is
 * the one float operand compute multiplies by: when it is not NaN, every NaN of a bf16 -> bf16 run comes from a bf16
 * input or is the default NaN of Inf * 0, so its low 16 bits are zero and the NaN test of the rounding is skipped.
 * Streams the output when asked (the caller has checked its alignment) and flushes the streaming stores at the end.
 */
template <int kIn, int kOut, class Compute>
HWY_INLINE void RunMasked(const void* in, const uint8_t* mask, void* out, size_t n, bool stream, float factor,
                          const Compute& compute) {
  size_t done = 0;
  if constexpr (kIn == kBF16 && kOut == kBF16) {
    const auto* from = static_cast<const uint16_t*>(in);
    auto* to = static_cast<uint16_t*>(out);
    done = factor != factor ? Bf16PairBlocks<true>(from, mask, to, n, stream, compute)
                            : Bf16PairBlocks<false>(from, mask, to, n, stream, compute);
  }
  const hn::ScalableTag<float> d;
  ForEachMaskedVector(d, mask + done / 8, n - done, stream, [&](auto tag, size_t i, auto keep, bool streamHere) {
    StoreNarrow<kOut>(tag, compute(tag, LoadWide<kIn>(tag, in, done + i), keep), out, done + i, streamHere);
  });
  if (stream) hwy::FlushStream();
}

/**
 * Calls fn(std::integral_constant<int, kIn>, std::integral_constant<int, kOut>) for the run-time formats, so that a
 * kernel is instantiated for each of the nine pairs; false (nothing called) for a format this target cannot run
 * exactly or a vector longer than kMaxLanes (the caller then runs the scalar kernel).
 */
template <class Fn>
HWY_INLINE bool WithFormats(int in, int out, const Fn& fn) {
  if (hn::Lanes(hn::ScalableTag<float>()) > kMaxLanes) return false;
  if (!kExactHalf && (in == kF16 || out == kF16)) return false;
  using F32 = std::integral_constant<int, kF32>;
  using F16 = std::integral_constant<int, kF16>;
  using BF16 = std::integral_constant<int, kBF16>;
  switch (in * 3 + out) {
    case kF32 * 3 + kF32:
      return fn(F32(), F32()), true;
    case kF32 * 3 + kF16:
      return fn(F32(), F16()), true;
    case kF32 * 3 + kBF16:
      return fn(F32(), BF16()), true;
    case kF16 * 3 + kF32:
      return fn(F16(), F32()), true;
    case kF16 * 3 + kF16:
      return fn(F16(), F16()), true;
    case kF16 * 3 + kBF16:
      return fn(F16(), BF16()), true;
    case kBF16 * 3 + kF32:
      return fn(BF16(), F32()), true;
    case kBF16 * 3 + kF16:
      return fn(BF16(), F16()), true;
    case kBF16 * 3 + kBF16:
      return fn(BF16(), BF16()), true;
    default:
      return false;
  }
}

/** True when streaming stores may be used from `out` on: a 64-byte aligned start. */
HWY_INLINE bool CanStream(const void* out) { return (reinterpret_cast<uintptr_t>(out) & 63u) == 0; }

}  // namespace masked
}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
