// gradkit: aclnnLightningIndexerV2Metadata, the core-split plan aclnnLightningIndexerV2 takes on Ascend950
// (ops-transformer attention/lightning_indexer_v2_metadata). docs/lightning_indexer_v2.md has the details.
#ifndef GRADKIT_ACLNNOP_ACLNN_LIGHTNING_INDEXER_V2_METADATA_H_
#define GRADKIT_ACLNNOP_ACLNN_LIGHTNING_INDEXER_V2_METADATA_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Writes metadata (INT32 [1024]): the NPU's split of an aclnnLightningIndexerV2 call of these sizes over the emulated
 * SoC's cube (AIC) and vector (AIV) cores, as upstream's AI-CPU kernel plans it: 36 AIC rows of 8 words (enable,
 * start batch*N2, start M block, start S2 block, end batch*N2, end M block, end S2 block, first reduction workspace
 * index) then 72 AIV rows of 8 words (enable, reduction task batch*N2, M block, workspace index, workspace count,
 * subtask M start, subtask M count); unused words 0. The image is informative: gradkit's aclnnLightningIndexerV2
 * checks only that a metadata tensor of 1024 INT32 is given (Ascend950) and never reads it.
 * Checks, in upstream's order: workspaceSize and executor non-null (561103); numHeadsQ in [1, 64], numHeadsK 1,
 * headDim 128, topk in [1, 8192], batchSize >= 0, maxSeqlenQ and maxSeqlenK >= -1, maskMode 0 or 3, cmpRatio in
 * [1, 128], layouts ("TND" / "BSND"; k also "PA_BBND"; equal unless PA_BBND), BSND lengths > 0; the optional tensors
 * each layout needs; ranks, dtypes (INT32) and batch sizes; then the values upstream's AI-CPU kernel checks at run
 * time (cu_seqlens from 0 and non-decreasing, seqused in [0, length], cmpResidualK in [0, cmpRatio)). All 161002.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnLightningIndexerV2MetadataGetWorkspaceSize(
    const aclTensor* cuSeqlensQOptional, const aclTensor* cuSeqlensKOptional, const aclTensor* sequsedQOptional,
    const aclTensor* sequsedKOptional, const aclTensor* cmpResidualKOptional, int64_t numHeadsQ, int64_t numHeadsK,
    int64_t headDim, int64_t topk, int64_t batchSize, int64_t maxSeqlenQ, int64_t maxSeqlenK, char* layoutQOptional,
    char* layoutKOptional, int64_t maskMode, int64_t cmpRatio, const aclTensor* metadata, uint64_t* workspaceSize,
    aclOpExecutor** executor);

/** Enqueues the planned aclnnLightningIndexerV2Metadata on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnLightningIndexerV2Metadata(void* workspace, uint64_t workspaceSize,
                                                                aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_LIGHTNING_INDEXER_V2_METADATA_H_
