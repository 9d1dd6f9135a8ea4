// gradkit: aclnnDropoutGenMask, aclnnDropoutGenMaskV2 and aclnnDropoutGenMaskV2Tensor, the packed dropout mask
// generators. All three are declared in this one header, as upstream does (ops-math random/dsa_gen_bit_mask).
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

/**
 * As aclnnDropoutGenMaskV2, with the seed and the offset taken from device tensors when the op RUNS (in stream
 * order, so a graph can be captured once and replayed with new values): seed = seedTensor's one element (INT64,
 * or INT32 sign-extended); offset = offsetTensor's one element (INT64) + `offset`, added modulo 2^64. The mask is
 * then exactly aclnnDropoutGenMaskV2's for that (seed, offset). 161001: null shape/seedTensor/offsetTensor/out;
 * 161002: GenMaskV2's rules, seedTensor not INT32/INT64 or not exactly one element, offsetTensor not INT64 or not
 * exactly one element. prob within DBL_EPSILON of 0 or 1 (a fill) and an empty out read neither tensor.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnDropoutGenMaskV2TensorGetWorkspaceSize(
    const aclIntArray* shape, double prob, const aclTensor* seedTensor, const aclTensor* offsetTensor, int64_t offset,
    aclDataType probDataType, aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnDropoutGenMaskV2Tensor on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnDropoutGenMaskV2Tensor(void* workspace, uint64_t workspaceSize,
                                                            aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_DROPOUT_GEN_MASK_H_
