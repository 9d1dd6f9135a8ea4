// gradkit: aclnnMhcPreBackwardV2, aclnnMhcPreBackward with a matmul precision mode (ops-transformer mhc).
#ifndef GRADKIT_ACLNNOP_ACLNN_MHC_PRE_BACKWARD_V2_H_
#define GRADKIT_ACLNNOP_ACLNN_MHC_PRE_BACKWARD_V2_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * aclnnMhcPreBackward (aclnn_mhc_pre_backward.h) with opImplMode: 0 = FP32 matmuls, 1 = HF32 (the operands of
 * dm . phi and dm^T . (x*gamma) rounded to 11 explicit mantissa bits, ties away from zero; FP32 sums). Other
 * values: 161002, checked before any tensor. Only in the Ascend950 profile (161002 elsewhere).
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMhcPreBackwardV2GetWorkspaceSize(
    const aclTensor* x, const aclTensor* phi, const aclTensor* alpha, const aclTensor* gradHIn,
    const aclTensor* gradHPost, const aclTensor* gradHRes, const aclTensor* invRms, const aclTensor* hMix,
    const aclTensor* hPre, const aclTensor* hPost, const aclTensor* gammaOptional, const aclTensor* gradXPostOptional,
    float hcEps, int64_t opImplMode, const aclTensor* gradX, const aclTensor* gradPhi, const aclTensor* gradAlpha,
    const aclTensor* gradBias, const aclTensor* gradGamma, uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnMhcPreBackwardV2 on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMhcPreBackwardV2(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                      aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_MHC_PRE_BACKWARD_V2_H_
