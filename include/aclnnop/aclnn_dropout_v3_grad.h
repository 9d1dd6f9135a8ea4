// gradkit: aclnnDropoutV3Grad, dropout backward aligned with PyTorch (ops-math random/drop_out_v3_grad).
#ifndef GRADKIT_ACLNNOP_ACLNN_DROPOUT_V3_GRAD_H_
#define GRADKIT_ACLNNOP_ACLNN_DROPOUT_V3_GRAD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * gradX = RN_T(RN32(RN32(float(gradY) * m) * float(scale))), m = 0.0f or 1.0f from the packed mask bit (a multiply,
 * so a dropped Inf/NaN gives NaN, as PyTorch's native_dropout_backward). Bit-exact with PyTorch for FLOAT, FLOAT16,
 * BFLOAT16. Only in the Ascend950 profile (161002 elsewhere, checked first), and unavailable when listed in
 * GRADKIT_DISABLE_OPS. mask: UINT8 with exactly ceil(n/128)*16 elements; gradX castable from gradY, same shape.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnDropoutV3GradGetWorkspaceSize(const aclTensor* gradY, const aclTensor* mask,
                                                                   double scale, aclTensor* gradX,
                                                                   uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnDropoutV3Grad on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnDropoutV3Grad(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                   aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_DROPOUT_V3_GRAD_H_
