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

#include "hwy/cache_control.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {
namespace masked {
namespace hn = hwy::HWY_NAMESPACE;

/** Element formats the masked kernels read and write. */
enum Format : int { kF32 = 0, kF16 = 1, kBF16 = 2 };

/**
 * True where this target converts fp16 exactly (RNE, NaN and Inf kept): x86 from AVX2 on (F16C). Highway 1.0.3
 * emulates fp16 on SSE4 and below by truncation without NaN/Inf handling, so those targets use the scalar kernels.
 */
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
inline constexpr bool kExactHalf = true;
#else
inline constexpr bool kExactHalf = false;
#endif

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
 * f32 -> bf16 bits, round to nearest even; NaN keeps its sign and top payload and is made quiet (as
 * gradkit::floatToBf16). Highway 1.0.3's DemoteTo truncates, so the rounding is done on the integer bits.
 */
template <class D>
HWY_INLINE auto NarrowBf16(D d, hn::Vec<D> v) {
  const hn::RebindToUnsigned<D> du;
  const hn::RebindToSigned<D> di;
  const hn::Rebind<uint16_t, D> d16;
  const auto bits = hn::BitCast(du, v);
  const auto high = hn::ShiftRight<16>(bits);
  const auto rounded = hn::ShiftRight<16>(hn::Add(bits, hn::Add(hn::Set(du, 0x7fffu), hn::And(high, hn::Set(du, 1u)))));
  const auto quietNan = hn::Or(high, hn::Set(du, 0x40u));
  const auto magnitude = hn::BitCast(di, hn::And(bits, hn::Set(du, 0x7fffffffu)));
  const auto isNan = hn::RebindMask(du, hn::Gt(magnitude, hn::Set(di, 0x7f800000)));
  return hn::DemoteTo(d16, hn::BitCast(di, hn::IfThenElse(isNan, quietNan, rounded)));
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
