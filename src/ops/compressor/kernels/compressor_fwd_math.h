// Constants both Compressor forward block kernels use (compressor_fwd_kernel.h): the exp of the softmax and the
// scratch size.
#pragma once

namespace gradkit::kernels {

/** Below ln(FLT_MIN) exp is flushed to 0 (the argument is z - max <= 0; -inf included). */
inline constexpr float kCompressorExpMin = -87.3365f;
inline constexpr float kCompressorLog2e = 1.44269504088896341f;
/** ln 2 split in two (Cephes): the high part has few bits, so n * hi is exact for |n| <= 126. */
inline constexpr float kCompressorLn2Hi = 0.693359375f;
inline constexpr float kCompressorLn2Lo = -2.12194440e-4f;
/** exp(r) = 1 + r + r^2 * P(r) on |r| <= ln2/2, P by Horner from the first coefficient (Cephes' expf). */
inline constexpr int kCompressorExpPolyTerms = 6;
inline constexpr float kCompressorExpPoly[kCompressorExpPolyTerms] = {
    1.9875691500E-4f, 1.3981999507E-3f, 8.3334519073E-3f, 4.1665795894E-2f, 1.6666665459E-1f, 5.0000001201E-1f};
/** fp32 lanes of the widest vector any target uses (AVX-512): the scratch holds N rows of one vector. */
inline constexpr long kCompressorMaxLanes = 16;

}  // namespace gradkit::kernels
