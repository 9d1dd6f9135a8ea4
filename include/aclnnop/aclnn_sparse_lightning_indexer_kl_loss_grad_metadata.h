// gradkit: aclnnSparseLightningIndexerKLLossGradMetadata, the core-split plan of aclnnSparseLightningIndexerKLLossGrad
// (ops-transformer attention/sparse_lightning_indexer_kl_loss_grad_metadata).
#ifndef GRADKIT_ACLNNOP_ACLNN_SPARSE_LIGHTNING_INDEXER_KL_LOSS_GRAD_METADATA_H_
#define GRADKIT_ACLNNOP_ACLNN_SPARSE_LIGHTNING_INDEXER_KL_LOSS_GRAD_METADATA_H_

#ifdef __cplusplus
#include <string>  // upstream's header includes it; its example programs rely on nothing from it
#endif

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Writes metadata (INT32 [64]): upstream's AI-CPU core-split image for the described call, with gradkit's reported
 * AI Cube core counts (Ascend950: 32; Ascend910B / Ascend910_93: 24). Ascend950: words 0-4 TOTAL_NUM (the batches'
 * query rows), FORMER_CORE_PROCESS_NUM, REMAIN_CORE_PROCESS_NUM, REMAIN_CORE_NUM, USED_CORE_NUM, the rest 0;
 * A2/A3: coreNum, totalSize, splitFactorSize, 5 reserved 0, bS1Index[25], the rest 0. The image is informative:
 * aclnnSparseLightningIndexerKLLossGrad accepts any INT32 [64] tensor and splits its work its own way. The arguments
 * describe the main call (batch from seqUsed, cu_seqlens or batchSize; maxSeqlenQ/K the BSND S1/S2; numHeadsQ N1,
 * numHeadsK 1, headDim 128, topk K, layouts, maskMode, cmpRatio) and follow its rules. Workspace 0.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseLightningIndexerKLLossGradMetadataGetWorkspaceSize(
    const aclTensor* cuSeqlensQOptional, const aclTensor* cuSeqlensKOptional, const aclTensor* sequsedQOptional,
    const aclTensor* sequsedKOptional, const aclTensor* cmpResidualKOptional, int64_t batchSize, int64_t maxSeqlenQ,
    int64_t maxSeqlenK, int64_t numHeadsQ, int64_t numHeadsK, int64_t headDim, int64_t topk, char* layoutQOptional,
    char* layoutKOptional, int64_t maskMode, int64_t cmpRatio, const aclTensor* metadata, uint64_t* workspaceSize,
    aclOpExecutor** executor);

/** Enqueues the planned aclnnSparseLightningIndexerKLLossGradMetadata on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseLightningIndexerKLLossGradMetadata(void* workspace, uint64_t workspaceSize,
                                                                              aclOpExecutor* executor,
                                                                              aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_SPARSE_LIGHTNING_INDEXER_KL_LOSS_GRAD_METADATA_H_
