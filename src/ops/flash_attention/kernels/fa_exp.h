// The exp of the attention softmax, written once as a template over an "ops" type (scalar float or a SIMD vector) so
// that the scalar and SIMD kernels perform the same operations in the same order and give the same bits.
//
//   x clamped to [-104, 89] (NaN lanes: any value; the result is replaced by x at the end)
//   n = round-to-nearest-even(x * log2(e)) by adding and subtracting 1.5 * 2^23 (exact for |n| < 2^22)
//   r = fma(n, -ln2Hi, x), r = fma(n, -ln2Lo, r)            (Cody-Waite with Cephes' split of ln 2)
//   y = 1 + fma(P(r), r * r, r)                             (Cephes' expf polynomial, Horner with fma)
//   exp = (y * 2^floor(n/2)) * 2^(n - floor(n/2))           (two exact-or-once-rounded scalings: denormal results
//                                                             round once, exp(x > 88.72) = +Inf, exp(-104) = 0)
// Error: within 2 ulp of exp(x) for normal results (tested), -Inf gives 0, +Inf gives +Inf, NaN stays NaN.
#pragma once

#include <cstdint>

namespace gradkit::kernels {

inline constexpr float kFaExpLow = -104.0f;  // exp(-104) < 2^-150: every x below rounds to 0
inline constexpr float kFaExpHigh = 89.0f;   // exp(89) > FLT_MAX: every x above overflows to +Inf
inline constexpr float kFaExpLog2e = 1.44269504088896341f;
inline constexpr float kFaExpRoundMagic = 12582912.0f;  // 1.5 * 2^23
inline constexpr float kFaExpLn2Hi = 0.693359375f;
inline constexpr float kFaExpLn2Lo = -2.12194440e-4f;
inline constexpr int kFaExpPolyTerms = 6;
inline constexpr float kFaExpPoly[kFaExpPolyTerms] = {1.9875691500E-4f, 1.3981999507E-3f, 8.3334519073E-3f,
                                                      4.1665795894E-2f, 1.6666665459E-1f, 5.0000001201E-1f};

/**
 * exp(x) lane by lane. `Ops` provides: V, set(float), add, sub, mul, fma(a, b, c) = a * b + c rounded once,
 * clamp(x, lo, hi) (any value for NaN lanes), scaleByPow2(y, shifted) = y * 2^n1 * 2^n2 where n is the integer
 * bits(shifted) - bits(1.5 * 2^23), n1 = n >> 1 (arithmetic), n2 = n - n1, and keepNaN(x, y) = isnan(x) ? x : y.
 */
template <class Ops>
inline typename Ops::V faExp(const Ops& o, typename Ops::V x) {
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
  return o.keepNaN(x, o.scaleByPow2(y, shifted));
}

}  // namespace gradkit::kernels
