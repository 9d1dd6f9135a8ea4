// gradkit: aclnnMhcPost, the post-mapping and residual merge of mHC hyper-connections (ops-transformer mhc/mhc_post).
#ifndef GRADKIT_ACLNNOP_ACLNN_MHC_POST_H_
#define GRADKIT_ACLNNOP_ACLNN_MHC_POST_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Per token t of x ([B,S,N,D] or [T,N,D], BF16/FP16), stream j of the output:
 *   out[j, :] = hPost[j] * hOut[:] + sum_i hRes[i, j] * x[i, :]     (out = hRes^T x + hOut (x) hPost)
 * hRes [B,S,N,N] / [T,N,N] FP32, the doubly stochastic matrix of MhcSinkhorn; hOut [B,S,D] / [T,D] in x's dtype
 * (the sub-layer's output); hPost [B,S,N] / [T,N] FP32. Computed in FP32 in that order (the hOut product first, then
 * one multiply-add per i ascending), rounded once to out's dtype (x's). hRes may be nullptr in the Ascend950 profile
 * only: then out[j, :] = x[j, :] + hPost[j] * hOut[:]. Limits follow the emulated SoC (GRADKIT_SOC; docs/mhc.md).
 * Any strides are accepted.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMhcPostGetWorkspaceSize(const aclTensor* x, const aclTensor* hRes,
                                                             const aclTensor* hOut, const aclTensor* hPost,
                                                             aclTensor* out, uint64_t* workspaceSize,
                                                             aclOpExecutor** executor);

/** Enqueues the planned aclnnMhcPost on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMhcPost(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                             aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_MHC_POST_H_
