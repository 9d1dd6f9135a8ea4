// CompressorGrad kernels on dense buffers (spec compressor.md 4.2 and 5.7). They know nothing about aclTensor: the
// plan hands them rows of x's dtype (FLOAT16 or BF16) and fp32 data. Each kernel is single-threaded and works on a
// piece of channels, so the plan can split a block's channels over threads without splitting any sum.
//
// Numerics (every kernel of both tables computes exactly this, so the SIMD and scalar tables give the same bits):
//   w[d]  = the compensated dot product of S[., d] and K[., d] over the block's N rows in stored order (Ogita, Rump and
//           Oishi's Dot2): each product split exactly by Dekker's TwoProduct (Veltkamp split with 4097, no fused
//           multiply-add), the high parts summed with Knuth's TwoSum, every error (product and sum) added into a
//           separate fp32 sum; kept as the unevaluated pair w = wHi + wLo (the sum and the error sum). Its error is
//           about N^2 u^2 of sum |S*K|, where a Kahan sum keeps an error of about u |w| (spec 5.7);
//   dK    = dC * S;  (s, e) = TwoSum(K, -wHi) (s + e = K - wHi exactly);  dZ = S * (dC*s + dC*(e - wLo)), so K - w
//           keeps the pair's accuracy even when K and w cancel (spec 5.7 rounds w to fp32 first, which leaves up to
//           half an ulp of w in K - w: all of dZ when K and w agree to 7 digits);
//   A     = dK, dZ in fp32 (the GEMM operands; upstream rounds them to x's dtype, we keep them: the GEMMs are fp32);
//   dApe  : dZ Kahan-added into a running sum and compensation per element.
#pragma once

#include <cstdint>

namespace gradkit::kernels {

/** One block's fp32 softmaxScore and kv, from the piece's first channel: row n at s + n * ld. */
struct CompressorGradBlock {
  const float* s = nullptr;  // softmaxScore [N, ld]
  const float* k = nullptr;  // kv [N, ld]
  int64_t rows = 0;          // N = coff * cr (interleaved: row r * coff + h is half h at position mod cr = r)
  int64_t ld = 0;            // D
  int64_t width = 0;         // channels of the piece
};

/** The compensated column sums of S * K over the block's rows, w[d] = wHi[d] + wLo[d] for d < width. */
using CompressorGradColumnSumsFn = void (*)(const CompressorGradBlock& block, float* wHi, float* wLo);

/**
 * Rows r0 .. r0 + count - 1 of half h of one block (row n = r * coff + h), each the token of one A row: dK and dZ
 * of the piece's channels into the A row (kv part and score part), dZ Kahan-added into dApe row r.
 */
struct CompressorGradRoute {
  bool half = false;           // x's dtype is FLOAT16 (else BF16)
  CompressorGradBlock block;   // the block's S and K at the piece's first channel
  const void* dC = nullptr;    // the block's dCmpKv row at the piece's first channel (x's dtype)
  const float* wHi = nullptr;  // [width] the block's column sums: high parts
  const float* wLo = nullptr;  // [width] and low parts
  int64_t coff = 1;            // 1 or 2
  int64_t h = 0;               // half: 0 = prev when coff = 2, coff - 1 = cur
  int64_t r0 = 0;              // first row (position mod cr)
  int64_t count = 0;           // rows
  float* aKv = nullptr;        // A row of row r0's token, kv part, at the piece's channel of half h
  float* aScore = nullptr;     // the same row's score part
  int64_t ldA = 0;             // floats from one A row to the next
  float* apeSum = nullptr;     // dApe running sums, row 0 at the piece's channel of half h; row r at r * ldApe
  float* apeComp = nullptr;    // their Kahan compensations (the negated low parts), same layout
  int64_t ldApe = 0;           // coff * D
};

using CompressorGradRouteFn = void (*)(const CompressorGradRoute& route);

/** count values of x's dtype (FLOAT16 when `half`, else BF16) widened exactly to fp32. */
using CompressorGradWidenFn = void (*)(bool half, const void* from, float* to, int64_t count);

/** count fp32 values rounded to x's dtype (nearest, ties to even; NaN stays NaN, overflow gives Inf). */
using CompressorGradNarrowFn = void (*)(bool half, const float* from, void* to, int64_t count);

/** The kernels a plan runs with. */
struct CompressorGradKernels {
  CompressorGradColumnSumsFn columnSums;
  CompressorGradRouteFn route;
  CompressorGradWidenFn widen;
  CompressorGradNarrowFn narrow;
};

/** Highway kernels (dynamic dispatch; targets that cannot give the scalar bits fall back to them). */
extern const CompressorGradKernels kCompressorGradSimdKernels;
/** The plain scalar reference (GRADKIT_FORCE_SCALAR=1). */
extern const CompressorGradKernels kCompressorGradScalarKernels;

}  // namespace gradkit::kernels
