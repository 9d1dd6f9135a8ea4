#include "ops/compressor/compressor_layout.h"

#include <algorithm>

namespace gradkit::ops {

std::vector<int64_t> compressorOutputLead(bool th, int64_t batch, int64_t seqOrTokens, int64_t cmpRatio) {
  if (th) return {compressorPackedRows(seqOrTokens, batch, cmpRatio)};
  return {batch, compressorBatchRows(seqOrTokens, cmpRatio)};
}

int64_t CompressorProblem::firstToken(int64_t b) const { return th ? cuSeqlens[b] : b * seqLen; }

int64_t CompressorProblem::length(int64_t b) const { return th ? cuSeqlens[b + 1] - cuSeqlens[b] : seqLen; }

int64_t CompressorProblem::used(int64_t b) const { return seqused.empty() ? length(b) : seqused[b]; }

int64_t CompressorProblem::start(int64_t b) const { return startPos.empty() ? 0 : startPos[b]; }

int64_t CompressorProblem::blocks(int64_t b) const {
  const int64_t sp = start(b);
  return std::max<int64_t>(0, (sp + used(b)) / cmpRatio - sp / cmpRatio);
}

std::vector<int64_t> CompressorProblem::outputLead() const {
  return compressorOutputLead(th, batch, th ? tokens : seqLen, cmpRatio);
}

int64_t CompressorProblem::outputRows() const {
  return th ? compressorPackedRows(tokens, batch, cmpRatio) : batch * compressorBatchRows(seqLen, cmpRatio);
}

int64_t CompressorProblem::outputRow(int64_t b, int64_t j) const {
  if (!th) return b * compressorBatchRows(seqLen, cmpRatio) + j;
  int64_t row = j;
  for (int64_t earlier = 0; earlier < b; ++earlier) row += blocks(earlier);
  return row;
}

}  // namespace gradkit::ops
