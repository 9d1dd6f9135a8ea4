// Part of mhc_pre_backward_hwy.cpp: the MhcPreBackward kernels' AVX-512 code, written with x86 intrinsics (16 fp32
// lanes), which Highway 1.0.3 either lacks (AVX512_BF16) or spells slower (word permutes). mhc_pre_backward_hwy.cpp
// includes it inside its per-target namespace, for AVX-512 targets only, after Bf16RoundedBits and CpuConvertsBf16;
// it is not a header of its own. Every function gives the bits of the portable code it stands in for.

/**
 * 16 BF16 values from `from` widened exactly to f32: one word permute with zero-masking puts value j in the high half
 * of lane j (the low halves zero), ~3 % faster than a zero extension and a shift on Zen 5.
 */
HWY_INLINE __m512 WidenBf16x16(const uint16_t* from) {
  const __m512i high = _mm512_set_epi16(15, 0, 14, 0, 13, 0, 12, 0, 11, 0, 10, 0, 9, 0, 8, 0, 7, 0, 6, 0, 5, 0, 4, 0, 3,
                                        0, 2, 0, 1, 0, 0, 0);
  const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from));
  return _mm512_castsi512_ps(_mm512_maskz_permutexvar_epi16(0xAAAAAAAAu, high, _mm512_castsi256_si512(bits)));
}

/**
 * The BF16 values of 16 lanes whose high halves hold them (Bf16RoundedBits) stored at `at`: one word permute gathers
 * the high halves, instead of a shift, a pack and a permute.
 */
HWY_INLINE void StoreBf16x16(__m512i rounded, uint16_t* at) {
  const __m512i highWords = _mm512_set_epi16(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1, 31, 29, 27, 25,
                                             23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(at),
                      _mm512_castsi512_si256(_mm512_permutexvar_epi16(highWords, rounded)));
}

/**
 * AVX512_BF16's conversion of two registers (lo to the low half): RNE and NaN quieted as floatToBf16 does, but a
 * denormal becomes zero, so callers check for denormals first. Inline assembly: Highway 1.0.3 has no target that
 * enables AVX512_BF16, and the CPU is asked at run time (CpuConvertsBf16).
 */
HWY_INLINE __m512i ConvertTwoToBf16(__m512 lo, __m512 hi) {
  __m512i out;
  asm("vcvtne2ps2bf16 %2, %1, %0" : "=v"(out) : "v"(hi), "v"(lo));
  return out;
}

/**
 * A row of 32 columns (lo: 0-15, hi: 16-31) as FLOAT16 (kHalf) or BF16, written as one 64-byte line, non-temporal
 * when `stream` (at is then 64-byte aligned): every bit as StoreNarrow gives. A whole-line streaming store needs no
 * read for ownership and leaves the caches to x and gradXPost (~10 % of the kernel on Zen 5).
 */
template <bool kHalf>
HWY_INLINE void StoreRow32(__m512 lo, __m512 hi, void* at, bool stream, bool bf16Convert) {
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
