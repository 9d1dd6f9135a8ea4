// faExp (fa_exp.h), written once as a template over an "ops" type (scalar float or a SIMD vector). Included once per
// Highway target (foreach_target), hence the toggle guard: the template must be compiled inside each target's
// region, or GCC keeps the vector operations it calls out of line. The scalar kernels include it for the static
// target and instantiate it with float.
#if defined(GRADKIT_OPS_FLASH_ATTENTION_KERNELS_FA_EXP_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GRADKIT_OPS_FLASH_ATTENTION_KERNELS_FA_EXP_INL_H_
#undef GRADKIT_OPS_FLASH_ATTENTION_KERNELS_FA_EXP_INL_H_
#else
#define GRADKIT_OPS_FLASH_ATTENTION_KERNELS_FA_EXP_INL_H_
#endif

#include <cfloat>

#include "hwy/highway.h"
#include "ops/flash_attention/kernels/fa_exp.h"

HWY_BEFORE_NAMESPACE();
namespace gradkit::kernels::HWY_NAMESPACE {

/**
 * exp(x) lane by lane. `Ops` provides: V, set(float), add, sub, mul, fma(a, b, c) = a * b + c rounded once,
 * clamp(x, lo, hi) (any value for NaN lanes), scaleByPow2(y, shifted) = y * 2^n1 * 2^n2 where n is the integer
 * bits(shifted) - bits(1.5 * 2^23), n1 = n >> 1 (arithmetic), n2 = n - n1, zeroBelow(x, limit, y) = x < limit ? 0 : y
 * (false for NaN x) and keepNaN(x, y) = isnan(x) ? x : y.
 */
template <class Ops>
HWY_INLINE typename Ops::V faExp(const Ops& o, typename Ops::V x) {
  using V = typename Ops::V;
  const V xc = o.clamp(x, kFaExpLow, kFaExpHigh);
  const V shifted = o.add(o.mul(xc, o.set(kFaExpLog2e)), o.set(kFaExpRoundMagic));
  const V n = o.sub(shifted, o.set(kFaExpRoundMagic));
  V r = o.fma(n, o.set(-kFaExpLn2Hi), xc);
  r = o.fma(n, o.set(-kFaExpLn2Lo), r);
  V p = o.set(kFaExpPoly[0]);
  for (int i = 1; i < kFaExpPolyTerms; ++i) p = o.fma(p, r, o.set(kFaExpPoly[i]));
  V y = o.fma(p, o.mul(r, r), r);
  y = o.add(y, o.set(1.0f));
  return o.keepNaN(x, o.zeroBelow(x, kFaExpLow, o.scaleByPow2(y, shifted)));
}

/** faExp's operations on the lanes of a Highway vector of tag D. */
template <class D>
struct FaExpVecOps {
  using V = hwy::HWY_NAMESPACE::Vec<D>;
  V set(float value) const { return hwy::HWY_NAMESPACE::Set(D(), value); }
  V add(V a, V b) const { return hwy::HWY_NAMESPACE::Add(a, b); }
  V sub(V a, V b) const { return hwy::HWY_NAMESPACE::Sub(a, b); }
  V mul(V a, V b) const { return hwy::HWY_NAMESPACE::Mul(a, b); }
  V fma(V a, V b, V c) const { return hwy::HWY_NAMESPACE::MulAdd(a, b, c); }
  V clamp(V x, float lo, float hi) const {
    return hwy::HWY_NAMESPACE::Min(hwy::HWY_NAMESPACE::Max(x, set(lo)), set(hi));
  }
  V scaleByPow2(V y, V shifted) const {
    namespace hn = hwy::HWY_NAMESPACE;
    const hn::RebindToSigned<D> di;
    const auto n = hn::Sub(hn::BitCast(di, shifted), hn::BitCast(di, set(kFaExpRoundMagic)));
    const auto n1 = hn::ShiftRight<1>(n);
    const auto n2 = hn::Sub(n, n1);
    const auto bias = hn::Set(di, 127);
    const V p1 = hn::BitCast(D(), hn::ShiftLeft<23>(hn::Add(n1, bias)));
    const V p2 = hn::BitCast(D(), hn::ShiftLeft<23>(hn::Add(n2, bias)));
    return hn::Mul(hn::Mul(y, p1), p2);
  }
  V flushSubnormal(V y) const {  // faFlushSubnormal
    namespace hn = hwy::HWY_NAMESPACE;
    return hn::IfThenZeroElse(hn::Lt(hn::Abs(y), set(FLT_MIN)), y);
  }
  V zeroBelow(V x, float limit, V y) const {
    return hwy::HWY_NAMESPACE::IfThenZeroElse(hwy::HWY_NAMESPACE::Lt(x, set(limit)), y);
  }
  V keepNaN(V x, V y) const { return hwy::HWY_NAMESPACE::IfThenElse(hwy::HWY_NAMESPACE::IsNaN(x), x, y); }
};

/** faExp on every lane of x: the bits of the scalar faExp, lane by lane. */
template <class D>
HWY_INLINE hwy::HWY_NAMESPACE::Vec<D> FaExpVec(D, hwy::HWY_NAMESPACE::Vec<D> x) {
  return faExp(FaExpVecOps<D>{}, x);
}

}  // namespace gradkit::kernels::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // GRADKIT_OPS_FLASH_ATTENTION_KERNELS_FA_EXP_INL_H_
