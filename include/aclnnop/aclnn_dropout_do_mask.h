// gradkit: aclnnDropoutDoMask, the legacy dropout mask application (ops-math random/drop_out_do_mask).
#ifndef GRADKIT_ACLNNOP_ACLNN_DROPOUT_DO_MASK_H_
#define GRADKIT_ACLNNOP_ACLNN_DROPOUT_DO_MASK_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Legacy arithmetic, kept on purpose: keep = float(1 - prob) rounded to self's dtype, r = RN32(1 / keep),
 * out = bit ? T(RN32(float(x) * r)) : +0 (a select: a dropped NaN/Inf gives +0). prob == 0 (within DBL_EPSILON):
 * out = self (mask ignored); prob == 1: out = 0. self FLOAT, FLOAT16, BFLOAT16; mask UINT8 with at least
 * ceil(n/128)*16 elements; out castable from self with self's shape.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnDropoutDoMaskGetWorkspaceSize(const aclTensor* self, const aclTensor* mask,
                                                                   double prob, aclTensor* out, uint64_t* workspaceSize,
                                                                   aclOpExecutor** executor);

/** Enqueues the planned aclnnDropoutDoMask on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnDropoutDoMask(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                   aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_DROPOUT_DO_MASK_H_
