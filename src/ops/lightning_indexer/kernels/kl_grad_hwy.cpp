// The SIMD SparseLightningIndexerKLLossGrad element kernels, compiled once per Highway target and dispatched at run
// time, on x86 from AVX2 on (exact FLOAT16 conversion); other targets run the scalar kernels. Every kernel is element
// by element (no sums across lanes), so each lane computes exactly what kl_grad_scalar.cpp computes; the tails run
// the scalar kernels. The products are TileGemm's (its own SIMD kernels keep its scalar reference's bits).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/lightning_indexer/kernels/kl_grad_hwy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
//
#include <cstdint>

#include "core/hwy_lanes-inl.h"
#include "hwy/highway.h"
#include "ops/lightning_indexer/kernels/kl_grad_kernel.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;

/** The whole-vector part of a count: the scalar kernel takes the rest. */
HWY_INLINE int64_t Whole(int64_t count) {
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(DF()));
  return count / lanes * lanes;
}

template <bool kHalf>
HWY_INLINE VF Widen(const uint16_t* from) {
  return WidenBits<kHalf>(DF(), from);
}

bool Widen16(aclDataType dtype, const void* from, int64_t count, float* to) {
  const DF d;
  const auto* bits = static_cast<const uint16_t*>(from);
  const int64_t whole = Whole(count), lanes = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t i = 0; i < whole; i += lanes) {
    hn::StoreU(dtype == ACL_FLOAT16 ? Widen<true>(bits + i) : Widen<false>(bits + i), d, to + i);
  }
  kKlGradScalarKernels.widen(dtype, bits + whole, count - whole, to + whole);
  return true;
}

bool Relu(float* x, int64_t rows, int64_t cols, int64_t ld) {
  const DF d;
  const int64_t whole = Whole(cols), lanes = static_cast<int64_t>(hn::Lanes(d));
  const VF zero = hn::Zero(d);
  for (int64_t r = 0; r < rows; ++r) {
    float* row = x + r * ld;
    for (int64_t c = 0; c < whole; c += lanes) {
      const VF v = hn::LoadU(d, row + c);
      hn::StoreU(hn::IfThenElseZero(hn::Gt(v, zero), v), d, row + c);
    }
    kKlGradScalarKernels.relu(row + whole, 1, cols - whole, ld);
  }
  return true;
}

bool Logits(const float* w, const float* x, int64_t rows, int64_t cols, int64_t ld, float* out) {
  // Double lanes over the columns; the product of two floats is exact in double, so MulAdd rounds what the scalar
  // kernel's add rounds.
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> df;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(dd));
  const int64_t whole = cols / lanes * lanes;
  for (int64_t c = 0; c < whole; c += lanes) {
    auto sum = hn::Zero(dd);
    for (int64_t r = 0; r < rows; ++r) {
      sum = hn::MulAdd(hn::Set(dd, static_cast<double>(w[r])), hn::PromoteTo(dd, hn::LoadU(df, x + r * ld + c)), sum);
    }
    hn::StoreU(hn::DemoteTo(df, sum), df, out + c);
  }
  kKlGradScalarKernels.logits(w, x + whole, rows, cols - whole, ld, out + whole);
  return true;
}

template <bool kHalf>
void GradScoresRow(const float* r, float w, const float* dI, int64_t whole, void* dS) {
  const DF d;
  const hn::Rebind<uint16_t, DF> d16;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  const VF zero = hn::Zero(d), wv = hn::Set(d, w);
  for (int64_t j = 0; j < whole; j += lanes) {
    const auto keep = hn::Gt(hn::LoadU(d, r + j), zero);
    const VF value = hn::IfThenElseZero(keep, hn::Mul(wv, hn::LoadU(d, dI + j)));
    if constexpr (kHalf) {  // rounded to FLOAT16, kept as the float it is
      const hn::Rebind<hwy::float16_t, DF> dh;
      hn::StoreU(hn::PromoteTo(d, hn::BitCast(dh, NarrowBits<true>(d, value))), d, static_cast<float*>(dS) + j);
    } else {
      hn::StoreU(NarrowBits<false>(d, value), d16, static_cast<uint16_t*>(dS) + j);
    }
  }
}

bool GradScores(aclDataType dtype, const float* r, const float* w, const float* dI, int64_t rows, int64_t cols,
                int64_t ld, void* dS) {
  const int64_t whole = Whole(cols);
  const size_t bytes = dtype == ACL_BF16 ? 2 : 4;
  for (int64_t h = 0; h < rows; ++h) {
    void* row = static_cast<char*>(dS) + static_cast<size_t>(h * ld) * bytes;
    if (dtype == ACL_BF16) {
      GradScoresRow<false>(r + h * ld, w[h], dI, whole, row);
    } else {
      GradScoresRow<true>(r + h * ld, w[h], dI, whole, row);
    }
    kKlGradScalarKernels.gradScores(dtype, r + h * ld + whole, w + h, dI + whole, 1, cols - whole, ld,
                                    static_cast<char*>(row) + static_cast<size_t>(whole) * bytes);
  }
  return true;
}

bool Add(const float* from, int64_t count, float* to) {
  const DF d;
  const int64_t whole = Whole(count), lanes = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t i = 0; i < whole; i += lanes)
    hn::StoreU(hn::Add(hn::LoadU(d, to + i), hn::LoadU(d, from + i)), d, to + i);
  kKlGradScalarKernels.add(from + whole, count - whole, to + whole);
  return true;
}

template <bool kHalf>
void NarrowWhole(const float* from, int64_t whole, uint16_t* to) {
  const DF d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t i = 0; i < whole; i += lanes) StoreNarrowBits<kHalf>(d, hn::LoadU(d, from + i), to + i);
}

bool Narrow(aclDataType dtype, const float* from, int64_t count, void* to) {
  const int64_t whole = Whole(count);
  auto* bits = static_cast<uint16_t*>(to);
  if (dtype == ACL_FLOAT16) {
    NarrowWhole<true>(from, whole, bits);
  } else {
    NarrowWhole<false>(from, whole, bits);
  }
  kKlGradScalarKernels.narrow(dtype, from + whole, count - whole, bits + whole);
  return true;
}

template <bool kHalf>
void SumNarrowWhole(const float* from, int64_t count, int64_t stride, int64_t whole, uint16_t* to) {
  const DF d;
  const int64_t lanes = static_cast<int64_t>(hn::Lanes(d));
  for (int64_t i = 0; i < whole; i += lanes) {
    VF sum = hn::LoadU(d, from + i);
    for (int64_t c = 1; c < count; ++c) sum = hn::Add(sum, hn::LoadU(d, from + c * stride + i));
    StoreNarrowBits<kHalf>(d, sum, to + i);
  }
}

bool SumNarrow(aclDataType dtype, const float* from, int64_t count, int64_t stride, int64_t n, void* to) {
  const int64_t whole = Whole(n);
  auto* bits = static_cast<uint16_t*>(to);
  if (dtype == ACL_FLOAT16) {
    SumNarrowWhole<true>(from, count, stride, whole, bits);
  } else {
    SumNarrowWhole<false>(from, count, stride, whole, bits);
  }
  kKlGradScalarKernels.sumNarrow(dtype, from + whole, count, stride, n - whole, bits + whole);
  return true;
}

#else  // no SIMD kernel for this target: the caller runs the scalar one

bool Widen16(aclDataType, const void*, int64_t, float*) { return false; }
bool Logits(const float*, const float*, int64_t, int64_t, int64_t, float*) { return false; }
bool Relu(float*, int64_t, int64_t, int64_t) { return false; }
bool GradScores(aclDataType, const float*, const float*, const float*, int64_t, int64_t, int64_t, void*) {
  return false;
}
bool Add(const float*, int64_t, float*) { return false; }
bool Narrow(aclDataType, const float*, int64_t, void*) { return false; }
bool SumNarrow(aclDataType, const float*, int64_t, int64_t, int64_t, void*) { return false; }

#endif

}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gradkit::kernels {

HWY_EXPORT(Widen16);
HWY_EXPORT(Logits);
HWY_EXPORT(Relu);
HWY_EXPORT(GradScores);
HWY_EXPORT(Add);
HWY_EXPORT(Narrow);
HWY_EXPORT(SumNarrow);

namespace {

void widenSimd(aclDataType dtype, const void* from, int64_t count, float* to) {
  if (!HWY_DYNAMIC_DISPATCH(Widen16)(dtype, from, count, to)) kKlGradScalarKernels.widen(dtype, from, count, to);
}

void logitsSimd(const float* w, const float* x, int64_t rows, int64_t cols, int64_t ld, float* out) {
  if (!HWY_DYNAMIC_DISPATCH(Logits)(w, x, rows, cols, ld, out)) kKlGradScalarKernels.logits(w, x, rows, cols, ld, out);
}

void reluSimd(float* x, int64_t rows, int64_t cols, int64_t ld) {
  if (!HWY_DYNAMIC_DISPATCH(Relu)(x, rows, cols, ld)) kKlGradScalarKernels.relu(x, rows, cols, ld);
}

void gradScoresSimd(aclDataType dtype, const float* r, const float* w, const float* dI, int64_t rows, int64_t cols,
                    int64_t ld, void* dS) {
  if (!HWY_DYNAMIC_DISPATCH(GradScores)(dtype, r, w, dI, rows, cols, ld, dS)) {
    kKlGradScalarKernels.gradScores(dtype, r, w, dI, rows, cols, ld, dS);
  }
}

void addSimd(const float* from, int64_t count, float* to) {
  if (!HWY_DYNAMIC_DISPATCH(Add)(from, count, to)) kKlGradScalarKernels.add(from, count, to);
}

void narrowSimd(aclDataType dtype, const float* from, int64_t count, void* to) {
  if (!HWY_DYNAMIC_DISPATCH(Narrow)(dtype, from, count, to)) kKlGradScalarKernels.narrow(dtype, from, count, to);
}

void sumNarrowSimd(aclDataType dtype, const float* from, int64_t count, int64_t stride, int64_t n, void* to) {
  if (!HWY_DYNAMIC_DISPATCH(SumNarrow)(dtype, from, count, stride, n, to)) {
    kKlGradScalarKernels.sumNarrow(dtype, from, count, stride, n, to);
  }
}

void gemmSimd(const TileGemm& gemm, const void* a, const void* b, float* c, void* scratch) {
  gemm.run(a, b, c, scratch);
}

}  // namespace

const KlGradKernels kKlGradSimdKernels{widenSimd, logitsSimd, reluSimd,      gradScoresSimd,
                                       addSimd,   narrowSimd, sumNarrowSimd, gemmSimd};

}  // namespace gradkit::kernels
#endif  // HWY_ONCE
