// gradkit: aclnnCompressorGrad, the gradient of aclnnCompressor (ops-transformer attention/compressor_grad).
#ifndef GRADKIT_ACLNNOP_ACLNN_COMPRESSOR_GRAD_H_
#define GRADKIT_ACLNNOP_ACLNN_COMPRESSOR_GRAD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The gradients of aclnnCompressor from its inputs x (BSH [B,S,H] or TH [T,H] with cuSeqlensOptional), wkv, wgate
 * ([coff*D, H], x's dtype), the incoming gradient dCmpKv (x's dtype, the shape of cmpKvOut) and the forward's
 * gradEnabled outputs softmaxScore and kv (fp32 [.., coff*cmpRatio, D]); sequsedOptional and startPosOptional as
 * the forward had them:
 *   dXOut     = x's dtype, x's shape; rows no compressed block reads are 0
 *   dWkvOut   = dWgateOut = x's dtype, [coff*D, H]
 *   dApeOut   = FP32 [cmpRatio, coff*D]
 * Rows read from the state cache get no gradient (the gradient stops at the call boundary). Sums are compensated
 * and deterministic: the same bits for any thread count. Any strides are accepted.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnCompressorGradGetWorkspaceSize(
    const aclTensor* x, const aclTensor* wkv, const aclTensor* wgate, const aclTensor* dCmpKv,
    const aclTensor* softmaxScore, const aclTensor* kv, const aclTensor* cuSeqlensOptional,
    const aclTensor* sequsedOptional, const aclTensor* startPosOptional, int64_t cmpRatio, int64_t coff,
    const aclTensor* dXOut, const aclTensor* dWkvOut, const aclTensor* dWgateOut, const aclTensor* dApeOut,
    uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnCompressorGrad on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnCompressorGrad(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_COMPRESSOR_GRAD_H_
