// gradkit: aclnnBlockAttentionResidualsGrad, the gradient of aclnnBlockAttentionResiduals (ops-transformer
// mhc/block_attention_residuals_grad).
#ifndef GRADKIT_ACLNNOP_ACLNN_BLOCK_ATTENTION_RESIDUALS_GRAD_H_
#define GRADKIT_ACLNNOP_ACLNN_BLOCK_ATTENTION_RESIDUALS_GRAD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The gradients of aclnnBlockAttentionResiduals' hiddenStates (gradHiddenStates [T, H]) with respect to its four
 * inputs, from the forward's invNorm and probs (FLOAT [T, N + 1]). Per token, with v, score weight
 * w = normWeight * projWeight and g = gradHiddenStates[t, :]:
 *   d[i]  = sum_h g[h] v[i,h];  gs[i] = probs[i] (d[i] - sum_j probs[j] d[j])        (the softmax's gradient)
 *   r[i]  = gs[i] sum_h w[h] v[i,h]                                                  (the gradient of invNorm[i])
 *   gradV[i,h] = g[h] probs[i] + gs[i] w[h] invNorm[i] - r[i] invNorm[i]^3 v[i,h] / H
 *   gradBlockRes[t, i, :] = gradV[i, :] (i < N), gradPartialBlock[t, :] = gradV[N, :];
 *   s[h] = sum_t sum_i gs[i] v[i,h] invNorm[i];  gradNormWeight = s * projWeight, gradProjWeight = s * normWeight.
 * Shapes as the forward's, projWeight and gradProjWeight [1, H], 0 <= N <= 128; one dtype of FLOAT16, BFLOAT16,
 * FLOAT for the four inputs, gradHiddenStates and the four outputs. validBlockNum: -1, 0 (upstream's documented
 * default) or N, all meaning every block. T = 0 or H = 0: the non-empty outputs are filled with zeros.
 * Deterministic: the sums over tokens run in fixed chunks added in order. Any strides are accepted.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnBlockAttentionResidualsGradGetWorkspaceSize(
    const aclTensor* partialBlock, const aclTensor* blockRes, const aclTensor* projWeight, const aclTensor* normWeight,
    const aclTensor* gradHiddenStates, const aclTensor* invNorm, const aclTensor* probs, int64_t validBlockNum,
    const aclTensor* gradPartialBlock, const aclTensor* gradBlockRes, const aclTensor* gradProjWeight,
    const aclTensor* gradNormWeight, uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnBlockAttentionResidualsGrad on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnBlockAttentionResidualsGrad(void* workspace, uint64_t workspaceSize,
                                                                 aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_BLOCK_ATTENTION_RESIDUALS_GRAD_H_
