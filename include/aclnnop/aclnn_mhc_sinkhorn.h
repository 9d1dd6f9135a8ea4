// gradkit: aclnnMhcSinkhorn, the Sinkhorn-Knopp projection of mHC's residual mixing matrix onto the doubly stochastic
// matrices (ops-transformer mhc/mhc_sinkhorn).
#ifndef GRADKIT_ACLNNOP_ACLNN_MHC_SINKHORN_H_
#define GRADKIT_ACLNNOP_ACLNN_MHC_SINKHORN_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Per token of x ([B,S,n,n] or [T,n,n], FLOAT32, n in {4, 6, 8}), with k = 1 .. 2 numIters - 1:
 *   norm[0] = softmax(x, dim -1); norm[1] = (norm[0] + eps) / sum[1], sum[1] = colsum(norm[0] + eps) + eps;
 *   even k: sum[k] = rowsum(norm[k-1]) + eps, norm[k] = norm[k-1] / sum[k];
 *   odd k:  sum[k] = colsum(norm[k-1]) + eps, norm[k] = norm[k-1] / sum[k];
 *   output = norm[2 numIters - 1]                               (numIters in 1 .. 100; output has x's shape)
 * normOut (2 numIters T n 8 elements) and sumOut (2 numIters T 8) receive every norm[k] and sum[k] in the Ascend950
 * kernel's layout (rows padded to 8 columns, tokens in the tiles of its 64-core split; docs/mhc_sinkhorn.md), which
 * aclnnMhcSinkhornBackward reads. Both nullptr (or both of one element): no saved steps. Any strides are accepted.
 * Ascend950 profile only (GRADKIT_SOC).
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMhcSinkhornGetWorkspaceSize(const aclTensor* x, float eps, int64_t numIters,
                                                                 aclTensor* output, aclTensor* normOut,
                                                                 aclTensor* sumOut, uint64_t* workspaceSize,
                                                                 aclOpExecutor** executor);

/** Enqueues the planned aclnnMhcSinkhorn on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMhcSinkhorn(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                 aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_MHC_SINKHORN_H_
