// gradkit: aclnnMhcPostBackward, the gradients of aclnnMhcPost (ops-transformer mhc/mhc_post_backward).
#ifndef GRADKIT_ACLNNOP_ACLNN_MHC_POST_BACKWARD_H_
#define GRADKIT_ACLNNOP_ACLNN_MHC_POST_BACKWARD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The gradients of out = hRes^T x + hOut (x) hPost (aclnnMhcPost) for gradOutput g, per token:
 *   gradX[i, :]   = sum_j hRes[i, j] * g[j, :]          (gradX = g when hRes is nullptr)
 *   gradHRes[i,j] = sum_d x[i, d] * g[j, d]             (x g^T; written with or without hRes)
 *   gradHOut[:]   = sum_j hPost[j] * g[j, :]
 *   gradHPost[j]  = sum_d g[j, d] * hOut[d]
 * gradOutput, x, gradX [B,S,N,D] / [T,N,D] and hOut, gradHOut [B,S,D] / [T,D] in one dtype (BF16/FP16); hRes,
 * gradHRes [..,N,N] and hPost, gradHPost [..,N] FP32. Sums over streams run in FP32, j (or i) ascending, the first
 * term a product and the rest multiply-adds; sums over D in 16 partial sums (d mod 16, d ascending, multiply-adds)
 * added as a balanced tree: docs/mhc.md. hRes may be nullptr in the Ascend950 profile only. Limits follow the
 * emulated SoC (GRADKIT_SOC). Any strides are accepted.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMhcPostBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* x,
                                                                     const aclTensor* hRes, const aclTensor* hOut,
                                                                     const aclTensor* hPost, aclTensor* gradX,
                                                                     aclTensor* gradHRes, aclTensor* gradHOut,
                                                                     aclTensor* gradHPost, uint64_t* workspaceSize,
                                                                     aclOpExecutor** executor);

/** Enqueues the planned aclnnMhcPostBackward on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMhcPostBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                     const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_MHC_POST_BACKWARD_H_
