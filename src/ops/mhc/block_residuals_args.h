// The arguments of aclnnBlockAttentionResiduals and aclnnBlockAttentionResidualsGrad, packed once, and the sizes every
// later step reads. Upstream: ops-transformer mhc/block_attention_residuals, mhc/block_attention_residuals_grad.
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "opapi/tensor.h"

namespace gradkit::ops {

inline constexpr const char* kBlockResidualsApi = "aclnnBlockAttentionResiduals";
inline constexpr const char* kBlockResidualsGradApi = "aclnnBlockAttentionResidualsGrad";

/** One aclnnBlockAttentionResiduals call, as the caller gave it. */
struct BlockResidualsArgs {
  const aclTensor* partialBlock;
  const aclTensor* blockRes;
  const aclTensor* projWeight;
  const aclTensor* normWeight;
  int64_t validBlockNum;
  double normEps;
  bool needBackward;
  aclTensor* hiddenStates;
  aclTensor* invNorm;  // read only with needBackward (may be nullptr otherwise)
  aclTensor* probs;    // read only with needBackward (may be nullptr otherwise)
};

/** One aclnnBlockAttentionResidualsGrad call, as the caller gave it. */
struct BlockResidualsGradArgs {
  const aclTensor* partialBlock;
  const aclTensor* blockRes;
  const aclTensor* projWeight;
  const aclTensor* normWeight;
  const aclTensor* gradHiddenStates;
  const aclTensor* invNorm;
  const aclTensor* probs;
  int64_t validBlockNum;
  aclTensor* gradPartialBlock;
  aclTensor* gradBlockRes;
  aclTensor* gradProjWeight;
  aclTensor* gradNormWeight;
};

/** The sizes of a checked call: partialBlock [T, H], blockRes [T, N, H]. */
struct BlockResidualsDims {
  int64_t tokens = 0;  // T
  int64_t blocks = 0;  // N
  int64_t hidden = 0;  // H
};

/** The sizes of a call whose partialBlock (rank 2) and blockRes (rank 3) passed their rank checks. */
inline BlockResidualsDims blockResidualsDimsOf(const aclTensor& partialBlock, const aclTensor& blockRes) {
  return {partialBlock.viewDims[0], blockRes.viewDims[1], partialBlock.viewDims[1]};
}

}  // namespace gradkit::ops
