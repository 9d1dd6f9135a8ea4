// gradkit: aclnnDropoutGenMaskV2 (ops-math random/dsa_gen_bit_mask).
#ifndef GRADKIT_ACLNNOP_ACLNN_DROPOUT_GEN_MASK_V2_H_
#define GRADKIT_ACLNNOP_ACLNN_DROPOUT_GEN_MASK_V2_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * As aclnnDropoutGenMask; `probDataType` (FLOAT, FLOAT16 or BFLOAT16, else 161002) only matters to the A2/A3
 * hardware generator, which gradkit does not reproduce: the mask is the Ascend950 stateless stream in every
 * profile.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnDropoutGenMaskV2GetWorkspaceSize(const aclIntArray* shape, double prob,
                                                                      int64_t seed, int64_t offset,
                                                                      aclDataType probDataType, aclTensor* out,
                                                                      uint64_t* workspaceSize,
                                                                      aclOpExecutor** executor);

/** Enqueues the planned aclnnDropoutGenMaskV2 on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnDropoutGenMaskV2(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                      aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_DROPOUT_GEN_MASK_V2_H_
