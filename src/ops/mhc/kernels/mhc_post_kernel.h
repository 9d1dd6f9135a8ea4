// MhcPost and MhcPostBackward kernels on dense token-major buffers. They know nothing about aclTensor.
//
// Work unit: a run of consecutive tokens; every token's results depend on that token's inputs only, so the bits do
// not depend on how tokens are split over threads.
//
// Fixed orders (the SIMD and the scalar kernels keep them exactly, so their bits agree):
//   forward, per element d of stream j:   acc = hOut[d] * hPost[j]; acc = fma(x[i][d], hRes[i][j], acc), i ascending
//                                         (no hRes: acc = x[j][d] + hOut[d] * hPost[j]); rounded once (RNE).
//   backward, sums over streams:          gradX[i][d] = g[0][d] * hRes[i][0], then fma over j ascending (no hRes:
//                                         gradX = g, bit for bit); gradHOut[d] = g[0][d] * hPost[0], then fma.
//   backward, sums over D (gradHRes, gradHPost): kMhcPostSumLanes partial sums, partial l taking d = l mod 16 in
//                                         ascending order with fma, d past D contributing fma(0, 0, s); combined by
//                                         mhcPostCombineLanes.
#pragma once

#include <cstdint>

#include "acl/acl_base.h"

namespace gradkit::kernels {

/** Partial sums of every sum over D (the lanes of one AVX-512 register, two AVX2 ones). */
inline constexpr int64_t kMhcPostSumLanes = 16;

/** The partial sums' total: a balanced tree, ((s0+s1)+(s2+s3)) + ... pairwise up to one value. */
inline float mhcPostCombineLanes(const float* partial) {
  float level[kMhcPostSumLanes];
  for (int64_t l = 0; l < kMhcPostSumLanes; ++l) level[l] = partial[l];
  for (int64_t width = kMhcPostSumLanes / 2; width >= 1; width /= 2) {
    for (int64_t l = 0; l < width; ++l) level[l] = level[2 * l] + level[2 * l + 1];
  }
  return level[0];
}

/** One checked MhcPost problem. 16-bit tensors hold FLOAT16 or BF16 bits (dtype). */
struct MhcPostProblem {
  int64_t tokens = 0, streams = 0, hidden = 0;  // T, N, D
  aclDataType dtype = ACL_BF16;
  const uint16_t* x = nullptr;     // [T, N, D]
  const float* hRes = nullptr;     // [T, N, N], or null: a plain residual
  const uint16_t* hOut = nullptr;  // [T, D]
  const float* hPost = nullptr;    // [T, N]
  uint16_t* out = nullptr;         // [T, N, D]
  bool streamOut = false;          // out written with non-temporal stores where aligned (a large output)
  bool bf16Convert = false;        // the CPU rounds to BF16 in one instruction (AVX512_BF16): the same bits, faster
};

/** One checked MhcPostBackward problem. */
struct MhcPostBackwardProblem {
  int64_t tokens = 0, streams = 0, hidden = 0;
  aclDataType dtype = ACL_BF16;
  const uint16_t* gradOutput = nullptr;  // [T, N, D]
  const uint16_t* x = nullptr;           // [T, N, D]
  const float* hRes = nullptr;           // [T, N, N], or null: gradX = gradOutput
  const uint16_t* hOut = nullptr;        // [T, D]
  const float* hPost = nullptr;          // [T, N]
  uint16_t* gradX = nullptr;             // [T, N, D]
  float* gradHRes = nullptr;             // [T, N, N]
  uint16_t* gradHOut = nullptr;          // [T, D]
  float* gradHPost = nullptr;            // [T, N]
  bool streamGrads = false;              // gradX, gradHOut written with non-temporal stores where aligned
  bool bf16Convert = false;              // as MhcPostProblem::bf16Convert
};

/** The kernels of one implementation; each runs tokens [first, first + count). */
struct MhcPostKernels {
  void (*forward)(const MhcPostProblem& problem, int64_t first, int64_t count);
  void (*backward)(const MhcPostBackwardProblem& problem, int64_t first, int64_t count);
};

/** Highway, dispatched per CPU (AVX2 and up; the scalar kernels elsewhere). */
extern const MhcPostKernels kMhcPostSimdKernels;
/** Plain C++, the reference the SIMD kernels are checked against. */
extern const MhcPostKernels kMhcPostScalarKernels;

}  // namespace gradkit::kernels
