// The constants of the attention softmax's exp (the template is in fa_exp-inl.h): the scalar and SIMD kernels perform
// the same operations in the same order and give the same bits.
//
//   x clamped to [-87, 89] (NaN lanes: any value; the result is replaced by x at the end)
//   n = round-to-nearest-even(x * log2(e)) by adding and subtracting 1.5 * 2^23 (exact for |n| < 2^22)
//   r = fma(n, -ln2Hi, x), r = fma(n, -ln2Lo, r)            (Cody-Waite with Cephes' split of ln 2)
//   y = 1 + fma(P(r), r * r, r)                             (Cephes' expf polynomial, Horner with fma)
//   exp = (y * 2^floor(n/2)) * 2^(n - floor(n/2))           (two exact-or-once-rounded scalings: exp(x > 88.72) =
//                                                             +Inf)
//   x < -87 gives 0                                         (chosen on the input, not the result: exp(-87) =
//                                                             1.6e-38 is normal, so no lane ever computes a subnormal
//                                                             or underflowing product; cores take a microcode assist
//                                                             on each, which made far-away keys (ALiBi, sharp
//                                                             softmax) 1.3-1.45x slower on Zen 5 and 6x on Intel)
// Error: within 2 ulp of exp(x) for x >= -87 (tested), 0 below (results under 1.6e-38), -Inf gives 0, +Inf gives
// +Inf, NaN stays NaN.
#pragma once

#include <cstdint>

namespace gradkit::kernels {

inline constexpr float kFaExpLow = -87.0f;  // every x below gives 0; exp(-87) = 1.6e-38 >= FLT_MIN
inline constexpr float kFaExpHigh = 89.0f;  // exp(89) > FLT_MAX: every x above overflows to +Inf
inline constexpr float kFaExpLog2e = 1.44269504088896341f;
inline constexpr float kFaExpRoundMagic = 12582912.0f;  // 1.5 * 2^23
inline constexpr float kFaExpLn2Hi = 0.693359375f;
inline constexpr float kFaExpLn2Lo = -2.12194440e-4f;
inline constexpr int kFaExpPolyTerms = 6;
inline constexpr float kFaExpPoly[kFaExpPolyTerms] = {1.9875691500E-4f, 1.3981999507E-3f, 8.3334519073E-3f,
                                                      4.1665795894E-2f, 1.6666665459E-1f, 5.0000001201E-1f};

}  // namespace gradkit::kernels
