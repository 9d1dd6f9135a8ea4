// gradkit: aclnnBlockAttentionResiduals, attention over a token's block-level residuals with an RMS-normed scoring
// (ops-transformer mhc/block_attention_residuals).
#ifndef GRADKIT_ACLNNOP_ACLNN_BLOCK_ATTENTION_RESIDUALS_H_
#define GRADKIT_ACLNNOP_ACLNN_BLOCK_ATTENTION_RESIDUALS_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Per token t, with the N + 1 values v[0..N-1] = blockRes[t, i, :] and v[N] = partialBlock[t, :] (each [H]):
 *   invNorm[i] = 1 / sqrt(sum_h v[i,h]^2 / H + normEps)
 *   score[i]   = sum_h (v[i,h] invNorm[i]) normWeight[h] projWeight[h]
 *   probs      = softmax(score) over the N + 1 values
 *   hiddenStates[t, :] = sum_i probs[i] v[i, :]           (the inputs' dtype, rounded once to nearest even)
 * partialBlock [T, H], blockRes [T, N, H] (1 <= N <= 100), projWeight [H] or [1, H], normWeight [H], hiddenStates
 * [T, H]: one dtype of FLOAT16, BFLOAT16, FLOAT; fp32 arithmetic. validBlockNum: -1 or N (every block). normEps > 0.
 * With needBackward, invNorm and probs (FLOAT [T, N + 1]) receive what aclnnBlockAttentionResidualsGrad reads; without
 * it they may be nullptr. Any strides are accepted.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnBlockAttentionResidualsGetWorkspaceSize(
    const aclTensor* partialBlock, const aclTensor* blockRes, const aclTensor* projWeight, const aclTensor* normWeight,
    int64_t validBlockNum, double normEps, bool needBackward, aclTensor* hiddenStates, aclTensor* invNorm,
    aclTensor* probs, uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnBlockAttentionResiduals on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnBlockAttentionResiduals(void* workspace, uint64_t workspaceSize,
                                                             aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_BLOCK_ATTENTION_RESIDUALS_H_
