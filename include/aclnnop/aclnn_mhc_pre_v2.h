// gradkit: aclnnMhcPreV2, aclnnMhcPre with a matmul precision mode (ops-transformer mhc/mhc_pre).
#ifndef GRADKIT_ACLNNOP_ACLNN_MHC_PRE_V2_H_
#define GRADKIT_ACLNNOP_ACLNN_MHC_PRE_V2_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * aclnnMhcPre (aclnn_mhc_pre.h) with opImplMode: 0 = FP32 matmul, 1 = HF32 matmul (both operands of x*gamma . phi^T
 * rounded to 11 explicit mantissa bits, ties away from zero, then multiplied and summed in FP32). Other values:
 * 161002, checked first. Only in the Ascend950 profile (161002 elsewhere).
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMhcPreV2GetWorkspaceSize(
    const aclTensor* x, const aclTensor* phi, const aclTensor* alpha, const aclTensor* bias,
    const aclTensor* gammaOptional, double normEps, double hcEps, int64_t opImplMode, aclTensor* hIn, aclTensor* hPost,
    aclTensor* hRes, aclTensor* invRmsOptional, aclTensor* hMixOptional, aclTensor* hPreOptional,
    uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnMhcPreV2 on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMhcPreV2(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                              aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_MHC_PRE_V2_H_
