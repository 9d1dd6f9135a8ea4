// TileGemm with Bf16Pairs sums (core/gemm_shape.h): the AVX512-BF16 kernel (VDPBF16PS: 32 bf16 products per
// instruction, twice the fp32 FMA rate) and the scalar emulation of the same instruction, which gives the same bits.
//
// Layout of the scratch: op(B) in column panels of 32 (two vectors of 16 sums), one 32-bit pair word per column and
// k pair: panel row p holds (b(2p, j) low half, b(2p+1, j) high half) for its 32 columns, zero past N and past K.
// op(A) is read in place when it is [M, K] row-major with K even (a pair is a 32-bit load); otherwise it is packed
// into pair words after the panels: [pair][row] when A is stored transposed, [row][pair] (zero-padded) when K is odd.
// For each panel (it stays in L1) and each block of up to 12 rows, 12 x 2 vectors of sums stay in registers while p
// runs upwards; each A pair word is broadcast from memory into the instruction.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <utility>

#include "core/int_math.h"
#include "core/tile_gemm.h"

#if defined(__x86_64__)
#include <immintrin.h>
// GCC 12's AVX-512 intrinsics fill their unused merge operand from _mm512_undefined_*, which -Wmaybe-uninitialized
// reports once they are inlined here.
#if !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#endif

namespace gradkit::tile_gemm_detail {
namespace {

constexpr int64_t kPanelCols = 32;
constexpr int64_t kBlockRows = 12;  // 24 accumulators + 2 B vectors of the 32 registers

/**
 * Rows of the block that starts `left` rows before the end: 12, except that 13..19 rows split into two near-equal
 * blocks (16 = 8 + 8, not 12 + 4). A block of 4 rows has 8 chains of sums, too few to cover the instruction's
 * latency: on Zen 5, 12 + 4 spent half the 12-row block's time on the 4 rows (sparse MLA's N1 = 16 products; its
 * forward 2-5 % faster with the split). Each element's sums are the same instructions whatever its block, so the
 * split leaves the bits alone. The rows-add kernel keeps 12-row blocks: split, the sparse MLA gradient ran 2-3 %
 * slower there.
 */
constexpr int64_t blockRows(int64_t left) {
  return left > kBlockRows && left < kBlockRows + 8 ? (left + 1) / 2 : std::min(kBlockRows, left);
}

int64_t pairsOf(int64_t k) { return ceilDiv(k, 2); }

bool packsA(const TileGemmShape& s) { return s.transA || s.k % 2 != 0; }

float bf16Value(uint16_t bits16) {
  const uint32_t bits = static_cast<uint32_t>(bits16) << 16;
  float value;
  std::memcpy(&value, &bits, sizeof(float));
  return value;
}

/** An fp32 subnormal as a zero of its sign (VDPBF16PS reads subnormal inputs and writes subnormal results so). */
float flushSubnormal(float x) { return std::fabs(x) < 1.17549435e-38f ? std::copysign(0.0f, x) : x; }

}  // namespace

size_t bf16PairsScratchBytes(const TileGemmShape& s) {
  if (s.m == 0 || s.n == 0 || s.k == 0) return 0;
  const int64_t pairs = pairsOf(s.k);
  const int64_t panelWords = ceilDiv(s.n, kPanelCols) * pairs * kPanelCols;
  return static_cast<size_t>(panelWords + (packsA(s) ? pairs * s.m : 0)) * sizeof(uint32_t);
}

void runScalarBf16Pairs(const TileGemmShape& s, const uint16_t* a, const uint16_t* b, float* c) {
  const int64_t aRow = s.transA ? 1 : s.lda, aK = s.transA ? s.lda : 1;
  const int64_t bK = s.transB ? 1 : s.ldb, bCol = s.transB ? s.ldb : 1;
  const auto aAt = [&](int64_t i, int64_t k) {
    return k < s.k ? flushSubnormal(bf16Value(a[i * aRow + k * aK])) : 0.0f;
  };
  const auto bAt = [&](int64_t k, int64_t j) {
    return k < s.k ? flushSubnormal(bf16Value(b[k * bK + j * bCol])) : 0.0f;
  };
  for (int64_t i = 0; i < s.m; ++i) {
    for (int64_t j = 0; j < s.n; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < s.k; k += 2) {
        acc = flushSubnormal(std::fma(aAt(i, k + 1), bAt(k + 1, j), acc));
        acc = flushSubnormal(std::fma(aAt(i, k), bAt(k, j), acc));
      }
      const float t = s.alpha * acc;
      float& out = c[i * s.ldc + j];
      out = s.beta == 0.0f ? t : std::fma(s.beta, out, t);
    }
  }
}

#if defined(__x86_64__)
#define GRADKIT_AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512bf16")))
namespace {

GRADKIT_AVX512BF16 __mmask32 firstLanes32(int64_t count) {
  return count >= 32 ? ~__mmask32{0} : static_cast<__mmask32>((uint32_t{1} << count) - 1);
}

GRADKIT_AVX512BF16 __mmask16 firstLanes16(int64_t count) {
  if (count <= 0) return 0;
  return count >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << count) - 1);
}

/**
 * Pair words of two stored rows: dst[t] = (even[t] low half, odd[t] high half) for t < count; odd may be null (a
 * zero row: the padding of an odd K).
 */
GRADKIT_AVX512BF16 void interleaveRows(const uint16_t* even, const uint16_t* odd, int64_t count, uint32_t* dst) {
  alignas(64) static constexpr uint16_t kLow[32] = {0, 32, 1, 33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
                                                    8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  alignas(64) static constexpr uint16_t kHigh[32] = {16, 48, 17, 49, 18, 50, 19, 51, 20, 52, 21, 53, 22, 54, 23, 55,
                                                     24, 56, 25, 57, 26, 58, 27, 59, 28, 60, 29, 61, 30, 62, 31, 63};
  const __m512i low = _mm512_load_si512(kLow), high = _mm512_load_si512(kHigh);
  for (int64_t t = 0; t < count; t += 32) {
    const __mmask32 m = firstLanes32(count - t);
    const __m512i e = _mm512_maskz_loadu_epi16(m, even + t);
    const __m512i o = odd != nullptr ? _mm512_maskz_loadu_epi16(m, odd + t) : _mm512_setzero_si512();
    _mm512_mask_storeu_epi32(dst + t, firstLanes16(count - t), _mm512_permutex2var_epi16(e, low, o));
    _mm512_mask_storeu_epi32(dst + t + 16, firstLanes16(count - t - 16), _mm512_permutex2var_epi16(e, high, o));
  }
}

/** r[q] becomes column q of the 16 x 16 matrix of 32-bit words whose rows were r[0..15]. */
GRADKIT_AVX512BF16 void transpose16x16(__m512i r[16]) {
  __m512i t[16], u[16];
  for (int q = 0; q < 16; q += 2) {
    t[q] = _mm512_unpacklo_epi32(r[q], r[q + 1]);
    t[q + 1] = _mm512_unpackhi_epi32(r[q], r[q + 1]);
  }
  for (int q = 0; q < 16; q += 4) {  // u[q + x] holds column x, x + 4, x + 8, x + 12 of rows q..q+3 (one per block)
    u[q] = _mm512_unpacklo_epi64(t[q], t[q + 2]);
    u[q + 1] = _mm512_unpackhi_epi64(t[q], t[q + 2]);
    u[q + 2] = _mm512_unpacklo_epi64(t[q + 1], t[q + 3]);
    u[q + 3] = _mm512_unpackhi_epi64(t[q + 1], t[q + 3]);
  }
  for (int x = 0; x < 4; ++x) {
    const __m512i v0 = _mm512_shuffle_i32x4(u[x], u[x + 4], 0x88);  // columns x, x + 8 of rows 0-7
    const __m512i v4 = _mm512_shuffle_i32x4(u[x], u[x + 4], 0xDD);  // columns x + 4, x + 12 of rows 0-7
    const __m512i v8 = _mm512_shuffle_i32x4(u[x + 8], u[x + 12], 0x88);
    const __m512i v12 = _mm512_shuffle_i32x4(u[x + 8], u[x + 12], 0xDD);
    r[x] = _mm512_shuffle_i32x4(v0, v8, 0x88);
    r[x + 8] = _mm512_shuffle_i32x4(v0, v8, 0xDD);
    r[x + 4] = _mm512_shuffle_i32x4(v4, v12, 0x88);
    r[x + 12] = _mm512_shuffle_i32x4(v4, v12, 0xDD);
  }
}

/** Packs op(B) into the panels described at the top. */
GRADKIT_AVX512BF16 void packB(const TileGemmShape& s, const uint16_t* b, uint32_t* panels) {
  const int64_t pairs = pairsOf(s.k);
  for (int64_t j0 = 0; j0 < s.n; j0 += kPanelCols) {
    uint32_t* panel = panels + (j0 / kPanelCols) * pairs * kPanelCols;
    const int64_t width = std::min(kPanelCols, s.n - j0);
    if (!s.transB) {  // B is [K, N]: rows 2p and 2p + 1 interleaved
      for (int64_t p = 0; p < pairs; ++p) {
        const uint16_t* even = b + 2 * p * s.ldb + j0;
        const uint16_t* odd = 2 * p + 1 < s.k ? even + s.ldb : nullptr;
        uint32_t* row = panel + p * kPanelCols;
        interleaveRows(even, odd, width, row);
        for (int64_t col = width; col < kPanelCols; ++col) row[col] = 0;
      }
      continue;
    }
    // B is [N, K]: a stored row holds its column's pair words in order; 16 columns x 16 pairs are transposed.
    for (int64_t half = 0; half < 2; ++half) {
      const int64_t c0 = half * 16;
      for (int64_t p0 = 0; p0 < pairs; p0 += 16) {
        __m512i r[16];
        const __mmask32 m = firstLanes32(s.k - 2 * p0);
        for (int64_t q = 0; q < 16; ++q) {
          r[q] =
              c0 + q < width ? _mm512_maskz_loadu_epi16(m, b + (j0 + c0 + q) * s.ldb + 2 * p0) : _mm512_setzero_si512();
        }
        transpose16x16(r);
        const int64_t rows = std::min<int64_t>(16, pairs - p0);
        for (int64_t q = 0; q < rows; ++q) _mm512_storeu_si512(panel + (p0 + q) * kPanelCols + c0, r[q]);
      }
    }
  }
}

/** Packs op(A) into pair words: [pair][row] (A stored [K, M]) or [row][pair] (A stored [M, K], K odd). */
GRADKIT_AVX512BF16 void packA(const TileGemmShape& s, const uint16_t* a, uint32_t* packed) {
  const int64_t pairs = pairsOf(s.k);
  if (s.transA) {
    for (int64_t p = 0; p < pairs; ++p) {
      const uint16_t* even = a + 2 * p * s.lda;
      interleaveRows(even, 2 * p + 1 < s.k ? even + s.lda : nullptr, s.m, packed + p * s.m);
    }
    return;
  }
  for (int64_t i = 0; i < s.m; ++i) {
    uint16_t* row = reinterpret_cast<uint16_t*>(packed + i * pairs);
    std::memcpy(row, a + i * s.lda, static_cast<size_t>(s.k) * sizeof(uint16_t));
    row[s.k] = 0;  // K is odd here: the last pair's high half
  }
}

/**
 * The sums of kR rows x 32 columns: acc0 / acc1 (columns 0-15 / 16-31) += A pairs x panel. A's pair word (i, p) is at
 * a + i * aRow + p * aPair (uint16 units), the panel as packB wrote it.
 */
template <int kR>
GRADKIT_AVX512BF16 __attribute__((always_inline)) inline void accumulatePairs(const uint16_t* a, int64_t aRow,
                                                                              int64_t aPair, const uint32_t* panel,
                                                                              int64_t pairs, __m512 (&acc0)[kR],
                                                                              __m512 (&acc1)[kR]) {
  for (int r = 0; r < kR; ++r) acc0[r] = acc1[r] = _mm512_setzero_ps();
  for (int64_t p = 0; p < pairs; ++p) {
    const __m512bh b0 = (__m512bh)_mm512_loadu_si512(panel + p * kPanelCols);
    const __m512bh b1 = (__m512bh)_mm512_loadu_si512(panel + p * kPanelCols + 16);
    const uint16_t* ap = a + p * aPair;
    for (int r = 0; r < kR; ++r) {
      uint32_t word;
      std::memcpy(&word, ap + r * aRow, sizeof(word));
      const __m512bh av = (__m512bh)_mm512_set1_epi32(static_cast<int>(word));
      acc0[r] = _mm512_dpbf16_ps(acc0[r], av, b0);
      acc1[r] = _mm512_dpbf16_ps(acc1[r], av, b1);
    }
  }
}

/** kR rows x 32 columns of C (`width` of them valid): C = alpha * sums + beta * C. */
template <int kR>
GRADKIT_AVX512BF16 void microKernel(const uint16_t* a, int64_t aRow, int64_t aPair, const uint32_t* panel,
                                    int64_t pairs, float* c, int64_t ldc, int64_t width, float alpha, float beta) {
  __m512 acc0[kR], acc1[kR];
  accumulatePairs<kR>(a, aRow, aPair, panel, pairs, acc0, acc1);
  const __m512 alphaV = _mm512_set1_ps(alpha), betaV = _mm512_set1_ps(beta);
  const __mmask16 m0 = firstLanes16(width), m1 = firstLanes16(width - 16);
  for (int r = 0; r < kR; ++r) {
    float* row = c + r * ldc;
    __m512 t0 = _mm512_mul_ps(alphaV, acc0[r]);
    __m512 t1 = _mm512_mul_ps(alphaV, acc1[r]);
    if (beta != 0.0f) {
      t0 = _mm512_fmadd_ps(betaV, _mm512_maskz_loadu_ps(m0, row), t0);
      t1 = _mm512_fmadd_ps(betaV, _mm512_maskz_loadu_ps(m1, row + 16), t1);
    }
    _mm512_mask_storeu_ps(row, m0, t0);
    _mm512_mask_storeu_ps(row + 16, m1, t1);
  }
}

using MicroKernelFn = void (*)(const uint16_t*, int64_t, int64_t, const uint32_t*, int64_t, float*, int64_t, int64_t,
                               float, float);

template <int... kR>
constexpr std::array<MicroKernelFn, sizeof...(kR)> microKernels(std::integer_sequence<int, kR...>) {
  return {&microKernel<kR + 1>...};
}

/** A product's packed operands: B's panels and A's pair words (in place or packed after the panels). */
struct PackedOperands {
  const uint32_t* panels = nullptr;
  const uint16_t* aPairs = nullptr;
  int64_t aRow = 0, aPair = 2, pairs = 0;
};

GRADKIT_AVX512BF16 PackedOperands packOperands(const TileGemmShape& s, const uint16_t* a, const uint16_t* b,
                                               uint32_t* scratch) {
  PackedOperands o;
  o.pairs = pairsOf(s.k);
  o.panels = scratch;
  packB(s, b, scratch);
  o.aPairs = a;
  o.aRow = s.lda;  // in place: [M, K] row-major, K even
  if (packsA(s)) {
    uint32_t* packed = scratch + ceilDiv(s.n, kPanelCols) * o.pairs * kPanelCols;
    packA(s, a, packed);
    o.aPairs = reinterpret_cast<const uint16_t*>(packed);
    o.aRow = s.transA ? 2 : 2 * o.pairs;
    o.aPair = s.transA ? 2 * s.m : 2;
  }
  return o;
}

/** Rows [i, i + kR) x 32 columns from j0 of the sum of two products added to their rows (runAvx512Bf16PairsRowsAdd). */
template <int kR>
GRADKIT_AVX512BF16 void rowsAddKernel(const PackedOperands& x, const PackedOperands& y, int64_t i, int64_t j0,
                                      int64_t width, float alpha1, float alpha2, float* const* rows) {
  const int64_t panel = j0 / kPanelCols;
  __m512 acc0[kR], acc1[kR];
  accumulatePairs<kR>(x.aPairs + i * x.aRow, x.aRow, x.aPair, x.panels + panel * x.pairs * kPanelCols, x.pairs, acc0,
                      acc1);
  alignas(64) float first[kR][kPanelCols];  // alpha1 * sums of the first product (the registers go to the second)
  const __m512 alpha1V = _mm512_set1_ps(alpha1), alpha2V = _mm512_set1_ps(alpha2), one = _mm512_set1_ps(1.0f);
  for (int r = 0; r < kR; ++r) {
    _mm512_store_ps(first[r], _mm512_mul_ps(alpha1V, acc0[r]));
    _mm512_store_ps(first[r] + 16, _mm512_mul_ps(alpha1V, acc1[r]));
  }
  accumulatePairs<kR>(y.aPairs + i * y.aRow, y.aRow, y.aPair, y.panels + panel * y.pairs * kPanelCols, y.pairs, acc0,
                      acc1);
  const __mmask16 m0 = firstLanes16(width), m1 = firstLanes16(width - 16);
  for (int r = 0; r < kR; ++r) {  // in row order: a repeated row reads what the previous one stored
    const __m512 t0 = _mm512_fmadd_ps(one, _mm512_load_ps(first[r]), _mm512_mul_ps(alpha2V, acc0[r]));
    const __m512 t1 = _mm512_fmadd_ps(one, _mm512_load_ps(first[r] + 16), _mm512_mul_ps(alpha2V, acc1[r]));
    float* row = rows[i + r] + j0;
    _mm512_mask_storeu_ps(row, m0, _mm512_add_ps(_mm512_maskz_loadu_ps(m0, row), t0));
    _mm512_mask_storeu_ps(row + 16, m1, _mm512_add_ps(_mm512_maskz_loadu_ps(m1, row + 16), t1));
  }
}

using RowsAddKernelFn = void (*)(const PackedOperands&, const PackedOperands&, int64_t, int64_t, int64_t, float, float,
                                 float* const*);

template <int... kR>
constexpr std::array<RowsAddKernelFn, sizeof...(kR)> rowsAddKernels(std::integer_sequence<int, kR...>) {
  return {&rowsAddKernel<kR + 1>...};
}

}  // namespace

GRADKIT_AVX512BF16 void runAvx512Bf16Pairs(const TileGemmShape& s, const uint16_t* a, const uint16_t* b, float* c,
                                           void* scratch) {
  static constexpr auto kKernels = microKernels(std::make_integer_sequence<int, kBlockRows>());
  const PackedOperands o = packOperands(s, a, b, static_cast<uint32_t*>(scratch));
  for (int64_t j0 = 0; j0 < s.n; j0 += kPanelCols) {
    const uint32_t* panel = o.panels + (j0 / kPanelCols) * o.pairs * kPanelCols;
    const int64_t width = std::min(kPanelCols, s.n - j0);
    for (int64_t i = 0, rows = 0; i < s.m; i += rows) {
      rows = blockRows(s.m - i);
      kKernels[rows - 1](o.aPairs + i * o.aRow, o.aRow, o.aPair, panel, o.pairs, c + i * s.ldc + j0, s.ldc, width,
                         s.alpha, s.beta);
    }
  }
}

GRADKIT_AVX512BF16 void runAvx512Bf16PairsRowsAdd(const TileGemmShape& first, const uint16_t* a1, const uint16_t* b1,
                                                  const TileGemmShape& second, const uint16_t* a2, const uint16_t* b2,
                                                  float* const* rows, void* scratch) {
  static constexpr auto kKernels = rowsAddKernels(std::make_integer_sequence<int, kBlockRows>());
  auto* words = static_cast<uint32_t*>(scratch);
  const PackedOperands x = packOperands(first, a1, b1, words);
  const PackedOperands y =
      packOperands(second, a2, b2, words + ceilDiv(static_cast<int64_t>(bf16PairsScratchBytes(first)), 64) * 16);
  for (int64_t j0 = 0; j0 < first.n; j0 += kPanelCols) {
    const int64_t width = std::min(kPanelCols, first.n - j0);
    for (int64_t i = 0; i < first.m; i += kBlockRows) {
      kKernels[std::min(kBlockRows, first.m - i) - 1](x, y, i, j0, width, first.alpha, second.alpha, rows);
    }
  }
}
#else
void runAvx512Bf16Pairs(const TileGemmShape&, const uint16_t*, const uint16_t*, float*, void*) {}
void runAvx512Bf16PairsRowsAdd(const TileGemmShape&, const uint16_t*, const uint16_t*, const TileGemmShape&,
                               const uint16_t*, const uint16_t*, float* const*, void*) {}
#endif

}  // namespace gradkit::tile_gemm_detail
