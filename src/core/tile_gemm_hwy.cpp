// The tile GEMM's Highway kernel, compiled once per target and dispatched at run time.
//
// Layout: op(B) is packed into column panels of kCols = 2 vectors (K rows of kCols fp32 each, zero-padded
// past N) at the start of the scratch; bf16 op(A) is widened into the scratch after the panels, keeping its
// orientation (fp32 A is read in place). For each panel (outer loop: the panel stays in L1) and each block
// of up to kRows rows of C, a micro-kernel holds the rows x 2 vectors of C in registers and runs k upwards:
// acc = MulAdd(broadcast a(i,k), b(k, j..j+2L), acc), one fused multiply-add per element and k, the order
// of the scalar reference (core/tile_gemm.h), so the bits are the same.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "core/tile_gemm_hwy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
//
#include <cmath>
#include <cstring>

#include "core/tile_gemm.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::tile_gemm_detail::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DF = hn::ScalableTag<float>;

// Rows of the register block: accumulators are kRows x 2 vectors, plus 2 vectors of B and one broadcast.
#if !HWY_NATIVE_FMA
constexpr size_t kRows = 0;  // MulAdd would round twice: these targets run the scalar reference
#elif HWY_TARGET == HWY_AVX2
constexpr size_t kRows = 6;  // 16 vector registers: 12 accumulators + 3
#else
constexpr size_t kRows = 8;  // 32 vector registers (AVX-512, NEON, SVE): 16 accumulators + 3
#endif

size_t roundUp(size_t value, size_t step) { return (value + step - 1) / step * step; }

/** Floats of scratch: the packed B panels, then widened A (bf16 only). */
size_t ScratchFloats(const TileGemmShape& s) {
  if (kRows == 0) return 0;
  const DF d;
  const size_t cols = 2 * hn::Lanes(d);
  const size_t m = static_cast<size_t>(s.m), n = static_cast<size_t>(s.n), k = static_cast<size_t>(s.k);
  return k * roundUp(n, cols) + (s.inputType == ACL_BF16 ? m * k : 0);
}

size_t ScratchBytesFor(const TileGemmShape& s) { return ScratchFloats(s) * sizeof(float); }

/** Widens `count` bf16 values (raw bits) to fp32, exactly. */
HWY_INLINE void WidenBf16(const uint16_t* from, float* to, size_t count) {
  const DF d;
  const hn::Rebind<uint16_t, DF> d16;
  const hn::RebindToUnsigned<DF> du;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= count; i += lanes) {
    const auto wide = hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, from + i)));
    hn::StoreU(hn::BitCast(d, wide), d, to + i);
  }
  for (; i < count; ++i) {
    const uint32_t bits = static_cast<uint32_t>(from[i]) << 16;
    std::memcpy(to + i, &bits, sizeof(float));
  }
}

HWY_INLINE float Bf16Value(uint16_t bits16) {
  const uint32_t bits = static_cast<uint32_t>(bits16) << 16;
  float value;
  std::memcpy(&value, &bits, sizeof(float));
  return value;
}

/** Copies `count` values of one row of op(B) (fp32 or bf16 bits) into a panel row as fp32. */
template <typename T>
HWY_INLINE void CopyRow(const T* from, float* to, size_t count) {
  if constexpr (sizeof(T) == 2) {
    WidenBf16(from, to, count);
  } else {  // vector copies: a memcpy call per short row costs as much as the row's products
    const DF d;
    const size_t lanes = hn::Lanes(d);
    size_t i = 0;
    for (; i + lanes <= count; i += lanes) hn::StoreU(hn::LoadU(d, from + i), d, to + i);
    for (; i < count; ++i) to[i] = from[i];
  }
}

template <typename T>
HWY_INLINE float ValueOf(T value) {
  if constexpr (sizeof(T) == 2) {
    return Bf16Value(value);
  } else {
    return value;
  }
}

#if HWY_TARGET <= HWY_AVX2 && HWY_ARCH_X86
/** 8 values of one row as fp32 (bf16 widened exactly). */
template <typename T>
HWY_INLINE hn::Vec<hn::Full256<float>> Load8(const T* from) {
  const hn::Full256<float> d;
  if constexpr (sizeof(T) == 2) {
    const hn::Rebind<uint16_t, decltype(d)> d16;
    const hn::RebindToUnsigned<decltype(d)> du;
    return hn::BitCast(d, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, from))));
  } else {
    return hn::LoadU(d, from);
  }
}

/** to[kk * toStride + r] = from[r * fromStride + kk] for r, kk in [0, 8). */
template <typename T>
HWY_INLINE void Transpose8x8(const T* from, size_t fromStride, float* to, size_t toStride) {
  const hn::Full256<float> d;
  const hn::Full256<double> dd;
  using V = hn::Vec<decltype(d)>;
  V r[8];
  for (size_t i = 0; i < 8; ++i) r[i] = Load8(from + i * fromStride);
  // Pairs of rows interleaved (within 128-bit blocks), then pairs of pairs, then the blocks swapped.
  V t[8];
  for (size_t i = 0; i < 4; ++i) {
    t[2 * i] = hn::InterleaveLower(d, r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = hn::InterleaveUpper(d, r[2 * i], r[2 * i + 1]);
  }
  const auto lo64 = [&](V x, V y) {
    return hn::BitCast(d, hn::InterleaveLower(dd, hn::BitCast(dd, x), hn::BitCast(dd, y)));
  };
  const auto hi64 = [&](V x, V y) {
    return hn::BitCast(d, hn::InterleaveUpper(dd, hn::BitCast(dd, x), hn::BitCast(dd, y)));
  };
  // u[q] for rows 0-3 (q < 4) and rows 4-7 (q >= 4): column q % 4 in the low block, column q % 4 + 4 in the high.
  V u[8];
  for (size_t h = 0; h < 2; ++h) {
    const V* th = t + 4 * h;
    u[4 * h + 0] = lo64(th[0], th[2]);
    u[4 * h + 1] = hi64(th[0], th[2]);
    u[4 * h + 2] = lo64(th[1], th[3]);
    u[4 * h + 3] = hi64(th[1], th[3]);
  }
  for (size_t q = 0; q < 4; ++q) {
    hn::StoreU(hn::ConcatLowerLower(d, u[4 + q], u[q]), d, to + q * toStride);
    hn::StoreU(hn::ConcatUpperUpper(d, u[4 + q], u[q]), d, to + (q + 4) * toStride);
  }
}
#endif

/** Packs op(B) (K x N) into panels of `cols` columns: panel p holds b(k, p*cols + c) at [p*K*cols + k*cols + c]. */
template <typename T>
void PackB(const TileGemmShape& s, const T* b, float* packed, size_t cols) {
  const size_t n = static_cast<size_t>(s.n), k = static_cast<size_t>(s.k), ldb = static_cast<size_t>(s.ldb);
  const size_t panels = (n + cols - 1) / cols;
  for (size_t p = 0; p < panels; ++p) {
    float* panel = packed + p * k * cols;
    const size_t j0 = p * cols;
    const size_t width = HWY_MIN(cols, n - j0);
    if (!s.transB) {  // B is [K, N]: each panel row is a contiguous piece of a row of B
      for (size_t kk = 0; kk < k; ++kk) {
        CopyRow(b + kk * ldb + j0, panel + kk * cols, width);
        for (size_t c = width; c < cols; ++c) panel[kk * cols + c] = 0.0f;
      }
    } else {  // B is [N, K]: a transpose; each stored row of B becomes a panel column
      size_t c = 0;
#if HWY_TARGET <= HWY_AVX2 && HWY_ARCH_X86  // AVX2 and AVX-512: 8 x 8 blocks in 256-bit registers
      for (; c + 8 <= width; c += 8) {
        size_t kk = 0;
        for (; kk + 8 <= k; kk += 8) Transpose8x8(b + (j0 + c) * ldb + kk, ldb, panel + kk * cols + c, cols);
        for (; kk < k; ++kk) {
          for (size_t r = 0; r < 8; ++r) panel[kk * cols + c + r] = ValueOf(b[(j0 + c + r) * ldb + kk]);
        }
      }
#endif
      for (; c < width; ++c) {
        const T* row = b + (j0 + c) * ldb;
        if constexpr (sizeof(T) == 2) {
          for (size_t kk = 0; kk < k; ++kk) panel[kk * cols + c] = Bf16Value(row[kk]);
        } else {
          for (size_t kk = 0; kk < k; ++kk) panel[kk * cols + c] = row[kk];
        }
      }
      for (size_t pad = width; pad < cols; ++pad) {
        for (size_t kk = 0; kk < k; ++kk) panel[kk * cols + pad] = 0.0f;
      }
    }
  }
}

/**
 * Rows x (2 vectors) of C: a(r, kk) at a[r * aRow + kk * aK], the panel as PackB wrote it, C at c with ldc;
 * `width` valid columns (<= 2 vectors).
 */
template <size_t kR>
HWY_INLINE void MicroKernel(const float* HWY_RESTRICT a, size_t aRow, size_t aK, const float* HWY_RESTRICT panel,
                            size_t k, float* HWY_RESTRICT c, size_t ldc, size_t width, float alpha, float beta) {
  const DF d;
  const size_t lanes = hn::Lanes(d);
  const size_t cols = 2 * lanes;
  using V = hn::Vec<DF>;
  V acc0[kR], acc1[kR];
  for (size_t r = 0; r < kR; ++r) {
    acc0[r] = hn::Zero(d);
    acc1[r] = hn::Zero(d);
  }
  for (size_t kk = 0; kk < k; ++kk) {
    const V b0 = hn::LoadU(d, panel + kk * cols);
    const V b1 = hn::LoadU(d, panel + kk * cols + lanes);
    const float* ak = a + kk * aK;
    for (size_t r = 0; r < kR; ++r) {
      const V av = hn::Set(d, ak[r * aRow]);
      acc0[r] = hn::MulAdd(av, b0, acc0[r]);
      acc1[r] = hn::MulAdd(av, b1, acc1[r]);
    }
  }
  const V alphaV = hn::Set(d, alpha);
  const V betaV = hn::Set(d, beta);
  if (width == cols) {
    for (size_t r = 0; r < kR; ++r) {
      float* row = c + r * ldc;
      const V t0 = hn::Mul(alphaV, acc0[r]);
      const V t1 = hn::Mul(alphaV, acc1[r]);
      if (beta == 0.0f) {
        hn::StoreU(t0, d, row);
        hn::StoreU(t1, d, row + lanes);
      } else {
        hn::StoreU(hn::MulAdd(betaV, hn::LoadU(d, row), t0), d, row);
        hn::StoreU(hn::MulAdd(betaV, hn::LoadU(d, row + lanes), t1), d, row + lanes);
      }
    }
    return;
  }
  // Right edge: the same arithmetic, one element at a time.
  HWY_ALIGN float tile[2 * HWY_MAX_BYTES / sizeof(float)];
  for (size_t r = 0; r < kR; ++r) {
    hn::Store(acc0[r], d, tile);
    hn::Store(acc1[r], d, tile + lanes);
    float* row = c + r * ldc;
    for (size_t j = 0; j < width; ++j) {
      const float t = alpha * tile[j];
      row[j] = beta == 0.0f ? t : std::fma(beta, row[j], t);
    }
  }
}

template <size_t kR>
HWY_NOINLINE void RunBlocks(const float* a, size_t aRow, size_t aK, const float* packed, const TileGemmShape& s,
                            float* c, size_t rowBegin, size_t rowEnd) {
  const DF d;
  const size_t cols = 2 * hn::Lanes(d);
  const size_t n = static_cast<size_t>(s.n), k = static_cast<size_t>(s.k), ldc = static_cast<size_t>(s.ldc);
  const size_t panels = (n + cols - 1) / cols;
  for (size_t p = 0; p < panels; ++p) {
    const float* panel = packed + p * k * cols;
    const size_t j0 = p * cols;
    const size_t width = HWY_MIN(cols, n - j0);
    for (size_t i = rowBegin; i < rowEnd; i += kR) {
      MicroKernel<kR>(a + i * aRow, aRow, aK, panel, k, c + i * ldc + j0, ldc, width, s.alpha, s.beta);
    }
  }
}

/** Rows [rowBegin, rowBegin + rows) with a block of `rows` (< kRows) rows. */
void RunTail(const float* a, size_t aRow, size_t aK, const float* packed, const TileGemmShape& s, float* c,
             size_t rowBegin, size_t rows) {
  if constexpr (kRows > 0) {
    switch (rows) {
      case 1:
        return RunBlocks<1>(a, aRow, aK, packed, s, c, rowBegin, rowBegin + 1);
      case 2:
        return RunBlocks<2>(a, aRow, aK, packed, s, c, rowBegin, rowBegin + 2);
      case 3:
        return RunBlocks<3>(a, aRow, aK, packed, s, c, rowBegin, rowBegin + 3);
      case 4:
        return RunBlocks<4>(a, aRow, aK, packed, s, c, rowBegin, rowBegin + 4);
      case 5:
        return RunBlocks<5>(a, aRow, aK, packed, s, c, rowBegin, rowBegin + 5);
      case 6:
        return RunBlocks<6>(a, aRow, aK, packed, s, c, rowBegin, rowBegin + 6);
      case 7:
        return RunBlocks<7>(a, aRow, aK, packed, s, c, rowBegin, rowBegin + 7);
      default:
        return;
    }
  }
}

template <typename T>
void RunTyped(const TileGemmShape& s, const T* a, const T* b, float* c, float* scratch) {
  if constexpr (kRows > 0) {
    const DF d;
    const size_t cols = 2 * hn::Lanes(d);
    const size_t m = static_cast<size_t>(s.m), n = static_cast<size_t>(s.n), k = static_cast<size_t>(s.k);
    PackB(s, b, scratch, cols);
    const float* aFloat = nullptr;
    size_t aRow = 0, aK = 0;
    if constexpr (sizeof(T) == 2) {  // widen op(A) densely, same orientation
      float* wide = scratch + k * roundUp(n, cols);
      const size_t outer = s.transA ? k : m, inner = s.transA ? m : k;
      for (size_t o = 0; o < outer; ++o) WidenBf16(a + o * static_cast<size_t>(s.lda), wide + o * inner, inner);
      aFloat = wide;
      aRow = s.transA ? 1 : k;
      aK = s.transA ? m : 1;
    } else {
      aFloat = a;
      aRow = s.transA ? 1 : static_cast<size_t>(s.lda);
      aK = s.transA ? static_cast<size_t>(s.lda) : 1;
    }
    constexpr size_t kBlock = kRows > 0 ? kRows : 1;  // (kRows is never 0 here)
    const size_t fullRows = m / kBlock * kBlock;
    RunBlocks<kBlock>(aFloat, aRow, aK, scratch, s, c, 0, fullRows);
    if (fullRows < m) RunTail(aFloat, aRow, aK, scratch, s, c, fullRows, m - fullRows);
  }
}

bool Run(const TileGemmShape& s, const void* a, const void* b, float* c, void* scratch, size_t scratchBytes) {
  if (kRows == 0 || ScratchBytesFor(s) > scratchBytes) return false;
  float* floats = static_cast<float*>(scratch);
  if (s.inputType == ACL_BF16) {
    RunTyped(s, static_cast<const uint16_t*>(a), static_cast<const uint16_t*>(b), c, floats);
  } else {
    RunTyped(s, static_cast<const float*>(a), static_cast<const float*>(b), c, floats);
  }
  return true;
}

const char* Name(const TileGemmShape& s, size_t scratchBytes) {
  if (kRows == 0 || ScratchBytesFor(s) > scratchBytes) return "scalar";
  return hwy::TargetName(HWY_TARGET);
}

void AddRow(float* dst, const float* src, int64_t count) {
  const hn::ScalableTag<float> d;
  const auto n = static_cast<int64_t>(hn::Lanes(d));
  int64_t e = 0;
  for (; e + n <= count; e += n) hn::StoreU(hn::Add(hn::LoadU(d, dst + e), hn::LoadU(d, src + e)), d, dst + e);
  for (; e < count; ++e) dst[e] += src[e];
}

}  // namespace gradkit::tile_gemm_detail::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gradkit::tile_gemm_detail {

HWY_EXPORT(ScratchBytesFor);
HWY_EXPORT(Run);
HWY_EXPORT(Name);
HWY_EXPORT(AddRow);

size_t simdScratchBytes(const TileGemmShape& shape) { return HWY_DYNAMIC_DISPATCH(ScratchBytesFor)(shape); }

bool runSimd(const TileGemmShape& shape, const void* a, const void* b, float* c, void* scratch, size_t scratchBytes) {
  return HWY_DYNAMIC_DISPATCH(Run)(shape, a, b, c, scratch, scratchBytes);
}

const char* simdKernelName(const TileGemmShape& shape, size_t scratchBytes) {
  return HWY_DYNAMIC_DISPATCH(Name)(shape, scratchBytes);
}

void addRow(float* dst, const float* src, int64_t count) { HWY_DYNAMIC_DISPATCH(AddRow)(dst, src, count); }

}  // namespace gradkit::tile_gemm_detail
#endif  // HWY_ONCE
