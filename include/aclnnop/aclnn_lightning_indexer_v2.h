// gradkit: aclnnLightningIndexerV2, the sparse-attention indexer's top-k selection of compressed keys per query token
// (ops-transformer attention/lightning_indexer_v2). docs/lightning_indexer_v2.md has the details.
#ifndef GRADKIT_ACLNNOP_ACLNN_LIGHTNING_INDEXER_V2_H_
#define GRADKIT_ACLNNOP_ACLNN_LIGHTNING_INDEXER_V2_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * For each used query row i of batch b and each compressed key s it sees (N2 = 1, D = 128):
 *   score(i, s) = sum_h w[i, h] * ReLU(sum_d q[i, h, d] * k[s, 0, d])      (fp32; q, k FLOAT16 or BFLOAT16)
 * and selects the min(topk, visible) keys of largest score, sorted by score descending (ties: lower index first):
 * sparseIndices[i, 0, j] = s + outputIdxOffset[i] (0-based within the batch's keys), -1 in the slots after them;
 * with returnValue = 1, sparseValues[i, 0, j] = score(i, s) and -inf in the unused slots (returnValue = 0: not
 * written). Visible keys: maskMode 0 every used key; maskMode 3 (right-down causal on the uncompressed axis) the first
 * floor((Sk*cmpRatio + cmpResidualK[b] - Sq + i + 1) / cmpRatio) of them (clamped to [0, Sk]).
 * Layouts: layoutQ "BSND" (q [B, S1, N1, 128], w [B, S1, N1], outputs [B, S1, 1, topk]) or "TND" (q [T1, N1, 128],
 * w [T1, N1], outputs [T1, 1, topk], cuSeqlensQOptional [B + 1]); layoutK "BSND" (k [B, S2, 1, 128]), "TND"
 * (k [T2, 1, 128], cuSeqlensKOptional [B + 1]) or "PA_BBND" (k [blocks, blockSize, 1, 128] addressed through
 * blockTableOptional [B, maxBlocks], sequsedKOptional required). N1 in [1, 64], topk in [1, 8192], cmpRatio in
 * [1, 128]. On Ascend950 metadataOptional (INT32 [1024], from aclnnLightningIndexerV2Metadata; its contents are not
 * read) is required; elsewhere it is ignored. Every rule, also those upstream checks only at tiling time or not at all
 * (cu_seqlens non-decreasing from 0, seqused within the lengths, cmpResidualK in [0, cmpRatio), block-table entries),
 * is checked here: 161001 for a null required argument, 161002 otherwise. Any strides are accepted.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnLightningIndexerV2GetWorkspaceSize(
    const aclTensor* q, const aclTensor* k, const aclTensor* w, const aclTensor* cuSeqlensQOptional,
    const aclTensor* cuSeqlensKOptional, const aclTensor* sequsedQOptional, const aclTensor* sequsedKOptional,
    const aclTensor* cmpResidualKOptional, const aclTensor* blockTableOptional,
    const aclTensor* outputIdxOffsetOptional, const aclTensor* metadataOptional, int64_t topk, int64_t maxSeqlenQ,
    char* layoutQ, char* layoutK, int64_t maskMode, int64_t cmpRatio, int64_t returnValue,
    const aclTensor* sparseIndices, const aclTensor* sparseValues, uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnLightningIndexerV2 on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnLightningIndexerV2(void* workspace, uint64_t workspaceSize,
                                                        aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_LIGHTNING_INDEXER_V2_H_
