// The plan of one aclnnCompressor call: made once in GetWorkspaceSize, run on the stream.
//
// The run has three phases, in this order:
//   1. projections: KV = x . wkv^T and G = x . wgate^T for every row of x, fp32, into the workspace ([T, 2*coff*D]:
//      KV then G), in panels of kCompressorPanelRows rows (core/gemm.h, one GEMM per weight: BF16 operands as given;
//      FP16 panels widened to fp32 first, the weights once);
//   2. blocks: every output row (compressed block or padding) from the projections, the APE and the state-cache
//      history (kernels/compressor_fwd_kernel.h), in fixed slices of rows;
//   3. state cache: the tokens' kv_state (KV) and score_state (G + APE) rows written, batch after batch and position
//      after position (a later write to the same cache row wins), in parallel over channel slices.
// Every history read (phase 2) sees the cache as it was before the call: no write starts before the last block is done.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "core/gemm.h"
#include "opapi/staged_tensor.h"
#include "opapi/workspace.h"
#include "ops/compressor/compressor_args.h"
#include "ops/compressor/compressor_fwd_state_cache.h"
#include "ops/compressor/kernels/compressor_fwd_kernel.h"

namespace gradkit::ops {

/** Rows of x one projection GEMM covers (fixed: the bits of a row never depend on the thread count). */
inline constexpr int64_t kCompressorPanelRows = 1024;

struct CompressorPlan {
  WorkspaceBooking workspace;
  CompressorProblem problem;
  bool half = false;         // x is FLOAT16 (else BF16)
  bool gradEnabled = false;  // softmaxScore and kv are written
  int64_t cacheMode = kCompressorPagedCache;
  CompressorCacheMap cacheMap;
  aclTensor cache;  // the state cache as addressed (effective dim-0 stride)
  // Inputs and outputs as the kernels see them: dense views in place, any other view staged through the workspace.
  StagedTensor x, wkv, wgate, ape, cmpKv, softmaxScore, kv;
  // Phase 1: FP16 only: the weights widened to fp32 ([wkv; wgate] as [2C, H]) and one x panel widened; the GEMMs
  // (full panels and the last, shorter one; each runs once per weight), their scratch, and the projections [T, 2C]
  // (KV in columns [0, C), G in [C, 2C)).
  WorkspaceRegion weights, panel, gemmScratch, projections;
  std::shared_ptr<const Gemm> fullPanelGemm, lastPanelGemm;
  // Phase 2: the owner of every output row (batch -1: padding), and one scratch slot per thread at plan time
  // (block-kernel scratch, then the history rows of one block when the cache's channel stride is not 1).
  std::vector<int64_t> rowBatch, rowBlock;
  WorkspaceRegion blockScratch;
  int64_t slots = 0, slotFloats = 0;
  const kernels::CompressorFwdKernels* kernels = nullptr;

  /** Runs the op with the caller's workspace memory (at least workspace.totalBytes()). */
  aclnnStatus run(void* memory) const;
};

/** True when a checked call has nothing to compute (an empty x: B, S or T = 0); the cache is then left alone. */
bool compressorHasNoWork(const CompressorArgs& args);

/** Plans a checked call that computes something. */
CompressorPlan planCompressor(const CompressorArgs& args);

}  // namespace gradkit::ops
