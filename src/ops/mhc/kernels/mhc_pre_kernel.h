// MhcPre kernels (spec mhc.md 2.2, 2.4, 2.9, 6) on dense token-major buffers. They know nothing about aclTensor.
//
// Work unit: a block of up to kMhcPreBlockTokens consecutive tokens, run on the calling thread with a private
// scratch slot. Per block, K is walked in chunks of kMhcPreChunkWidth: the chunk of xg = float(x) * gamma
// (HF32-rounded in opImplMode 1) is staged in the scratch, the chunk's sums of squares of raw x are added, and
// h_mix[t, f] += sum over the chunk of xg[t, k] * phi[f, k] (one fused multiply-add chain per chunk, k ascending,
// starting from 0; the chunk sums are added in chunk order). Then the per-token gates and h_in.
//
// Fixed orders (the SIMD and the scalar kernels both keep them, so their bits agree in practice; only the
// matmul gate of the precision standard binds them): the sum of squares runs in 8 partial sums, partial j
// taking k = j mod 8; each chunk sums its k of partial j in ascending order with fma(x, x, s) from 0 and adds that
// to partial j (chunk after chunk), and the partials combine as ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)). Summing a
// whole row of 10240 squares into 8 running partials ran about 2e-6 low in every token (invRms as high), a bias
// that gradPhi and gradGamma add up over tokens; per-chunk partials bring it under 1e-9 (MhcPreValues.InvRms...).
// h_in[d] = fma(x[N-1], hPre[N-1], ... fma(x[1], hPre[1], x[0] * hPre[0])). Nothing depends on the thread count.
#pragma once

#include <cstddef>
#include <cstdint>

#include "acl/acl_base.h"

namespace gradkit::kernels {

/** Tokens per block. Fixed (never derived from the thread count), a multiple of the 4-token register rows. */
inline constexpr int64_t kMhcPreBlockTokens = 32;
/** K per chunk: one chunk of xg (32 tokens) and of a phi panel stay in L1/L2 while they are multiplied. */
inline constexpr int64_t kMhcPreChunkWidth = 512;
/** fp32 lanes of one column vector of packed phi (phi rows are padded with zero rows to a multiple of it). */
inline constexpr int64_t kMhcPreLanes = 8;

/** One checked MhcPre problem: sizes, attributes and dense token-major buffers. */
struct MhcPreProblem {
  int64_t tokens = 0;             // T
  int64_t streams = 0;            // N
  int64_t hidden = 0;             // D
  int64_t fusion = 0;             // F = 2N + R
  bool noResidual = false;        // alpha of 2 elements: F = 2N, no hRes, hPost + hcEps
  bool hf32 = false;              // opImplMode 1: both matmul operands rounded to HF32
  aclDataType xDtype = ACL_BF16;  // BF16 or FLOAT16 (hIn too)
  float alpha[3] = {};
  float normEps = 0, hcEps = 0;
  float inverseWidth = 0;            // the fp32 constant 1/K
  const void* x = nullptr;           // [T, K]
  const float* gamma = nullptr;      // [K], or null (ones)
  const float* bias = nullptr;       // [F]
  const float* packedPhi = nullptr;  // mhcPrePackPhi's layout (HF32-rounded in opImplMode 1)
  bool pairedPhi = false;            // packedPhi holds every value twice in a row (MhcPreKernels::pairedPhi)
  void* hIn = nullptr;               // [T, D], x's dtype
  bool streamHIn = false;            // hIn written with non-temporal stores (a large output would only evict x)
  float* hPost = nullptr;            // [T, N]
  float* hRes = nullptr;             // [T, R], null when noResidual
  float* invRms = nullptr;           // [T], or null (cache not requested)
  float* hMix = nullptr;             // [T, F], or null
  float* hPre = nullptr;             // [T, N], or null

  int64_t width() const { return streams * hidden; }
  /** Times each phi value is stored in packedPhi: 2 when pairedPhi. */
  int64_t phiCopies() const { return pairedPhi ? 2 : 1; }
  /** F rounded up to whole column vectors. */
  int64_t paddedFusion() const { return (fusion + kMhcPreLanes - 1) / kMhcPreLanes * kMhcPreLanes; }
  /** The K chunk length (the last chunk may be shorter). */
  int64_t chunkWidth() const;
};

/**
 * Width in column vectors of the phi panel that starts with `remainingVectors` vectors left: 3 (12 accumulators
 * with 4 token rows), except 4 left splits as 2 + 2. Panel p covers columns [8 * start, 8 * (start + width)).
 */
inline int64_t mhcPrePanelVectors(int64_t remainingVectors) {
  if (remainingVectors == 4) return 2;
  return remainingVectors < 3 ? remainingVectors : 3;
}

/** Floats of packed phi: K * paddedFusion(), twice that when pairedPhi. */
int64_t mhcPrePackedPhiFloats(const MhcPreProblem& problem);

/**
 * Packs phi ([F, K] dense) for the kernels: the panel starting at vector s with w vectors holds element (f, k)
 * at [8*s*K + k*8*w + (f - 8*s)], rows f >= F are zero; each value HF32-rounded when problem.hf32. When
 * problem.pairedPhi every index is doubled and the value stored at it and the next one (an AVX-512 register of 16
 * lanes then holds 8 columns for two tokens side by side). Packs the
 * k range [kBegin, kEnd) (callers split K over threads; the result does not depend on the split).
 */
void mhcPrePackPhi(const MhcPreProblem& problem, const float* phi, int64_t kBegin, int64_t kEnd, float* packed);

/** Floats of scratch one block needs (the same for the SIMD and the scalar kernel). */
int64_t mhcPreScratchFloats(const MhcPreProblem& problem);

/** The kernel a plan runs with, chosen once (core/kernel_select.h): the SIMD or the scalar instance. */
struct MhcPreKernels {
  /** Computes every output of tokens [first, first + count), count <= kMhcPreBlockTokens, with `scratch`
   *  (mhcPreScratchFloats floats, private to the call). */
  void (*block)(const MhcPreProblem& problem, int64_t first, int64_t count, float* scratch);
  /** Whether the kernel the CPU runs now wants phi packed paired (MhcPreProblem::pairedPhi); both layouts work. */
  bool (*pairedPhi)();
};
extern const MhcPreKernels kMhcPreSimdKernels;
extern const MhcPreKernels kMhcPreScalarKernels;

/** The plain scalar block kernel (the reference of the SIMD one, and its fallback on targets without 8 fp32
 *  lanes, FMA and exact fp16 conversion). */
void mhcPreBlockScalar(const MhcPreProblem& problem, int64_t first, int64_t count, float* scratch);

}  // namespace gradkit::kernels
