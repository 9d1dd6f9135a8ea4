// The plan of one aclnnMhcPreBackward[V2] call: made once in GetWorkspaceSize, run on the stream.
//
// Two passes over the tokens (spec mhc.md 3.4):
//  1. token-parallel over fixed chunks: per token g_pre, dz, the grad_alpha terms, g_r; dm [group, F] and the RMS
//     coefficient -g_r * r^3 / K go to the workspace, grad_bias / grad_alpha partial sums per chunk (compensated),
//     then reduced over the chunks in order;
//  2. column-parallel over fixed column blocks of K: each slot owns a range of whole blocks and walks the token blocks
//     in order, computing dxg = dm . phi, grad_x, grad_gamma and grad_phi += dm^T . (x * gamma) for its columns
//     16 columns at a time, fused (token-block partial sums added with Kahan compensation). No sum is split by thread,
//     so the bits never depend on the thread count.
// Both passes run one group of tokens (whole token blocks) at a time, so the workspace does not grow with T.
#pragma once

#include <cstdint>
#include <optional>

#include "aclnn/aclnn_base.h"
#include "opapi/staged_tensor.h"
#include "opapi/workspace.h"
#include "ops/mhc/kernels/mhc_pre_backward_kernel.h"
#include "ops/mhc/mhc_args.h"

namespace gradkit::ops {

/** The dense buffers the passes read: the op's inputs, or a fused operator's (MhcPreSinkhornBackward). */
struct MhcPreBackwardIn {
  const unsigned char* x;
  const float* phi;
  const float* alpha;
  const unsigned char* gradHIn;
  const float* gradHPost;
  const float* gradHRes;
  const float* invRms;
  const float* hMix;
  const float* hPre;
  const float* hPost;
  const float* gamma;              // null: ones
  const unsigned char* gradXPost;  // null: zeros
};

/** The dense buffers the passes write. */
struct MhcPreBackwardOut {
  unsigned char* gradX;
  float* gradPhi;
  float* gradAlpha;
  float* gradBias;
  float* gradGamma;  // null without gamma
};

/** The two passes over the tokens: sizes, attributes, their workspace regions and kernels. */
struct MhcPreBackwardPasses {
  MhcDims dims;
  aclDataType dtype = ACL_BF16;  // x, gradHIn, gradXPost, gradX
  float hcEps = 0.0f;
  bool hf32 = false;  // opImplMode 1: matmul operands rounded to HF32
  // fp32 mode with gamma: gamma folded into the packed phi (dxg' = dm . (gamma * phi) is gamma * dxg), the kernels
  // run without gamma (xg = x), and the end turns the sums P = sum_t dm^T x into grad_phi = gamma * P and
  // grad_gamma = sum_f phi * P: three products and an add fewer per element of x. HF32 mode keeps x * gamma as the
  // rounded matmul operand, as upstream's kernels round it.
  bool gammaFactored = false;

  // Both passes one group of groupTokens tokens (whole token blocks) at a time. Pass 1: the group's tokens in chunks
  // of tokenChunk; dm [groupTokens, F] and rmsCoef [groupTokens] (fp32), per-chunk sums [group's chunks, F + 3].
  int64_t groupTokens = 0, tokenChunk = 0;
  WorkspaceRegion dm, dmTiles, rmsCoef, chunkSums;  // dmTiles: dm in tiles of kMhcDmTileRows tokens
  // Pass 2: columns in blocks of columnBlock, a fixed range of whole blocks per slot (one slot per thread at most),
  // tokens in blocks of tokenBlock. phiPack, phiSum, phiComp [blocks, F, ldPack]: phi (HF32-rounded in mode 1),
  // grad_phi's running sums and their Kahan compensations by column block; gammaComp [K]: grad_gamma's
  // compensation; slotScratch: slots x slotBytes of per-slot scratch.
  int64_t tokenBlock = 0, columnBlock = 0, ldPack = 0, slots = 0;
  int64_t slotGammaPart = 0, slotXgStrip = 0;  // floats from a slot's base: [columnBlock], [tokenBlock, strip]
  uint64_t slotBytes = 0;
  WorkspaceRegion phiPack, phiSum, phiComp, gammaComp, slotScratch;
  const kernels::MhcPreBackwardKernels* kernels = nullptr;
};

/** Books the passes' workspace for a checked problem (T > 0). */
MhcPreBackwardPasses planMhcPreBackwardPasses(const MhcDims& dims, aclDataType dtype, float hcEps, bool hf32,
                                              bool hasGamma, WorkspaceBooking& booking);

/** Runs both passes on dense buffers (mhc_pre_backward_run.cpp); `memory` holds the booked workspace. */
void runMhcPreBackwardPasses(const MhcPreBackwardPasses& passes, const MhcPreBackwardIn& in,
                             const MhcPreBackwardOut& out, void* memory);

struct MhcPreBackwardPlan {
  WorkspaceBooking workspace;
  // Every tensor as the kernels read it: dense, staged when the caller's view is not.
  StagedTensor x, phi, alpha, gradHIn, gradHPost, gradHRes, invRms, hMix, hPre, hPost;
  std::optional<StagedTensor> gamma, gradXPost, gradGamma;  // gradGamma only when gamma is given
  StagedTensor gradX, gradPhi, gradAlpha, gradBias;
  MhcPreBackwardPasses passes;

  /** Runs the op with the caller's workspace memory (at least workspace.totalBytes()). */
  aclnnStatus run(void* memory) const;
};

/** Plans a checked call (mHC rejects empty tensors, so every checked call computes something). */
MhcPreBackwardPlan planMhcPreBackward(const MhcPreBackwardArgs& args);

}  // namespace gradkit::ops
