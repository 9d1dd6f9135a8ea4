#include "ops/compressor/compressor_args.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "opapi/tensor.h"
#include "opapi/tensor_copy.h"

namespace gradkit::ops {

CompressorProblem compressorProblemOf(const aclTensor& x, const aclTensor& wkv, const aclTensor* cuSeqlens,
                                      const aclTensor* seqused, const aclTensor* startPos, int64_t cmpRatio,
                                      int64_t coff) {
  CompressorProblem problem;
  problem.th = x.dim() == 2;
  problem.coff = coff;
  problem.cmpRatio = cmpRatio;
  problem.headDim = wkv.viewDims[0] / coff;
  problem.hidden = x.viewDims[x.dim() - 1];
  if (problem.th) {
    problem.tokens = x.viewDims[0];
    problem.cuSeqlens = readInt32Values(cuSeqlens);
    problem.batch = static_cast<int64_t>(problem.cuSeqlens.size()) - 1;
  } else {
    problem.batch = x.viewDims[0];
    problem.seqLen = x.viewDims[1];
    problem.tokens = problem.batch * problem.seqLen;
  }
  problem.seqused = readInt32Values(seqused);
  problem.startPos = readInt32Values(startPos);
  return problem;
}

}  // namespace gradkit::ops
