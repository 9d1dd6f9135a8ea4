// The arguments of aclnnCompressor and aclnnCompressorGrad, packed once, and the problem of a checked call read from
// them (the size model itself, CompressorProblem, is compressor_layout.h): the per-batch int32 values (cu_seqlens,
// seqused, start_pos) read from host memory.
// Spec: ../shared/spec/compressor.md (sections 2, 3.3, 3.4, 5.2); decisions: DECISIONS.md "Compressor".
#pragma once

#include <cstdint>
#include <vector>

#include "aclnn/aclnn_base.h"
#include "ops/compressor/compressor_layout.h"

namespace gradkit::ops {

inline constexpr const char* kCompressorApi = "aclnnCompressor";

/**
 * The most batches a call may have (gradkit's limit): the checks and the plan read every batch's int32 values on the
 * host, and a stride-0 cu_seqlens or an empty x can name any batch count for a few bytes of memory.
 */
inline constexpr int64_t kCompressorMaxBatch = int64_t{1} << 24;

inline constexpr const char* kCompressorGradApi = "aclnnCompressorGrad";

/** One aclnnCompressor call, as the caller gave it. */
struct CompressorArgs {
  const aclTensor* x;
  const aclTensor* wkv;
  const aclTensor* wgate;
  aclTensor* stateCache;  // in/out: read for positions before start_pos, written with this call's tokens
  const aclTensor* ape;
  const aclTensor* stateBlockTable;  // optional
  const aclTensor* cuSeqlens;        // optional: TH only
  const aclTensor* seqused;          // optional
  const aclTensor* startPos;         // optional
  int64_t cmpRatio;
  int64_t coff;
  int64_t cacheMode;
  int64_t stateCacheStrideDim0;
  bool gradEnabled;
  const aclTensor* cmpKv;
  const aclTensor* softmaxScore;  // written only with gradEnabled
  const aclTensor* kv;            // written only with gradEnabled
};

/** One aclnnCompressorGrad call, as the caller gave it. */
struct CompressorGradArgs {
  const aclTensor* x;
  const aclTensor* wkv;
  const aclTensor* wgate;
  const aclTensor* dCmpKv;
  const aclTensor* softmaxScore;
  const aclTensor* kv;
  const aclTensor* cuSeqlens;  // optional: TH only
  const aclTensor* seqused;    // optional
  const aclTensor* startPos;   // optional
  int64_t cmpRatio;
  int64_t coff;
  const aclTensor* dX;
  const aclTensor* dWkv;
  const aclTensor* dWgate;
  const aclTensor* dApe;
};

/**
 * The problem of a call whose tensors passed the shape checks: layout from x's rank (3 BSH, 2 TH), D = wkv.dim0 /
 * coff, and the int32 values read from the optional tensors.
 */
CompressorProblem compressorProblemOf(const aclTensor& x, const aclTensor& wkv, const aclTensor* cuSeqlens,
                                      const aclTensor* seqused, const aclTensor* startPos, int64_t cmpRatio,
                                      int64_t coff);

}  // namespace gradkit::ops
