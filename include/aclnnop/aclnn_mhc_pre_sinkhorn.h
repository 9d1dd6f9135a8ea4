// gradkit: aclnnMhcPreSinkhorn, mHC's pre-mapping fused with the Sinkhorn projection of its residual matrix
// (ops-transformer mhc/mhc_pre_sinkhorn).
#ifndef GRADKIT_ACLNNOP_ACLNN_MHC_PRE_SINKHORN_H_
#define GRADKIT_ACLNNOP_ACLNN_MHC_PRE_SINKHORN_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Per token t of x ([B,S,n,c] or [T,n,c], BF16/FP16; n = hcMult = 4), with xf = float(x_t) flattened to K = n*c:
 *   invRms       = 1 / sqrt(sum(xf^2) / K + normEps)
 *   hcBeforeNorm = xf . phi^T, both operands rounded to HF32 as the NPU's cube unit does (phi [n*n+2n, K] FP32)
 *   w            = hcBeforeNorm * invRms, split into rows [0,n) pre, [n,2n) post, [2n, n*n+2n) res
 *   hPre  = sigmoid(w_pre * alpha[0] + bias_pre) + hcEps;  hPost = 2 * sigmoid(w_post * alpha[1] + bias_post)
 *   hin   = sum_i hPre[i] * x[i, :]                         (x's dtype, rounded once to nearest even)
 *   hRes  = the Sinkhorn projection of L = w_res * alpha[2] + bias_res (n x n), numIters = 20 iterations:
 *     norm[0] = softmax(L, rows) + hcEps, sum[0] = the softmax's row sums + hcEps;
 *     odd k: sum[k] = colsum(norm[k-1]) + hcEps; even k >= 2: sum[k] = rowsum(norm[k-1]) + hcEps;
 *     norm[k] = norm[k-1] / sum[k]; hRes = norm[2 numIters - 1]       ([B,S,n*n] or [T,n*n])
 * With needBackward the saved tensors hPre [..,n], hcBeforeNorm [..,n*n+2n], invRms [..,1], sumOut
 * [2 numIters,..,n] and normOut [2 numIters,..,n,n] (every step, step-major) are written for
 * aclnnMhcPreSinkhornBackward; without it they are neither checked nor written. TND (rank 3) only in the Ascend950
 * profile; c in {4096, 7168} there, a multiple of 128 up to 100000 on A2/A3 (GRADKIT_SOC; docs/mhc_pre_sinkhorn.md).
 * Any strides are accepted.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMhcPreSinkhornGetWorkspaceSize(
    const aclTensor* x, const aclTensor* phi, const aclTensor* alpha, const aclTensor* bias, int64_t hcMult,
    int64_t numIters, double hcEps, double normEps, bool needBackward, aclTensor* hin, aclTensor* hPost,
    aclTensor* hRes, aclTensor* hPre, aclTensor* hcBeforeNorm, aclTensor* invRms, aclTensor* sumOut, aclTensor* normOut,
    uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnMhcPreSinkhorn on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMhcPreSinkhorn(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_MHC_PRE_SINKHORN_H_
