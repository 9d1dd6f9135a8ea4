// gradkit: aclnnDropoutV3, dropout forward producing the output and the packed mask (ops-math random/drop_out_v3).
#ifndef GRADKIT_ACLNNOP_ACLNN_DROPOUT_V3_H_
#define GRADKIT_ACLNNOP_ACLNN_DROPOUT_V3_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * maskOut = the mask aclnnDropoutGenMaskV2 gives for (shape of input, p, seed, offset);
 * out = T(RN32(RN32(float(x) * (bit ? 1 : 0)) * scaleF)) with keepF = float(1 - p), scaleF = 1.0f / keepF.
 * p == 0: out = input, mask all 0xFF; p == 1: out = 0, mask all 0x00. input/out FLOAT, FLOAT16, BFLOAT16, same
 * shape, 0-8 dims, any strides; optionalNoiseShape must be nullptr; offset must be a multiple of 4.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnDropoutV3GetWorkspaceSize(const aclTensor* input,
                                                               const aclTensor* optionalNoiseShape, double p,
                                                               int64_t seed, int64_t offset, aclTensor* out,
                                                               aclTensor* maskOut, uint64_t* workspaceSize,
                                                               aclOpExecutor** executor);

/** Enqueues the planned aclnnDropoutV3 on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnDropoutV3(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                               aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_DROPOUT_V3_H_
