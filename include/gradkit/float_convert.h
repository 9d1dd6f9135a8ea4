// Exact conversions between fp32 and the narrow float formats (fp16, bf16, fp8 e4m3fn / e5m2).
// Narrowing rounds to nearest, ties to even; NaN stays NaN. Header-only (inline definitions) so that
// the public opdev types and the library share one implementation.
#ifndef GRADKIT_FLOAT_CONVERT_H_
#define GRADKIT_FLOAT_CONVERT_H_

#include <stdint.h>

#ifdef __cplusplus
namespace gradkit {

/** fp16 bits -> float (exact). */
float halfToFloat(uint16_t bits);
/** float -> fp16 bits, RNE, overflow to Inf. */
uint16_t floatToHalf(float value);
/** bf16 bits -> float (exact). */
float bf16ToFloat(uint16_t bits);
/** float -> bf16 bits, RNE, NaN kept quiet. */
uint16_t floatToBf16(float value);
/** fp8 e4m3fn bits -> float (exact; 0x7f/0xff are NaN, no Inf). */
float fp8e4m3ToFloat(uint8_t bits);
/** float -> fp8 e4m3fn, RNE, values beyond 448 saturate to NaN as torch does for non-saturating casts. */
uint8_t floatToFp8e4m3(float value);
/** fp8 e5m2 bits -> float (exact). */
float fp8e5m2ToFloat(uint8_t bits);
/** float -> fp8 e5m2, RNE, overflow to Inf. */
uint8_t floatToFp8e5m2(float value);

}  // namespace gradkit
#endif

#endif  // GRADKIT_FLOAT_CONVERT_H_
