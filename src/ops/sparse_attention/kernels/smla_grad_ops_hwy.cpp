// The Highway steps of the sparse MLA backward (smla_grad_ops.h), compiled once per target and dispatched at run time.
// x86 targets from AVX2 on run the striped sums with one lane of an 8-lane vector per stripe and the element-wise
// steps on full vectors, in the scalar steps' order; the rest of a row runs the scalar operations, and every other
// target the scalar table, so the bits are the scalar table's. The key gradients run TileGemmRowsAdd.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "ops/sparse_attention/kernels/smla_grad_ops_hwy.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
//
#include <cfloat>
#include <cstdint>

#include "core/hwy_lanes-inl.h"
#include "core/tile_gemm_rows_add.h"
#include "hwy/highway.h"
#include "ops/flash_attention/kernels/fa_softmax.h"
#include "ops/sparse_attention/kernels/smla_grad_ops.h"
#include "ops/sparse_attention/kernels/smla_operands.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2

using D8 = hn::FixedTag<float, kFaStripes>;
using V8 = hn::Vec<D8>;

/** The stripes in `part` summed by the tree after the tail [from, count) was added lane by lane (stripe j mod 8). */
template <class Term>
HWY_INLINE float FinishStripes(V8 stripes, int64_t from, int64_t count, const Term& term) {
  HWY_ALIGN float part[kFaStripes];
  hn::Store(stripes, D8(), part);
  for (int k = 0; from < count; ++from, ++k) part[k] += term(from);
  return faReduceSum(part);
}

bool ScoreGradients(const float* p, float* dp, int64_t keys, float d, float* sum) {
  const D8 d8;
  const V8 dv = hn::Set(d8, d), tiny = hn::Set(d8, FLT_MIN);
  V8 stripes = hn::Zero(d8);
  int64_t j = 0;
  for (; j + kFaStripes <= keys; j += kFaStripes) {
    const V8 pv = hn::LoadU(d8, p + j), dpv = hn::LoadU(d8, dp + j);
    stripes = hn::Add(stripes, hn::Mul(pv, dpv));
    const V8 ds = hn::Mul(pv, hn::Sub(dpv, dv));
    hn::StoreU(hn::IfThenZeroElse(hn::Lt(hn::Abs(ds), tiny), ds), d8, dp + j);
  }
  const int64_t tail = j;
  *sum = FinishStripes(stripes, tail, keys, [&](int64_t t) { return p[t] * dp[t]; });
  for (; j < keys; ++j) dp[j] = faFlushSubnormal(p[j] * (dp[j] - d));
  return true;
}

template <bool kHalf>
HWY_INLINE float IoDotTyped(const uint16_t* x, const uint16_t* y, int64_t count) {
  const D8 d8;
  V8 stripes = hn::Zero(d8);
  int64_t j = 0;
  for (; j + kFaStripes <= count; j += kFaStripes) {
    stripes = hn::Add(stripes, hn::Mul(WidenBits<kHalf>(d8, x + j), WidenBits<kHalf>(d8, y + j)));
  }
  const aclDataType type = kHalf ? ACL_FLOAT16 : ACL_BF16;
  return FinishStripes(stripes, j, count,
                       [&](int64_t t) { return smlaIoToFloat(type, x[t]) * smlaIoToFloat(type, y[t]); });
}

bool IoDot(aclDataType ioType, const uint16_t* x, const uint16_t* y, int64_t count, float* sum) {
  *sum = ioType == ACL_BF16 ? IoDotTyped<false>(x, y, count) : IoDotTyped<true>(x, y, count);
  return true;
}

bool RoundToIo(aclDataType ioType, const float* src, int64_t count, uint16_t* dst) {
  if (ioType == ACL_BF16) {
    NarrowRow<false>(src, count, dst);
  } else {
    NarrowRow<true>(src, count, dst);
  }
  return true;
}

#else  // no SIMD steps for this target: the caller runs the scalar ones

bool ScoreGradients(const float*, float*, int64_t, float, float*) { return false; }
bool IoDot(aclDataType, const uint16_t*, const uint16_t*, int64_t, float*) { return false; }
bool RoundToIo(aclDataType, const float*, int64_t, uint16_t*) { return false; }

#endif

}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gradkit::kernels {

HWY_EXPORT(ScoreGradients);
HWY_EXPORT(IoDot);
HWY_EXPORT(RoundToIo);

namespace {

float scoreGradientsSimd(const float* p, float* dp, int64_t keys, float d) {
  float sum = 0.0f;
  if (HWY_DYNAMIC_DISPATCH(ScoreGradients)(p, dp, keys, d, &sum)) return sum;
  return kSmlaGradScalarOps.scoreGradients(p, dp, keys, d);
}

float ioDotSimd(aclDataType ioType, const uint16_t* x, const uint16_t* y, int64_t count) {
  float sum = 0.0f;
  if (HWY_DYNAMIC_DISPATCH(IoDot)(ioType, x, y, count, &sum)) return sum;
  return kSmlaGradScalarOps.ioDot(ioType, x, y, count);
}

void keyGradientsSimd(const GemmShape& first, const void* a1, const void* b1, const GemmShape& second, const void* a2,
                      const void* b2, float* const* rows, float* tile, void* scratch) {
  TileGemmRowsAdd(first, second).run(a1, b1, a2, b2, rows, tile, scratch);
}

void roundToIoSimd(aclDataType ioType, const float* src, int64_t count, uint16_t* dst) {
  if (!HWY_DYNAMIC_DISPATCH(RoundToIo)(ioType, src, count, dst)) kSmlaGradScalarOps.roundToIo(ioType, src, count, dst);
}

}  // namespace

const SmlaGradOps kSmlaGradSimdOps{scoreGradientsSimd, ioDotSimd, keyGradientsSimd, roundToIoSimd,
                                   faRoundRowsToBf16Simd};  // flash attention's (fa_softmax.h)

}  // namespace gradkit::kernels
#endif  // HWY_ONCE
