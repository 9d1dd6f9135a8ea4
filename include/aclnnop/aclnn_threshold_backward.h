// gradkit: aclnnThresholdBackward (ReLU backward), the experimental ops-nn interface.
#ifndef GRADKIT_ACLNNOP_ACLNN_THRESHOLD_BACKWARD_H_
#define GRADKIT_ACLNNOP_ACLNN_THRESHOLD_BACKWARD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * out = gradOutput where self > 0 (or self is NaN, floating dtypes), else 0.
 * gradOutput, self, out: the same dtype (FLOAT, FLOAT16, BFLOAT16, INT8, UINT8, INT32, INT64) and the same
 * shape (0 to 8 dims, empty allowed, any strides). threshold: a scalar of any numeric dtype with |t| <= FLT_EPSILON.
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
