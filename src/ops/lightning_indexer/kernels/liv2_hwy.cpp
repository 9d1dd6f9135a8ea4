// The SIMD LightningIndexerV2 kernels, compiled once per Highway target and dispatched at run time (x86 from AVX2 on;
// other targets run the scalar kernels): TileGemm for the dot products and, for the scores, the scalar kernel's
// order with keys across the lanes (each lane one key: the head sum of that key, fma by fma), so the bits are the
// scalar kernel's. Lanes past the last key run the scalar loop.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/lightning_indexer/kernels/liv2_hwy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
//
#include <cmath>
#include <cstdint>

#include "core/hwy_lanes-inl.h"
#include "core/tile_gemm.h"
#include "gradkit/float_convert.h"
#include "hwy/highway.h"
#include "ops/lightning_indexer/kernels/liv2_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

HWY_INLINE VF Relu(VF x) { return hn::IfThenZeroElse(hn::Lt(x, hn::Zero(DF())), x); }

bool LiV2Scores(const float* dots, int64_t ldd, const float* w, int64_t rows, int64_t heads, int64_t keys,
                float* scores, int64_t lds) {
  const DF d;
  const auto n = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t r = 0; r < rows; ++r) {
    const float* wRow = w + r * heads;
    const float* dotRows = dots + r * heads * ldd;
    float* out = scores + r * lds;
    int64_t j = 0;
    for (; j + 4 * n <= keys; j += 4 * n) {
      VF a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
      for (int64_t h = 0; h < heads; ++h) {
        const VF weight = hn::Set(d, wRow[h]);
        const float* at = dotRows + h * ldd + j;
        a0 = hn::MulAdd(weight, Relu(hn::LoadU(d, at)), a0);
        a1 = hn::MulAdd(weight, Relu(hn::LoadU(d, at + n)), a1);
        a2 = hn::MulAdd(weight, Relu(hn::LoadU(d, at + 2 * n)), a2);
        a3 = hn::MulAdd(weight, Relu(hn::LoadU(d, at + 3 * n)), a3);
      }
      hn::StoreU(a0, d, out + j);
      hn::StoreU(a1, d, out + j + n);
      hn::StoreU(a2, d, out + j + 2 * n);
      hn::StoreU(a3, d, out + j + 3 * n);
    }
    for (; j + n <= keys; j += n) {
      VF acc = hn::Zero(d);
      for (int64_t h = 0; h < heads; ++h)
        acc = hn::MulAdd(hn::Set(d, wRow[h]), Relu(hn::LoadU(d, dotRows + h * ldd + j)), acc);
      hn::StoreU(acc, d, out + j);
    }
    for (; j < keys; ++j) {
      float acc = 0.0f;
      for (int64_t h = 0; h < heads; ++h) {
        const float dot = dotRows[h * ldd + j];
        acc = std::fma(wRow[h], dot < 0.0f ? 0.0f : dot, acc);
      }
      out[j] = acc;
    }
  }
  return true;
}

bool LiV2WidenHalf(const uint16_t* from, int64_t count, float* to) {
  if constexpr (!kExactHalf) {
    return false;
  } else {
    const DF d;
    const auto n = static_cast<int64_t>(hn::Lanes(d));
    int64_t i = 0;
    for (; i + n <= count; i += n) hn::StoreU(WidenBits<true>(d, from + i), d, to + i);
    for (; i < count; ++i) to[i] = gradkit::halfToFloat(from[i]);
    return true;
  }
}

#else  // no SIMD kernel for this target: the caller runs the scalar one

bool LiV2Scores(const float*, int64_t, const float*, int64_t, int64_t, int64_t, float*, int64_t) { return false; }
bool LiV2WidenHalf(const uint16_t*, int64_t, float*) { return false; }

#endif

}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gradkit::kernels {

HWY_EXPORT(LiV2Scores);
HWY_EXPORT(LiV2WidenHalf);

namespace {

void gemmSimd(const gradkit::GemmShape& g, const void* a, const void* b, float* c, void* scratch) {
  if (g.m <= 0 || g.n <= 0) return;
  gradkit::TileGemm(g).run(a, b, c, scratch);
}

void scoresSimd(const float* dots, int64_t ldd, const float* w, int64_t rows, int64_t heads, int64_t keys,
                float* scores, int64_t lds) {
  if (!HWY_DYNAMIC_DISPATCH(LiV2Scores)(dots, ldd, w, rows, heads, keys, scores, lds)) {
    kLiV2ScalarKernels.scores(dots, ldd, w, rows, heads, keys, scores, lds);
  }
}

void widenHalfSimd(const uint16_t* from, int64_t count, float* to) {
  if (!HWY_DYNAMIC_DISPATCH(LiV2WidenHalf)(from, count, to)) kLiV2ScalarKernels.widenHalf(from, count, to);
}

}  // namespace

const LiV2Kernels kLiV2SimdKernels{gemmSimd, scoresSimd, widenHalfSimd};

}  // namespace gradkit::kernels
#endif  // HWY_ONCE
