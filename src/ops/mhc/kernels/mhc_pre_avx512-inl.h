// Part of mhc_pre_hwy.cpp: the MhcPre block kernel's AVX-512 code, written with x86 intrinsics (16 fp32 lanes).
// mhc_pre_hwy.cpp includes it inside its per-target namespace, for AVX-512 targets only, after the 8-lane pieces it
// builds on (Widen, Bf16Rounded, RoundHf32, HInVector, NextX, SpreadPrefetch, StageFn); it is not a header of its
// own. Two parts: h_in 16 lanes wide (TokenHIn16) and the paired matmul (StagePairedChunk, PairedPanelProducts).
// Every lane runs the same chain as the 8-lane code, so the bits are the same on every target.

using D16 = hn::CappedTag<float, 16>;

/** 16 elements of x from `from`, widened exactly (Widen's conversion; written with the intrinsics, as Highway's
 *  load and promote made the forward ~1 % slower). */
template <bool kHalf>
HWY_INLINE __m512 Widen16(const uint16_t* from) {
  const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(from));
  if constexpr (kHalf) return _mm512_cvtph_ps(bits);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bits), 16));
}

/** Narrow on 16 lanes (the bf16 bits gathered with one word permute). */
template <bool kHalf>
HWY_INLINE __m256i Narrow16(__m512 v) {
  if constexpr (kHalf) return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512i highWords = _mm512_set_epi16(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1, 31, 29, 27, 25,
                                             23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  const __m512i rounded = Bf16Rounded(D16(), hn::Vec<D16>{v}).raw;
  return _mm512_castsi512_si256(_mm512_permutexvar_epi16(highWords, rounded));
}

/** HInVector on 16 lanes (the same chain per lane); h16 holds the gates broadcast. */
template <bool kHalf, size_t kN>
HWY_INLINE __m512 HInVector16(const uint16_t* x, size_t n, size_t dHidden, const __m512* h16, size_t j) {
  const size_t streams = kN != 0 ? kN : n;
  __m512 acc = _mm512_mul_ps(Widen16<kHalf>(x + j), h16[0]);
  for (size_t i = 1; i < streams; ++i) acc = _mm512_fmadd_ps(Widen16<kHalf>(x + i * dHidden + j), h16[i], acc);
  return acc;
}

/** The first columns of TokenHIn 32 at a time (two chains of 16 lanes); returns the columns done. */
template <bool kHalf, size_t kN>
HWY_INLINE size_t TokenHIn16(const uint16_t* x, size_t n, size_t dHidden, const V8* h, uint16_t* out, bool stream) {
  const size_t streams = kN != 0 ? kN : n;
  if (streams > 8) return 0;  // the 8-lane loop takes any N
  __m512 h16[8];
  for (size_t i = 0; i < streams; ++i) h16[i] = _mm512_set1_ps(hn::GetLane(h[i]));
  stream = stream && reinterpret_cast<uintptr_t>(out) % 32 == 0;  // else plain stores
  size_t j = 0;
  for (; j + 32 <= dHidden; j += 32) {
    const __m256i lo = Narrow16<kHalf>(HInVector16<kHalf, kN>(x, n, dHidden, h16, j));
    const __m256i hi = Narrow16<kHalf>(HInVector16<kHalf, kN>(x, n, dHidden, h16, j + 16));
    auto* at = reinterpret_cast<__m256i*>(out + j);
    if (stream) {
      _mm256_stream_si256(at, lo);
      _mm256_stream_si256(at + 1, hi);
    } else {
      _mm256_storeu_si256(at, lo);
      _mm256_storeu_si256(at + 1, hi);
    }
  }
  return j;
}

// AVX-512 (16 lanes): a register holds 8 columns of h_mix for a pair of tokens, lanes (t0, f), (t1, f) side by
// side. The chunk of xg is staged pair by pair (xg[t0, k], xg[t1, k] adjacent, one 64-bit broadcast per pair and k)
// and phi is packed paired (each value twice), so every lane of every multiply-add is a real product even where F
// is not a multiple of 16 (F = 24 at N = 4). Each lane runs the same fma chain over k as the 8-lane kernel.

/** xg of 16 lanes: v * gamma (kGamma), HF32-rounded (kHf32; Inf and NaN unchanged). */
template <bool kGamma, bool kHf32>
HWY_INLINE __m512 Scaled16(__m512 v, __m512 gamma) {
  __m512 g = v;
  if constexpr (kGamma) g = _mm512_mul_ps(v, gamma);
  if constexpr (kHf32) g = RoundHf32(D16(), hn::Vec<D16>{g}).raw;
  return g;
}

/**
 * One step of 16 k of StagePairs: rows[t] (null: a missing token, zeros) from element kk, gamma's 16 values at
 * `scale`; pair p's 32 staged values to out[p]; sum[t] the tokens' partial sums of squares.
 */
template <bool kHalf, bool kGamma, bool kHf32, size_t kP>
HWY_INLINE void StagePairStep(const uint16_t* const* rows, size_t kk, const float* scale, float* const* out,
                              __m256* sum) {
  constexpr size_t kT = 2 * kP;
  const __m512i evens = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i odds = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  const __m512 g = kGamma ? _mm512_loadu_ps(scale) : _mm512_setzero_ps();
  __m512 scaled[kT];
  for (size_t t = 0; t < kT; ++t) {
    const __m512 v = rows[t] != nullptr ? Widen16<kHalf>(rows[t] + kk) : _mm512_setzero_ps();
    const __m256 low = _mm512_castps512_ps256(v), high = _mm512_extractf32x8_ps(v, 1);
    sum[t] = _mm256_fmadd_ps(high, high, _mm256_fmadd_ps(low, low, sum[t]));
    scaled[t] = Scaled16<kGamma, kHf32>(v, g);
  }
  for (size_t p = 0; p < kP; ++p) {
    _mm512_storeu_ps(out[p], _mm512_permutex2var_ps(scaled[2 * p], evens, scaled[2 * p + 1]));
    _mm512_storeu_ps(out[p] + 16, _mm512_permutex2var_ps(scaled[2 * p], odds, scaled[2 * p + 1]));
  }
}

/**
 * Stages kP token pairs of the chunk: pair p's xg at xg + p * 2 * chunk, (k, token) at [2 * k + token]; the sums
 * of squares of the chunk run in their 8 partials (k mod 8: the low then the high 8 lanes of each 16), added to
 * `squares` at the end. A missing second
 * token of the last pair (`tokens` odd) stages zeros. Tails run through zero-padded buffers.
 */
template <bool kHalf, bool kGamma, bool kHf32, size_t kP>
HWY_INLINE void StagePairs(const uint16_t* x, size_t k, const float* gamma, size_t kc, float* xg, size_t chunk,
                           float* squares, size_t tokens) {
  constexpr size_t kT = 2 * kP;
  __m256 sum[kT];
  for (size_t t = 0; t < kT; ++t) sum[t] = _mm256_setzero_ps();  // the chunk's own partials (mhc_pre_kernel.h)
  const uint16_t* rows[kT];
  for (size_t t = 0; t < kT; ++t) rows[t] = t < tokens ? x + t * k : nullptr;
  size_t kk = 0;
  for (; kk + 16 <= kc; kk += 16) {
    float* out[kP];
    for (size_t p = 0; p < kP; ++p) out[p] = xg + p * 2 * chunk + 2 * kk;
    StagePairStep<kHalf, kGamma, kHf32, kP>(rows, kk, gamma + (kGamma ? kk : 0), out, sum);
  }
  if (kk < kc) {
    const size_t rest = kc - kk;
    uint16_t bits[kT][16] = {};
    float scale[16] = {}, staged[kP][32];
    const uint16_t* tail[kT];
    float* out[kP];
    for (size_t t = 0; t < kT; ++t) {
      tail[t] = rows[t] != nullptr ? bits[t] : nullptr;
      if (rows[t] != nullptr) std::memcpy(bits[t], rows[t] + kk, rest * sizeof(uint16_t));
    }
    if constexpr (kGamma) std::memcpy(scale, gamma + kk, rest * sizeof(float));
    for (size_t p = 0; p < kP; ++p) out[p] = staged[p];
    StagePairStep<kHalf, kGamma, kHf32, kP>(tail, 0, scale, out, sum);
    for (size_t p = 0; p < kP; ++p) std::memcpy(xg + p * 2 * chunk + 2 * kk, staged[p], 2 * rest * sizeof(float));
  }
  for (size_t t = 0; t < kT; ++t)
    _mm256_storeu_ps(squares + t * 8, _mm256_add_ps(_mm256_loadu_ps(squares + t * 8), sum[t]));
}

/** Stages the chunk of `tokens` tokens, 4 pairs at a time (8 independent chains of squares). */
template <bool kHalf, bool kGamma, bool kHf32>
HWY_NOINLINE void StagePairedChunk(const uint16_t* x, size_t k, const float* gamma, size_t kc, float* xg, size_t chunk,
                                   float* squares, size_t tokens) {
  size_t t = 0;
  for (; t + 8 <= tokens; t += 8) {
    StagePairs<kHalf, kGamma, kHf32, 4>(x + t * k, k, gamma, kc, xg + t * chunk, chunk, squares + t * 8, 8);
  }
  for (; t < tokens; t += 2) {
    StagePairs<kHalf, kGamma, kHf32, 1>(x + t * k, k, gamma, kc, xg + t * chunk, chunk, squares + t * 8, tokens - t);
  }
}

template <bool kHalf>
StageFn ChoosePairedStage(bool gamma, bool hf32) {
  if (gamma) return hf32 ? &StagePairedChunk<kHalf, true, true> : &StagePairedChunk<kHalf, true, false>;
  return hf32 ? &StagePairedChunk<kHalf, false, true> : &StagePairedChunk<kHalf, false, false>;
}

/**
 * kP token pairs x kW paired vectors of h_mix (8 columns each): c (+)= sum over kk < kc of xg(t, kk) * panel(kk, :)
 * per lane; `xg` is the first pair's staging (pairs 2 * lda apart); prefetches the tokens [2 * pair0, ...) of
 * `next`. At the end the lanes are split back into the two tokens' rows of c.
 */
template <size_t kW, size_t kP>
HWY_INLINE void PairedMicroKernel(const float* HWY_RESTRICT xg, size_t lda, const float* HWY_RESTRICT panel, size_t kc,
                                  float* HWY_RESTRICT c, size_t ldc, bool accumulate, const NextX& next, size_t pair0) {
  __m512 acc[kP][kW];
  for (size_t p = 0; p < kP; ++p) {
    for (size_t w = 0; w < kW; ++w) acc[p][w] = _mm512_setzero_ps();
  }
  const size_t row0 = 2 * pair0;
  SpreadPrefetch prefetch(next, row0, 2 * kP, kc);
  for (size_t k0 = 0; k0 < kc; k0 += 8) {
    prefetch.step();
    const size_t end = HWY_MIN(kc, k0 + 8);
    for (size_t kk = k0; kk < end; ++kk) {
      __m512 b[kW];
      for (size_t w = 0; w < kW; ++w) b[w] = _mm512_loadu_ps(panel + kk * kW * 16 + w * 16);
      for (size_t p = 0; p < kP; ++p) {
        double both;  // xg of the pair's two tokens at kk
        std::memcpy(&both, xg + p * 2 * lda + 2 * kk, sizeof(both));
        const __m512 a = _mm512_castpd_ps(_mm512_set1_pd(both));
        for (size_t w = 0; w < kW; ++w) acc[p][w] = _mm512_fmadd_ps(a, b[w], acc[p][w]);
      }
    }
  }
  const __m512i split = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  for (size_t p = 0; p < kP; ++p) {
    for (size_t w = 0; w < kW; ++w) {
      const __m512 rowsOf = _mm512_permutexvar_ps(split, acc[p][w]);  // token 0's 8 columns, then token 1's
      float* first = c + (row0 + 2 * p) * ldc + w * 8;
      float* second = first + ldc;
      __m256 low = _mm512_castps512_ps256(rowsOf), high = _mm512_extractf32x8_ps(rowsOf, 1);
      if (accumulate) {
        low = _mm256_add_ps(_mm256_loadu_ps(first), low);
        high = _mm256_add_ps(_mm256_loadu_ps(second), high);
      }
      _mm256_storeu_ps(first, low);
      _mm256_storeu_ps(second, high);
    }
  }
}

/** The products of `pairs` token pairs with one paired panel, 8 pairs at a time. */
template <size_t kW>
HWY_NOINLINE void PairedPanelProducts(const float* xg, size_t lda, const float* panel, size_t kc, float* mix,
                                      size_t ldc, size_t pairs, bool accumulate, const NextX& next) {
  size_t p = 0;
  for (; p + 8 <= pairs; p += 8) {
    PairedMicroKernel<kW, 8>(xg + p * 2 * lda, lda, panel, kc, mix, ldc, accumulate, next, p);
  }
  for (; p + 4 <= pairs; p += 4) {
    PairedMicroKernel<kW, 4>(xg + p * 2 * lda, lda, panel, kc, mix, ldc, accumulate, next, p);
  }
  for (; p + 2 <= pairs; p += 2) {
    PairedMicroKernel<kW, 2>(xg + p * 2 * lda, lda, panel, kc, mix, ldc, accumulate, next, p);
  }
  for (; p < pairs; ++p) PairedMicroKernel<kW, 1>(xg + p * 2 * lda, lda, panel, kc, mix, ldc, accumulate, next, p);
}
