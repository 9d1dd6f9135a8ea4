// gradkit: aclnnThresholdBackward (ReLU / threshold backward), the mainline ops-nn contract
// (activation/threshold_grad_v2_d). Details: docs/threshold_backward.md.
#ifndef GRADKIT_ACLNNOP_ACLNN_THRESHOLD_BACKWARD_H_
#define GRADKIT_ACLNNOP_ACLNN_THRESHOLD_BACKWARD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * out = gradOutput where self > threshold, else +0 (PyTorch's threshold_backward: where !(self <= threshold),
 * so a NaN self, or a NaN threshold, keeps the gradient). gradOutput and self broadcast (numpy rules) and out
 * has exactly the broadcast shape; 0 to 8 dims, empty allowed, any strides (stride 0 included).
 * dtypes: gradOutput, self and out identical, from FLOAT, FLOAT16, BFLOAT16, INT8, UINT8, INT32, plus INT64 in
 * the Ascend950 profile (GRADKIT_SOC) when |threshold| <= FLT_EPSILON.
 * threshold: a scalar of any real dtype. Floating tensors compare float(self) with the threshold rounded to
 * fp32; integer tensors with the threshold truncated toward zero (an integer threshold in [-255, -1] reads
 * modulo 256 for UINT8, as in PyTorch).
 * Returns 161001 for null arguments and 161002 for any other rejected argument (see aclGetRecentErrMsg).
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnThresholdBackwardGetWorkspaceSize(const aclTensor* gradOutput,
                                                                       const aclTensor* self,
                                                                       const aclScalar* threshold, aclTensor* out,
                                                                       uint64_t* workspaceSize,
                                                                       aclOpExecutor** executor);

/** Enqueues the planned ThresholdBackward on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnThresholdBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                       const aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_THRESHOLD_BACKWARD_H_
