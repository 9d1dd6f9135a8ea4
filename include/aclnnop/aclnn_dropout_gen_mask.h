// gradkit: aclnnDropoutGenMask, the packed dropout mask generator (ops-math random/dsa_gen_bit_mask).
#ifndef GRADKIT_ACLNNOP_ACLNN_DROPOUT_GEN_MASK_H_
#define GRADKIT_ACLNNOP_ACLNN_DROPOUT_GEN_MASK_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Writes the keep mask of a tensor of shape `shape` into `out`: UINT8, ceil(n/128)*16 bytes, bit i of the
 * row-major element i is byte i>>3, bit i&7 (LSB first), 1 = keep. `prob` is the drop probability in [0, 1].
 * gradkit reproduces the Ascend950 stateless Philox4x32-10 stream (seed = key, offset = upper 64 counter bits);
 * the A2/A3 hardware generator is not reproduced. 161001: null shape/out; 161002: out not UINT8, prob outside
 * [0, 1], out size != ceil(n/128)*16.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnDropoutGenMaskGetWorkspaceSize(const aclIntArray* shape, double prob, int64_t seed,
                                                                    int64_t offset, aclTensor* out,
                                                                    uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnDropoutGenMask on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnDropoutGenMask(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_DROPOUT_GEN_MASK_H_
