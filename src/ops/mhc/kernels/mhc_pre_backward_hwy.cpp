// The portable SIMD MhcPreBackward table (kMhcPreBackwardHwyKernels): the kernels of mhc_pre_backward_simd-inl.h
// with Highway's own lane conversions, compiled once per Highway target and dispatched at run time; a target that
// cannot run them (fp16 without exact conversion) answers false and the scalar kernel runs.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/mhc/kernels/mhc_pre_backward_hwy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
//
#include <cstdint>

#include "hwy/highway.h"
#include "ops/mhc/kernels/mhc_pre_backward_kernel.h"
#include "ops/mhc/kernels/mhc_pre_backward_simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

/** The lane policy of RunSegment with Highway's conversions: strips of 16 columns, each row stored vector by vector. */
struct PortableLanes {
  // Register tile: kRows rows x 2 vectors of accumulators (x86 before AVX-512 has 16 registers: 12 + 2 + 1; the
  // targets with FMA here have 32). The plan's token block (kTokenBlock, 120) is a multiple of every kRows, so that
  // no row of a block falls into the latency-bound 1-row tiles: change them together.
  static constexpr size_t kRows = HWY_TARGET == HWY_AVX2 || !HWY_NATIVE_FMA ? 6 : 8;
  static constexpr size_t kStrip = 16;

  template <bool kHalf, class D>
  static HWY_INLINE hn::Vec<D> Load(D d, const void* base, size_t i) {
    return LoadWide<kHalf>(d, base, i);
  }
  template <bool kHalf, class D>
  static HWY_INLINE void Store(D d, hn::Vec<D> v, void* base, size_t i) {
    StoreNarrow<kHalf>(d, v, base, i);
  }
  template <size_t kV, class D>
  static constexpr bool WholeLine() {
    return false;
  }
};

bool PortableStreamDots(bool half, const void* x, const void* gin, size_t streams, size_t hidden, float* gPre) {
  return RunStreamDots<PortableLanes>(half, x, gin, streams, hidden, gPre);
}

bool PortableSegment(bool half, const MhcColumnSegment& sg) { return RunSegment<PortableLanes>(half, sg, false); }

}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gradkit::kernels {

HWY_EXPORT(PortableStreamDots);
HWY_EXPORT(PortableSegment);

namespace {

void streamDotsHwy(aclDataType dtype, const void* x, const void* gin, int64_t streams, int64_t hidden, float* gPre) {
  if (!HWY_DYNAMIC_DISPATCH(PortableStreamDots)(dtype == ACL_FLOAT16, x, gin, static_cast<size_t>(streams),
                                                static_cast<size_t>(hidden), gPre)) {
    mhcStreamDotsScalar(dtype, x, gin, streams, hidden, gPre);
  }
}

void segmentHwy(aclDataType dtype, const MhcColumnSegment& segment) {
  if (!HWY_DYNAMIC_DISPATCH(PortableSegment)(dtype == ACL_FLOAT16, segment)) mhcSegmentScalar(dtype, segment);
}

bool always() { return true; }  // every target runs it (fp16 without exact conversion through the scalar kernel)

}  // namespace

const MhcPreBackwardKernels kMhcPreBackwardHwyKernels{"hwy", always, streamDotsHwy, segmentHwy};

}  // namespace gradkit::kernels
#endif  // HWY_ONCE
