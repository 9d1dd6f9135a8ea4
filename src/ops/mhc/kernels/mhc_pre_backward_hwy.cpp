// SIMD MhcPreBackward kernels, compiled once per Highway target and dispatched at run time. The segment kernel uses
// the scalar kernel's exact operations (the same fused multiply-add chains, separate multiply and add elsewhere, RNE
// narrowing), so it gives the scalar bits where the target has FMA; streamDots sums in vector lanes (another order
// than the scalar kernel). Parts: this file holds the lane helpers, streamDots and the exports; the segment kernel
// is mhc_pre_backward_segment-inl.h and the AVX-512 intrinsics mhc_pre_backward_avx512-inl.h, both included here.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/mhc/kernels/mhc_pre_backward_hwy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
//
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/hwy_lanes-inl.h"
#include "hwy/highway.h"
#include "ops/mhc/kernels/mhc_pre_backward_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;

/**
 * BF16 rounding in the integer unit: lanes whose high 16 bits are the bf16 of v, rounded to nearest even (lsb +
 * 0x7fff); a NaN is truncated, which keeps it NaN.
 */
template <class D>
HWY_INLINE hn::Vec<hn::RebindToUnsigned<D>> Bf16RoundedBits(D d, hn::Vec<D> v) {
  const hn::RebindToUnsigned<D> du;
  const auto bits = hn::BitCast(du, v);
  const auto lsb = hn::And(hn::ShiftRight<16>(bits), hn::Set(du, 1u));
  const auto increment = hn::IfThenZeroElse(hn::RebindMask(du, hn::IsNaN(v)), hn::Add(lsb, hn::Set(du, 0x7fffu)));
  return hn::Add(bits, increment);
}

/** Whether the CPU converts fp32 to bf16 in one instruction (AVX512_BF16), asked once. */
HWY_INLINE bool CpuConvertsBf16() {
#if HWY_ARCH_X86
  static const bool converts = __builtin_cpu_supports("avx512bf16");
  return converts;
#else
  return false;
#endif
}

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
#include "ops/mhc/kernels/mhc_pre_backward_avx512-inl.h"  // 16-lane bf16 loads and stores, whole-line rows
#endif

/** Lanes i.. of a FLOAT16 (kHalf) or BF16 buffer widened exactly to f32. */
template <bool kHalf, class D>
HWY_INLINE hn::Vec<D> LoadWide(D d, const void* base, size_t i) {
  const hn::Rebind<uint16_t, D> d16;
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  if constexpr (!kHalf && hn::MaxLanes(D()) == 16) {
    return hn::Vec<D>{WidenBf16x16(static_cast<const uint16_t*>(base) + i)};
  }
#endif
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
    // Highway 1.0.3's bf16 DemoteTo truncates: round the bits first.
    const auto rounded = Bf16RoundedBits(d, v);
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
    if constexpr (hn::MaxLanes(D()) == 16) return StoreBf16x16(rounded.raw, at);
#endif
    const hn::RebindToSigned<D> di;  // the high halves as non-negative int32: DemoteTo then keeps them
    hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, hn::ShiftRight<16>(rounded))), d16, at);
  }
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

#include "ops/mhc/kernels/mhc_pre_backward_segment-inl.h"  // the segment kernel: Segment

}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gradkit::kernels {

HWY_EXPORT(StreamDots);
HWY_EXPORT(Segment);

namespace {

void streamDotsSimd(aclDataType dtype, const void* x, const void* gin, int64_t streams, int64_t hidden, float* gPre) {
  if (!HWY_DYNAMIC_DISPATCH(StreamDots)(dtype == ACL_FLOAT16, x, gin, static_cast<size_t>(streams),
                                        static_cast<size_t>(hidden), gPre)) {
    mhcStreamDotsScalar(dtype, x, gin, streams, hidden, gPre);
  }
}

void segmentSimd(aclDataType dtype, const MhcColumnSegment& segment) {
  if (!HWY_DYNAMIC_DISPATCH(Segment)(dtype == ACL_FLOAT16, segment)) mhcSegmentScalar(dtype, segment);
}

}  // namespace

const MhcPreBackwardKernels kMhcPreBackwardSimdKernels{streamDotsSimd, segmentSimd};

}  // namespace gradkit::kernels
#endif  // HWY_ONCE
