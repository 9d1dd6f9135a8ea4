// gradkit: aclnnMhcPreSinkhornBackward, the gradient of aclnnMhcPreSinkhorn (ops-transformer
// mhc/mhc_pre_sinkhorn_backward).
#ifndef GRADKIT_ACLNNOP_ACLNN_MHC_PRE_SINKHORN_BACKWARD_H_
#define GRADKIT_ACLNNOP_ACLNN_MHC_PRE_SINKHORN_BACKWARD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The gradients of aclnnMhcPreSinkhorn's hin, hPost and hRes (gradHin [..,c] BF16/FP16, gradHPost [..,n],
 * gradHRes [..,n,n] or [..,n*n] FP32) with respect to x (gradX, gradHin's dtype), phi, alpha and bias (FP32), from
 * the forward's inputs and saved tensors (hPre, hcBeforeNorm, invRms, sumOut, normOut; aclnnMhcPreSinkhorn):
 *   the Sinkhorn steps backwards: odd k: g = (g - colsum(g norm[k])) / sum[k]; even k >= 2:
 *   g = (g - rowsum(g norm[k])) / sum[k]; the softmax: dL = (g - rowsum(g p)) p with p = norm[0] - hcEps;
 *   then aclnnMhcPreBackward's chain with the sigmoid derivatives of hPre - hcEps and of hPost recomputed from
 *   hcBeforeNorm, invRms, alpha and bias. The matmuls run in fp32 (Ascend950) or on HF32-rounded operands (A2/A3).
 * numIters comes from sumOut's first dim (20). Any of the inputs empty: success with nothing written (upstream).
 * TND (rank 3) and n other than 4 (up to 8) only in the Ascend950 profile; c a multiple of 128 below 100000.
 * Any strides are accepted.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMhcPreSinkhornBackwardGetWorkspaceSize(
    const aclTensor* gradHin, const aclTensor* gradHPost, const aclTensor* gradHRes, const aclTensor* x,
    const aclTensor* phi, const aclTensor* alpha, const aclTensor* bias, const aclTensor* hPre,
    const aclTensor* hcBeforeNorm, const aclTensor* invRms, const aclTensor* sumOut, const aclTensor* normOut,
    double hcEps, const aclTensor* gradX, const aclTensor* gradPhi, const aclTensor* gradAlpha,
    const aclTensor* gradBias, uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnMhcPreSinkhornBackward on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMhcPreSinkhornBackward(void* workspace, uint64_t workspaceSize,
                                                            aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_MHC_PRE_SINKHORN_BACKWARD_H_
