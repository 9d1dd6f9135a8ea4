// gradkit: aclnnMhcPreBackward, the gradient of aclnnMhcPre (ops-transformer mhc/mhc_pre_backward).
#ifndef GRADKIT_ACLNNOP_ACLNN_MHC_PRE_BACKWARD_H_
#define GRADKIT_ACLNNOP_ACLNN_MHC_PRE_BACKWARD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The gradients of aclnnMhcPre (alpha of 3 elements) from its inputs x, phi, alpha, gammaOptional, its caches
 * invRms, hMix, hPre and its output hPost, and the incoming gradients gradHIn (x's dtype, [..,D]), gradHPost
 * ([..,N]) and gradHRes ([..,N,N], or [..,N!] in the Ascend910B/910_93 profiles). The sigmoid derivatives are
 * rebuilt from the saved hPre - hcEps and hPost / 2, so hcEps must be the forward's.
 *   gradX     = x's dtype, [..,N,D]: the total gradient of x, plus gradXPostOptional when given, rounded once
 *   gradPhi   = FP32 [F, N*D], gradAlpha = FP32 [3], gradBias = FP32 [F]
 *   gradGamma = FP32 [N, D], written only when gammaOptional is given (then required); otherwise untouched
 * Sums over tokens are deterministic: the same bits for any thread count. Any strides are accepted.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMhcPreBackwardGetWorkspaceSize(
    const aclTensor* x, const aclTensor* phi, const aclTensor* alpha, const aclTensor* gradHIn,
    const aclTensor* gradHPost, const aclTensor* gradHRes, const aclTensor* invRms, const aclTensor* hMix,
    const aclTensor* hPre, const aclTensor* hPost, const aclTensor* gammaOptional, const aclTensor* gradXPostOptional,
    float hcEps, const aclTensor* gradX, const aclTensor* gradPhi, const aclTensor* gradAlpha,
    const aclTensor* gradBias, const aclTensor* gradGamma, uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnMhcPreBackward on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMhcPreBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_MHC_PRE_BACKWARD_H_
