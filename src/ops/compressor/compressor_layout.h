// The compressor size model (spec compressor.md 2, 3.3, 3.4): the problem of a call in numbers (layout, sizes, the
// per-batch int32 values) and the rows it compresses to. One description, used by the checks, the plans, the CLI suites
// and, through the Python bindings, gradkit.ops' shape helpers. It knows nothing about aclTensor.
#pragma once

#include <cstdint>
#include <vector>

#include "core/int_math.h"

namespace gradkit::ops {

/** BSH: the compressed rows of one batch of S tokens, ceil(S/cr) (the last partial block included). */
constexpr int64_t compressorBatchRows(int64_t seqLen, int64_t cmpRatio) { return ceilDiv(seqLen, cmpRatio); }

/** TH: the compressed rows of T tokens in B batches, min(T, T/cr + B) (a partial block per batch at most). */
constexpr int64_t compressorPackedRows(int64_t tokens, int64_t batch, int64_t cmpRatio) {
  return tokens / cmpRatio + batch < tokens ? tokens / cmpRatio + batch : tokens;
}

/**
 * The leading dims of the compressed outputs (cmpKv, softmaxScore, kv, dCmpKv): BSH x [B, S, H] gives
 * [B, ceil(S/cr)], TH x [T, H] gives [min(T, T/cr + B)]. `seqOrTokens` is S for BSH and T for TH.
 */
std::vector<int64_t> compressorOutputLead(bool th, int64_t batch, int64_t seqOrTokens, int64_t cmpRatio);

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
  std::vector<int64_t> outputLead() const;               // compressorOutputLead of this problem
  int64_t outputRows() const;                            // BSH B*ceil(S/cr); TH min(T, T/cr + B)
  int64_t outputRow(int64_t b, int64_t j) const;         // the output row of batch b's compressed row j
};

}  // namespace gradkit::ops
