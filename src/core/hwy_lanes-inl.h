// Per-target numeric facts the Highway kernels of every operator share: whether the target converts FLOAT16 exactly,
// core/hf32.h's HF32 rounding on vector lanes, and the exact widening / RNE narrowing of 16-bit float lanes. Included
// once per Highway target (foreach_target) inside the including file's namespace chain, hence the toggle guard; it
// defines them in gradkit::kernels::HWY_NAMESPACE.
#if defined(GRADKIT_CORE_HWY_LANES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GRADKIT_CORE_HWY_LANES_INL_H_
#undef GRADKIT_CORE_HWY_LANES_INL_H_
#else
#define GRADKIT_CORE_HWY_LANES_INL_H_
#endif

#include <cstdint>

#include "gradkit/float_convert.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {

/**
 * True where this target converts FLOAT16 exactly (RNE, NaN and Inf kept, as floatToHalf / halfToFloat): x86 from
 * AVX2 on (F16C). Highway 1.0.3 emulates the conversion by truncation on older targets, which therefore run the
 * scalar kernels for FLOAT16.
 */
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
inline constexpr bool kExactHalf = true;
#else
inline constexpr bool kExactHalf = false;
#endif

/** roundToHf32 (core/hf32.h) on every lane: + 0x800 then clear the low 12 bits, Inf and NaN unchanged. */
template <class D>
HWY_INLINE hwy::HWY_NAMESPACE::Vec<D> RoundHf32(D d, hwy::HWY_NAMESPACE::Vec<D> v) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::RebindToUnsigned<D> du;
  const auto bits = hn::BitCast(du, v);
  const auto exponent = hn::Set(du, 0x7F800000u);
  const auto special = hn::Eq(hn::And(bits, exponent), exponent);
  const auto rounded = hn::And(hn::Add(bits, hn::Set(du, 0x800u)), hn::Set(du, ~0xFFFu));
  return hn::BitCast(d, hn::IfThenElse(special, bits, rounded));
}

/**
 * The lanes of d (float) from as many 16-bit floats at `from`, widened exactly: FLOAT16 bits when kHalf (only where
 * kExactHalf), BF16 bits otherwise.
 */
template <bool kHalf, class D>
HWY_INLINE hwy::HWY_NAMESPACE::Vec<D> WidenBits(D d, const uint16_t* from) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::Rebind<uint16_t, D> d16;
  const auto bits = hn::LoadU(d16, from);
  if constexpr (kHalf) {
    const hn::Rebind<hwy::float16_t, D> dh;
    return hn::PromoteTo(d, hn::BitCast(dh, bits));
  } else {
    const hn::RebindToUnsigned<D> du;
    return hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du, bits)));
  }
}

/** The BF16 rounding of every lane (RNE; NaN stays NaN with its sign, top payload and quiet bit set, as floatToBf16):
 *  32-bit lanes whose high halves are the BF16 bits. */
template <class D>
HWY_INLINE hwy::HWY_NAMESPACE::Vec<hwy::HWY_NAMESPACE::RebindToUnsigned<D>> Bf16Rounded(D,
                                                                                        hwy::HWY_NAMESPACE::Vec<D> v) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::RebindToUnsigned<D> du;
  const auto bits = hn::BitCast(du, v);
  const auto lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
  const auto rounded = hn::Add(bits, hn::Add(lsb, hn::Set(du, 0x7fffu)));
  const auto quiet = hn::Or(bits, hn::Set(du, 0x00400000u));
  return hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), quiet, rounded);
}

/**
 * The lanes of v rounded to 16-bit floats (RNE; NaN stays NaN with its sign, top payload and quiet bit set, as
 * floatToHalf / floatToBf16): FLOAT16 bits when kHalf (only where kExactHalf), BF16 bits otherwise.
 */
template <bool kHalf, class D>
HWY_INLINE hwy::HWY_NAMESPACE::Vec<hwy::HWY_NAMESPACE::Rebind<uint16_t, D>> NarrowBits(D d,
                                                                                       hwy::HWY_NAMESPACE::Vec<D> v) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::Rebind<uint16_t, D> d16;
  if constexpr (kHalf) {
    const hn::Rebind<hwy::float16_t, D> dh;
    return hn::BitCast(d16, hn::DemoteTo(dh, v));  // F16C: RNE, NaN kept quiet
  } else {
    const hn::RebindToSigned<D> di;  // the high halves as non-negative int32: DemoteTo then keeps them
    return hn::DemoteTo(d16, hn::BitCast(di, hn::ShiftRight<16>(Bf16Rounded(d, v))));
  }
}

/**
 * NarrowBits of v stored at `to`; with kStream a non-temporal store (`to` aligned to the 16-bit vector; the caller
 * ends its run of them with hwy::FlushStream()).
 */
template <bool kHalf, bool kStream = false, class D>
HWY_INLINE void StoreNarrowBits(D d, hwy::HWY_NAMESPACE::Vec<D> v, uint16_t* to) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::Rebind<uint16_t, D> d16;
  if constexpr (kStream) {
    hn::Stream(NarrowBits<kHalf>(d, v), d16, to);
  } else {
    hn::StoreU(NarrowBits<kHalf>(d, v), d16, to);
  }
}

/** count floats at `from` rounded to 16-bit floats at `to` (floatToHalf / floatToBf16 bits): whole vectors of
 *  StoreNarrowBits, then the rest one by one. FLOAT16 (kHalf) only where kExactHalf. */
template <bool kHalf>
HWY_INLINE void NarrowRow(const float* from, int64_t count, uint16_t* to) {
  namespace hn = hwy::HWY_NAMESPACE;
  const hn::ScalableTag<float> d;
  const auto lanes = static_cast<int64_t>(hn::Lanes(d));
  int64_t e = 0;
  for (; e + lanes <= count; e += lanes) StoreNarrowBits<kHalf>(d, hn::LoadU(d, from + e), to + e);
  for (; e < count; ++e) to[e] = kHalf ? floatToHalf(from[e]) : floatToBf16(from[e]);
}

}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // toggle guard
