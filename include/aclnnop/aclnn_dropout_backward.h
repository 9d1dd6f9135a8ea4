// gradkit: aclnnDropoutBackward, the legacy backward (DoMask with p = 1 - 1/scale) (ops-math random/drop_out_do_mask).
#ifndef GRADKIT_ACLNNOP_ACLNN_DROPOUT_BACKWARD_H_
#define GRADKIT_ACLNNOP_ACLNN_DROPOUT_BACKWARD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * p = (|scale| <= DBL_EPSILON) ? 1 : 1 - 1/scale (double), which must lie in [0, 1] (scale 0 or >= 1, else
 * 161002), then aclnnDropoutDoMask(gradOutput, mask, p, out). mask: UINT8 with exactly ceil(n/128)*16 elements.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnDropoutBackwardGetWorkspaceSize(const aclTensor* gradOutput, const aclTensor* mask,
                                                                     double scale, aclTensor* out,
                                                                     uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnDropoutBackward on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnDropoutBackward(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                     aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_DROPOUT_BACKWARD_H_
