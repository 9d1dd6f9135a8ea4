// gradkit: aclnnSparseFlashMlaGradMetadata, the work split of aclnnSparseFlashMlaGrad over the emulated chip's cube
// cores (ops-transformer attention/sparse_flash_mla_grad_metadata; upstream runs it on the AI CPU).
#ifndef GRADKIT_ACLNNOP_ACLNN_SPARSE_FLASH_MLA_GRAD_METADATA_H_
#define GRADKIT_ACLNNOP_ACLNN_SPARSE_FLASH_MLA_GRAD_METADATA_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Writes words 0..6 of metadata (INT32 [1024]; the other words are left as they were): the query rows T (sum over
 * batches of seqused_q, else the cu_seqlens_q lengths, else maxSeqlenQ), ceil(T / cores), that minus 1 (as uint32,
 * so 0xFFFFFFFF when T = 0, as upstream), ceil(T / cores) * cores - T, min(T, cores), and the most ori and cmp keys
 * any query row sees (mask window or causal count, capped by the top-k length when sparse). cores = the profile's
 * cube-core count (32 on Ascend950; `gradkit info`). Arguments as aclnnSparseFlashMlaMetadata's, but layouts BSND
 * or TND only and equal. The int32 inputs' values are checked here (161002). workspaceSize or executor null: 561103.
 * Ascend950 profile only (GRADKIT_SOC), as upstream.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseFlashMlaGradMetadataGetWorkspaceSize(
    const aclTensor* cuSeqlensQOptional, const aclTensor* cuSeqlensOriKvOptional,
    const aclTensor* cuSeqlensCmpKvOptional, const aclTensor* sequsedQOptional, const aclTensor* sequsedOriKvOptional,
    const aclTensor* sequsedCmpKvOptional, const aclTensor* cmpResidualKvOptional,
    const aclTensor* oriTopkLengthOptional, const aclTensor* cmpTopkLengthOptional, int64_t numHeadsQ,
    int64_t numHeadsKv, int64_t headDim, int64_t batchSize, int64_t maxSeqlenQ, int64_t maxSeqlenOriKv,
    int64_t maxSeqlenCmpKv, int64_t oriTopk, int64_t cmpTopk, int64_t cmpRatio, int64_t oriMaskMode,
    int64_t cmpMaskMode, int64_t oriWinLeft, int64_t oriWinRight, const char* layoutQOptional,
    const char* layoutKvOptional, bool hasOriKv, bool hasCmpKv, const aclTensor* metaData, uint64_t* workspaceSize,
    aclOpExecutor** executor);

/** Enqueues the planned aclnnSparseFlashMlaGradMetadata on `stream` (it writes metadata words 0..6). */
ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseFlashMlaGradMetadata(void* workspace, uint64_t workspaceSize,
                                                                aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_SPARSE_FLASH_MLA_GRAD_METADATA_H_
