// gradkit: aclnnMhcPre, the fused pre-mapping of mHC hyper-connections (ops-transformer mhc/mhc_pre).
#ifndef GRADKIT_ACLNNOP_ACLNN_MHC_PRE_H_
#define GRADKIT_ACLNNOP_ACLNN_MHC_PRE_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Per token t of x ([B,S,N,D] or [T,N,D], BF16/FP16), with xf = float(x_t) flattened to K = N*D:
 *   invRms = 1 / sqrt(sum(xf^2) / K + normEps)          (raw x: gamma is not used here)
 *   hMix   = (xf * gamma) . phi^T                        (phi [F, K] FP32, gamma [N, D] FP32 or nullptr = ones)
 *   w      = hMix * invRms, split into rows [0,N) pre, [N,2N) post, [2N,F) res
 *   hPre   = sigmoid(w_pre * alpha[0] + bias_pre) + hcEps
 *   hPost  = 2 * sigmoid(w_post * alpha[1] + bias_post)  (+ hcEps when alpha has 2 elements)
 *   hRes   = w_res * alpha[2] + bias_res                 ([..,N,N] for F = N^2+2N, [..,N!] for F = N!+2N)
 *   hIn    = sum_i hPre[i] * x[i, :]                     (x's dtype, rounded once to nearest even)
 * alpha [3] (or [2]: no residual block, F = 2N, hRes may be nullptr), bias [F]. invRmsOptional ([B,S]/[T]),
 * hMixOptional ([..,F]) and hPreOptional ([..,N]) are the caches aclnnMhcPreBackward needs: all three or none.
 * Platform limits follow the emulated SoC (GRADKIT_SOC; docs/mhc.md). Any strides are accepted.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMhcPreGetWorkspaceSize(const aclTensor* x, const aclTensor* phi,
                                                            const aclTensor* alpha, const aclTensor* bias,
                                                            const aclTensor* gammaOptional, double normEps,
                                                            double hcEps, aclTensor* hIn, aclTensor* hPost,
                                                            aclTensor* hRes, aclTensor* invRmsOptional,
                                                            aclTensor* hMixOptional, aclTensor* hPreOptional,
                                                            uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnMhcPre on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMhcPre(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                            aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_MHC_PRE_H_
