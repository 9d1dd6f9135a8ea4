// The AVX-512 MhcPreBackward tables: the kernels of mhc_pre_backward_simd-inl.h with a lane policy written in x86
// intrinsics. A strip is 32 columns of 16 lanes (one 64-byte line of 16-bit values per row, so that no line is
// fetched twice), each row of it written as one whole line, non-temporal where the line is aligned; bf16 lanes are
// gathered with word permutes. Two tables: kMhcPreBackwardAvx512Kernels rounds bf16 in the integer unit, and
// kMhcPreBackwardAvx512Bf16Kernels converts whole lines with AVX512_BF16's instruction where the CPU has it (and
// no value is a denormal). Every column is computed on its own, so the strip width does not change the bits: both
// give the portable table's bits. Compiled per Highway target; only the AVX-512 targets have kernels, the others
// answer false (the caller runs the scalar kernel).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/mhc/kernels/mhc_pre_backward_avx512.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
//
#include <cstdint>

#include "hwy/highway.h"
#include "ops/mhc/kernels/mhc_pre_backward_kernel.h"
#include "ops/mhc/kernels/mhc_pre_backward_simd-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3

/**
 * AVX512_BF16's conversion of two registers (lo to the low half): RNE and NaN quieted as floatToBf16 does, but a
 * denormal becomes zero, so callers check for denormals first. Inline assembly: Highway 1.0.3 has no target that
 * enables AVX512_BF16, and the CPU is asked at run time (cpuConvertsBf16).
 */
HWY_INLINE __m512i ConvertTwoToBf16(__m512 lo, __m512 hi) {
  __m512i out;
  asm("vcvtne2ps2bf16 %2, %1, %0" : "=v"(out) : "v"(hi), "v"(lo));
  return out;
}

/** The lane policy of RunSegment on AVX-512: strips of 32 columns, a strip row stored as one line. */
struct Avx512Lanes {
  static constexpr size_t kRows = 8;  // 32 registers: 16 accumulators; 12 rows (24) measured ~3 % slower on Zen 5
  static constexpr size_t kStrip = 32;

  /** LoadWide, bf16 in 16 lanes by one word permute with zero-masking: value j lands in the high half of lane j
   *  (the low halves zero), ~3 % faster than a zero extension and a shift on Zen 5. */
  template <bool kHalf, class D>
  static HWY_INLINE hn::Vec<D> Load(D d, const void* base, size_t i) {
    if constexpr (!kHalf && hn::MaxLanes(D()) == 16) {
      const __m512i high = _mm512_set_epi16(15, 0, 14, 0, 13, 0, 12, 0, 11, 0, 10, 0, 9, 0, 8, 0, 7, 0, 6, 0, 5, 0, 4,
                                            0, 3, 0, 2, 0, 1, 0, 0, 0);
      const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(static_cast<const uint16_t*>(base) + i));
      return hn::Vec<D>{
          _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xAAAAAAAAu, high, _mm512_castsi256_si512(bits)))};
    } else {
      return LoadWide<kHalf>(d, base, i);
    }
  }

  /** StoreNarrow, bf16 of 16 lanes gathered by one word permute (instead of a shift, a pack and a permute). */
  template <bool kHalf, class D>
  static HWY_INLINE void Store(D d, hn::Vec<D> v, void* base, size_t i) {
    if constexpr (!kHalf && hn::MaxLanes(D()) == 16) {
      const auto rounded = Bf16RoundedBits(d, v);
      const __m512i highWords = _mm512_set_epi16(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1, 31, 29, 27,
                                                 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(static_cast<uint16_t*>(base) + i),
                          _mm512_castsi512_si256(_mm512_permutexvar_epi16(highWords, rounded.raw)));
    } else {
      StoreNarrow<kHalf>(d, v, base, i);
    }
  }

  template <size_t kV, class D>
  static constexpr bool WholeLine() {
    return kV == 2 && hn::MaxLanes(D()) == 16;
  }

  /**
   * A row of 32 columns (lo: 0-15, hi: 16-31) as FLOAT16 (kHalf) or BF16, written as one 64-byte line, non-temporal
   * when `stream` (at is then 64-byte aligned): every bit as Store gives. A whole-line streaming store needs no read
   * for ownership and leaves the caches to x and gradXPost (~10 % of the kernel on Zen 5).
   */
  template <bool kHalf, class V>
  static HWY_INLINE void StoreLine(V loLanes, V hiLanes, void* at, bool stream, bool bf16Convert) {
    const __m512 lo = loLanes.raw, hi = hiLanes.raw;
    __m512i line;
    if constexpr (kHalf) {
      const __m256i low = _mm512_cvtps_ph(lo, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      line = _mm512_inserti64x4(_mm512_castsi256_si512(low),
                                _mm512_cvtps_ph(hi, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), 1);
    } else if (bf16Convert &&  // 0x20: denormal; kortest tests the two masks without moving them to a GPR
               _kortestz_mask16_u8(_mm512_fpclass_ps_mask(lo, 0x20), _mm512_fpclass_ps_mask(hi, 0x20))) {
      line = ConvertTwoToBf16(lo, hi);
    } else {
      const hn::CappedTag<float, 16> d;
      const __m512i highWords = _mm512_set_epi16(63, 61, 59, 57, 55, 53, 51, 49, 47, 45, 43, 41, 39, 37, 35, 33, 31, 29,
                                                 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
      line = _mm512_permutex2var_epi16(Bf16RoundedBits(d, hn::Vec<decltype(d)>{lo}).raw, highWords,
                                       Bf16RoundedBits(d, hn::Vec<decltype(d)>{hi}).raw);
    }
    if (stream) {
      _mm512_stream_si512(static_cast<__m512i*>(at), line);
    } else {
      _mm512_storeu_si512(at, line);
    }
  }
};

bool Avx512StreamDots(bool half, const void* x, const void* gin, size_t streams, size_t hidden, float* gPre) {
  return RunStreamDots<Avx512Lanes>(half, x, gin, streams, hidden, gPre);
}

bool Avx512Segment(bool half, const MhcColumnSegment& sg, bool bf16Convert) {
  return RunSegment<Avx512Lanes>(half, sg, bf16Convert);
}

bool Avx512Runs() { return true; }

#else

bool Avx512StreamDots(bool, const void*, const void*, size_t, size_t, float*) { return false; }

bool Avx512Segment(bool, const MhcColumnSegment&, bool) { return false; }

bool Avx512Runs() { return false; }

#endif  // HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3

}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gradkit::kernels {

HWY_EXPORT(Avx512StreamDots);
HWY_EXPORT(Avx512Segment);
HWY_EXPORT(Avx512Runs);

namespace {

/** Whether the CPU converts fp32 to bf16 in one instruction (AVX512_BF16), asked once. */
bool cpuConvertsBf16() {
#if HWY_ARCH_X86
  static const bool converts = __builtin_cpu_supports("avx512bf16");
  return converts;
#else
  return false;
#endif
}

void streamDotsAvx512(aclDataType dtype, const void* x, const void* gin, int64_t streams, int64_t hidden, float* gPre) {
  if (!HWY_DYNAMIC_DISPATCH(Avx512StreamDots)(dtype == ACL_FLOAT16, x, gin, static_cast<size_t>(streams),
                                              static_cast<size_t>(hidden), gPre)) {
    mhcStreamDotsScalar(dtype, x, gin, streams, hidden, gPre);
  }
}

void segmentAvx512(aclDataType dtype, const MhcColumnSegment& segment) {
  if (!HWY_DYNAMIC_DISPATCH(Avx512Segment)(dtype == ACL_FLOAT16, segment, false)) mhcSegmentScalar(dtype, segment);
}

// Tests may run this table on a CPU without AVX512_BF16: it then converts as segmentAvx512 does.
void segmentAvx512Bf16(aclDataType dtype, const MhcColumnSegment& segment) {
  if (!HWY_DYNAMIC_DISPATCH(Avx512Segment)(dtype == ACL_FLOAT16, segment, cpuConvertsBf16())) {
    mhcSegmentScalar(dtype, segment);
  }
}

bool avx512Runs() { return HWY_DYNAMIC_DISPATCH(Avx512Runs)(); }

bool avx512Bf16Runs() { return avx512Runs() && cpuConvertsBf16(); }

}  // namespace

const MhcPreBackwardKernels kMhcPreBackwardAvx512Kernels{"avx512", avx512Runs, streamDotsAvx512, segmentAvx512};
const MhcPreBackwardKernels kMhcPreBackwardAvx512Bf16Kernels{"avx512bf16", avx512Bf16Runs, streamDotsAvx512,
                                                             segmentAvx512Bf16};

}  // namespace gradkit::kernels
#endif  // HWY_ONCE
