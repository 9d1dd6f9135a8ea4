// The plan of one aclnnCompressorGrad call: made once in GetWorkspaceSize, run on the stream.
//
// The routed tokens (those some compressed block reads from x: per batch the contiguous tokens 0 .. limit_b - sp_b - 1)
// are the rows of one matrix A = [dNewKv | dNewScore] ([rows, 2*coff*D]); every (token, channel) of A gets exactly one
// contribution (the cur half of its own block; with coff = 2 the prev half of the batch's next block, or zero when
// there is none). A is made in fp32, chunk by chunk (chunkRows rows at a time, fixed by the problem):
//  1. vector pass: per block the compensated column sums w and the routed rows of dK, dZ (kernels/compressor_grad_*),
//     split over threads by fixed channel pieces (no sum crosses a piece), dApe Kahan-accumulated per element in block
//     order across the chunks;
//  2. dX rows = A_chunk . [wkv; wgate] (fp32 GEMM, K = 2*coff*D), rounded to x's dtype into the tokens' rows;
//  3. [dWkv; dWgate] += A_chunk^T . x_chunk (fp32 GEMM, K = the chunk's rows; fp32 accumulator across chunks in order).
// Two tile paths (core/tile_path.h, engine Gemm). Highway: GEMM operands fp32 (x and the weights widened exactly, a
// chunk at a time for x, A as made). NativeBf16 (bf16 x; auto on AVX512-BF16 / AMX-BF16, where oneDNN multiplies bf16,
// or GRADKIT_TILE=native): A rounded to bf16 (nearest even) as upstream does, x rows and the weights as their bf16
// bits, bf16 GEMMs with fp32 accumulation. oneDNN has no fp16 GEMM: fp16 always takes the fp32 path.
// Every sum runs in an order fixed by the problem (GEMM tiles by core/gemm.h, chunks in order, channel pieces), so the
// bits do not depend on the thread count. Tokens no block routes to get dX = 0.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "core/gemm.h"
#include "core/tile_path.h"
#include "opapi/staged_tensor.h"
#include "opapi/workspace.h"
#include "ops/compressor/compressor_args.h"
#include "ops/compressor/kernels/compressor_grad_kernel.h"

namespace gradkit::ops {

/** The tokens of one compressed block that it routes its cur half to (the block's own, x-sourced tokens). */
struct CompressorGradUnit {
  int64_t outputRow = 0;   // row of dCmpKv / softmaxScore / kv
  int64_t compactRow = 0;  // A row of its first token
  int64_t firstR = 0;      // position mod cr of its first token (sp mod cr for a batch's first block, else 0)
  int64_t count = 0;       // its tokens: cr - firstR
  bool hasNext = false;    // the batch has a next block (row outputRow + 1), whose prev half (coff 2) routes here
};

/** A run of routed tokens: A rows [compactRow, compactRow + count) are x rows [tokenRow, tokenRow + count). */
struct CompressorGradSegment {
  int64_t compactRow = 0;
  int64_t tokenRow = 0;
  int64_t count = 0;
};

/** Planning knobs (tests make chunks small to cover their boundaries). */
struct CompressorGradOptions {
  int64_t chunkRows = 0;             // A rows per chunk; 0 = the default
  int64_t pieceWidth = 0;            // channels per vector-pass piece; 0 = the default
  std::optional<TilePath> tilePath;  // the GEMM operands' path; absent = the process's choice (core/tile_path.h)
};

struct CompressorGradPlan {
  WorkspaceBooking workspace;
  CompressorProblem problem;
  bool half = false;          // x's dtype is FLOAT16 (else BF16)
  bool bf16Products = false;  // the NativeBf16 path: bf16 GEMM operands (A rounded)
  // Every tensor as the kernels read it: dense, staged when the caller's view is not.
  StagedTensor x, wkv, wgate, dCmpKv, softmaxScore, kv, dX, dWkv, dWgate, dApe;

  std::vector<CompressorGradUnit> units;        // every block, in output-row order
  std::vector<CompressorGradSegment> segments;  // the routed tokens, in A-row order
  int64_t rows = 0;                             // A rows (routed tokens)
  int64_t chunkRows = 0;                        // A rows per chunk (the last may be shorter)
  std::vector<int64_t> chunkFirstUnit;          // per chunk: the first unit with a row in it
  int64_t pieceWidth = 0;                       // channels per vector-pass piece

  // GEMMs (fp32 or bf16 operands): dX of a full / the last chunk; dW of the first chunk (beta 0), a later full one and
  // the last.
  std::vector<std::unique_ptr<Gemm>> gemms;
  int dxFull = -1, dxLast = -1, dwFirst = -1, dwFull = -1, dwLast = -1;

  // Workspace: [wkv; wgate] widened [2C, H] (bf16 path: their bf16 bits); A chunk [chunkRows, 2C] (bf16 path: and A
  // rounded, aBf16); the dX chunk or the x chunk [chunkRows, H] (one at a time; bf16 path: x rows in xBf16); the dW
  // accumulator [2C, H]; dApe sums and compensations [cr, C]; the GEMMs' scratch (C = coff*D). Rows of A lie ldA
  // elements apart, rows of the [., H] buffers ldH elements apart (padded off the powers of two).
  int64_t ldA = 0, ldH = 0;
  WorkspaceRegion weights, aChunk, aBf16, rowChunk, xBf16, dwAccumulator, apeSum, apeComp, gemmScratch;
  const kernels::CompressorGradKernels* kernels = nullptr;

  /** Runs the op with the caller's workspace memory (at least workspace.totalBytes()). */
  aclnnStatus run(void* memory) const;
};

/** Plans a checked call (CompressorGrad rejects empty tensors, so every checked call computes something). */
CompressorGradPlan planCompressorGrad(const CompressorGradArgs& args);

/** planCompressorGrad with knobs (tests). */
CompressorGradPlan planCompressorGrad(const CompressorGradArgs& args, const CompressorGradOptions& options);

}  // namespace gradkit::ops
