// gradkit: aclnnCompressor, the KV compressor forward of compressed attention (ops-transformer attention/compressor).
#ifndef GRADKIT_ACLNNOP_ACLNN_COMPRESSOR_H_
#define GRADKIT_ACLNNOP_ACLNN_COMPRESSOR_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Folds every cmpRatio tokens of x (BSH [B,S,H], or TH [T,H] with cuSeqlensOptional [B+1]) into one compressed KV
 * row: KV = x.wkv^T, G = x.wgate^T + ape[position mod cmpRatio] ([coff*D] channels per token); per aligned block of
 * cmpRatio absolute positions (coff = 2: the previous block through channels [0, D) and the block itself through
 * [D, 2D)), a softmax of G over the block's coff*cmpRatio rows, per channel, weights the KV rows into
 *   cmpKvOut        = x's dtype, BSH [B, ceil(S/cmpRatio), D], TH [min(T, T/cmpRatio + B), D]
 * Positions before startPosOptional[b] are read from stateCacheRef (fp32 [blockNum, blockSize, 2*coff*D]: kv state
 * then score state, addressed through stateBlockTableOptional per cacheMode: 1 paged, 2 one ring buffer per batch),
 * and this call's tokens are written back there for the next call. sequsedOptional [B] limits the tokens used.
 * With gradEnabled, also the inputs CompressorGrad needs (fp32, [.., coff*cmpRatio, D], coff = 2 rows interleaved:
 * even = previous block, odd = own block; padding rows 0):
 *   softmaxScoreOut = the softmax weights,  kvOut = the KV rows they weight (not their product)
 * Rows past a batch's compressed blocks are written as 0. Deterministic; any strides are accepted.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnCompressorGetWorkspaceSize(
    const aclTensor* x, const aclTensor* wkv, const aclTensor* wgate, aclTensor* stateCacheRef, const aclTensor* ape,
    const aclTensor* stateBlockTableOptional, const aclTensor* cuSeqlensOptional, const aclTensor* sequsedOptional,
    const aclTensor* startPosOptional, int64_t cmpRatio, int64_t coff, int64_t cacheMode, int64_t stateCacheStrideDim0,
    bool gradEnabled, const aclTensor* cmpKvOut, const aclTensor* softmaxScoreOut, const aclTensor* kvOut,
    uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnCompressor on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnCompressor(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_COMPRESSOR_H_
