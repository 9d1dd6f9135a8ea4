// The arguments of aclnnCompressor and aclnnCompressorGrad, packed once, and the problem both directions share: the
// layout, the sizes and the per-batch int32 values (cu_seqlens, seqused, start_pos) read from host memory.
// Spec: ../shared/spec/compressor.md (sections 2, 3.3, 3.4, 5.2); decisions: DECISIONS.md "Compressor".
#pragma once

#include <cstdint>
#include <vector>

#include "aclnn/aclnn_base.h"

namespace gradkit::ops {

inline constexpr const char* kCompressorApi = "aclnnCompressor";

/**
 * The most batches a call may have (gradkit's limit): the checks and the plan read every batch's int32 values on the
 * host, and a stride-0 cu_seqlens or an empty x can name any batch count for a few bytes of memory.
 */
inline constexpr int64_t kCompressorMaxBatch = int64_t{1} << 24;

/** ceil(n / d) for n >= 0, d > 0, without the overflow of (n + d - 1) / d. */
constexpr int64_t compressorCeilDiv(int64_t n, int64_t d) { return n / d + (n % d != 0 ? 1 : 0); }
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
 * The problem of a checked call. x is the flat [T, H] view: BSH batch b starts at row b*S, TH at cuSeqlens[b].
 * Token i < used(b) of batch b has absolute position start(b) + i. Compressed row j of batch b covers the aligned
 * block q = start(b)/cr + j; its N = coff*cr rows are stored interleaved (row r*coff + h: half h, 0 = previous block
 * when coff = 2, at position (q - (coff-1) + h)*cr + r).
 */
struct CompressorProblem {
  bool th = false;                 // false: BSH x [B, S, H]; true: TH x [T, H]
  int64_t batch = 0;               // B
  int64_t seqLen = 0;              // S (BSH only)
  int64_t tokens = 0;              // T: BSH B*S, TH x.dim0 (may exceed cuSeqlens[B]: rows no batch owns)
  int64_t hidden = 0;              // H
  int64_t headDim = 0;             // D
  int64_t coff = 1;                // 1 or 2
  int64_t cmpRatio = 4;            // cr
  std::vector<int64_t> cuSeqlens;  // TH: [B+1]; BSH: empty
  std::vector<int64_t> seqused;    // [B] or empty (then u_b = len_b)
  std::vector<int64_t> startPos;   // [B] or empty (then 0)

  int64_t channels() const { return coff * headDim; }    // coff*D: rows of wkv / wgate, columns of ape
  int64_t blockRows() const { return coff * cmpRatio; }  // N
  int64_t firstToken(int64_t b) const;                   // row0_b
  int64_t length(int64_t b) const;                       // len_b
  int64_t used(int64_t b) const;                         // u_b
  int64_t start(int64_t b) const;                        // sp_b
  int64_t blocks(int64_t b) const;                       // n_b = max(0, (sp_b + u_b)/cr - sp_b/cr)
  int64_t outputRows() const;                            // BSH B*ceil(S/cr); TH min(T, T/cr + B)
  int64_t outputRow(int64_t b, int64_t j) const;         // the output row of batch b's compressed row j
};

/**
 * Reads a 1-d INT32 tensor (any stride) from host memory into int64 values; empty for a null tensor. The check
 * has already accepted its dtype, rank and memory.
 */
std::vector<int64_t> readInt32Values(const aclTensor* tensor);

/**
 * The problem of a call whose tensors passed the shape checks: layout from x's rank (3 BSH, 2 TH), D = wkv.dim0 /
 * coff, and the int32 values read from the optional tensors.
 */
CompressorProblem compressorProblemOf(const aclTensor& x, const aclTensor& wkv, const aclTensor* cuSeqlens,
                                      const aclTensor* seqused, const aclTensor* startPos, int64_t cmpRatio,
                                      int64_t coff);

}  // namespace gradkit::ops
