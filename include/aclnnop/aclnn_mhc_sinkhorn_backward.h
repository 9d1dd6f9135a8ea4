// gradkit: aclnnMhcSinkhornBackward, the gradient of aclnnMhcSinkhorn (ops-transformer mhc/mhc_sinkhorn_backward).
#ifndef GRADKIT_ACLNNOP_ACLNN_MHC_SINKHORN_BACKWARD_H_
#define GRADKIT_ACLNNOP_ACLNN_MHC_SINKHORN_BACKWARD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The gradient of aclnnMhcSinkhorn's output with respect to its x, from the steps it saved: g = gradOutput, then for
 * k = 2 numIters - 1 down to 1
 *   odd k:  g = (g - colsum(g * norm[k])) / sum[k];   even k: g = (g - rowsum(g * norm[k])) / sum[k]
 * and out = (g - rowsum(g * norm[0])) * norm[0] (the softmax's gradient). gradOutput and out are [B,S,n,n] or
 * [T,n,n] FLOAT32 (n in {4, 6, 8}); normOut and sumOut are the forward's, numIters = normOut's elements / (2 T n 8)
 * (1 .. 100). Padded columns of normOut and sumOut are ignored. Any strides are accepted. Ascend950 profile only.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMhcSinkhornBackwardGetWorkspaceSize(const aclTensor* gradOutput,
                                                                         const aclTensor* normOut,
                                                                         const aclTensor* sumOut, aclTensor* out,
                                                                         uint64_t* workspaceSize,
                                                                         aclOpExecutor** executor);

/** Enqueues the planned aclnnMhcSinkhornBackward on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMhcSinkhornBackward(void* workspace, uint64_t workspaceSize,
                                                         aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_MHC_SINKHORN_BACKWARD_H_
