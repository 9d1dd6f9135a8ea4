// gradkit: aclnnDropout, the classic dropout forward writing the output and the packed mask (ops-math
// random/dsa_gen_bit_mask).
#ifndef GRADKIT_ACLNNOP_ACLNN_DROPOUT_H_
#define GRADKIT_ACLNNOP_ACLNN_DROPOUT_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Dropout forward with drop probability p: out_i = 0 with probability p, input_i / (1 - p) otherwise.
 * train and p not exactly 0 or 1: maskOut = the mask aclnnDropoutGenMaskV2 gives for (numel(input), p, seed,
 * offset), except that p within DBL_EPSILON of 0 or 1 (but not equal) still runs the generator; out = what
 * aclnnDropoutDoMask(input, maskOut, p) writes (keep = float(1 - p) stored in input's dtype, out = bit ?
 * RN_out(RN32(float(x) * RN32(1 / keep))) : +0; |p| <= DBL_EPSILON copies input, |p - 1| <= DBL_EPSILON gives +0).
 * train == false or p == 0: out = input (converted to out's dtype); p == 1: out = +0; in these three cases maskOut
 * is left untouched. input FLOAT, FLOAT16, BFLOAT16, 0-8 dims, any strides; out FLOAT, FLOAT16 or BFLOAT16 with
 * input's shape; maskOut UINT8 with exactly ceil(n/128)*16 elements. 161001: null input/out/maskOut; 161002: the
 * dtype, p (outside [0, 1] or NaN), rank, shape and mask size rules. An empty input launches nothing.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnDropoutGetWorkspaceSize(const aclTensor* input, double p, bool train, int64_t seed,
                                                             int64_t offset, aclTensor* out, aclTensor* maskOut,
                                                             uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnDropout on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnDropout(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                             aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_DROPOUT_H_
