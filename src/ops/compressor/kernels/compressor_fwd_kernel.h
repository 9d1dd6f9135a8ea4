// Compressor forward kernels (spec compressor.md 3.4-3.6) on raw pointers. They know nothing about aclTensor.
//
// Block kernel: the N = coff*cr rows of one compressed block (given in the stored, interleaved order as row
// pointers: projections of this call's tokens, state-cache history rows, or padding) -> the softmax over the N rows
// per channel and the pooled value. Per channel d, in fp32, the same operations in the same order in the SIMD and
// the scalar instance (so their bits agree; targets without 8 fp32 lanes, native FMA and F16C run the scalar one):
//   z_n  = score_n[d] + ape_n[d]      (ape_n null: z_n = score_n[d]; padding rows: z_n = -inf, k_n = 0)
//   m    = max over n of z_n          (m = m > z ? m : z, rows ascending)
//   e_n  = compressorFwdExp(z_n - m)  (padding rows: 0)
//   S    = compensated sum of e_n     (TwoSum; the errors summed apart, added at the end)
//   s_n  = e_n / S
//   c    = compensated dot of s_n, k_n (TwoProd + TwoSum, as Ogita-Rump-Oishi's Dot2), rounded once to fp32
//   cmpKv[d] = c rounded to BF16 / FP16 (ties to even); softmaxScore[n][d] = s_n, kvOut[n][d] = k_n.
// Nothing depends on the thread count: a block's results depend only on its rows.
#pragma once

#include <cstdint>

namespace gradkit::kernels {

/** The N rows of one compressed block and where its outputs go. */
struct CompressorFwdBlock {
  int64_t rows = 0;                     // N = coff * cmpRatio
  int64_t headDim = 0;                  // D
  const float* const* kv = nullptr;     // [N]: D kv values per row; nullptr marks a padding row
  const float* const* score = nullptr;  // [N]: D score values per row (not read for padding rows)
  const float* const* ape = nullptr;    // [N]: D values added to the score row, or nullptr (history rows carry it)
  bool half = false;                    // cmpKv is FLOAT16 (else BF16)
  uint16_t* cmpKv = nullptr;            // [D]
  float* softmaxScore = nullptr;        // [N, D], or nullptr (gradEnabled false)
  float* kvOut = nullptr;               // [N, D], or nullptr (gradEnabled false)
};

/** Floats of scratch one block call needs (the same for both instances). */
int64_t compressorFwdScratchFloats(int64_t rows);

/** The kernels a plan runs with, chosen once (core/kernel_select.h): the SIMD or the scalar instance. */
struct CompressorFwdKernels {
  /** Computes one block (every channel) with `scratch` (compressorFwdScratchFloats floats, private to the call). */
  void (*block)(const CompressorFwdBlock& block, float* scratch);
  /** FLOAT16 bits -> float, exactly (NaN stays NaN, made quiet). */
  void (*widenHalf)(const uint16_t* from, float* to, int64_t count);
};
extern const CompressorFwdKernels kCompressorFwdSimdKernels;
extern const CompressorFwdKernels kCompressorFwdScalarKernels;

/**
 * exp(x) as both instances compute it, for x <= 0 (the argument is z - max): 0 below ln(FLT_MIN) = -87.3365
 * (-inf included), NaN returned as is; otherwise 2^n * p(r) with n = round(x * log2(e)) (ties to even),
 * r = x - n*ln2 in two fma steps, p a degree-7 polynomial (Cephes' expf coefficients), within 2 ulp.
 */
float compressorFwdExp(float x);

/** The scalar block kernel over channels [first, end) (the SIMD instance runs its channel tail here). */
void compressorFwdChannelsScalar(const CompressorFwdBlock& block, int64_t first, int64_t end, float* scratch);

}  // namespace gradkit::kernels
