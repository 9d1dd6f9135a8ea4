// gradkit: aclnnSparseFlashMlaMetadata, the work split of aclnnSparseFlashMla (DeepSeek-V4 sparse MLA attention) over
// the emulated chip's AI cores (ops-transformer attention/sparse_flash_mla_metadata; upstream runs it on the AI CPU).
#ifndef GRADKIT_ACLNNOP_ACLNN_SPARSE_FLASH_MLA_METADATA_H_
#define GRADKIT_ACLNNOP_ACLNN_SPARSE_FLASH_MLA_METADATA_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Plans how aclnnSparseFlashMla's (batch x kv head, query-row tile, kv block) work is split across the AI cores and
 * writes the plan into metaData (INT32 [1024]): words 0..323 are 36 cube-core entries of 9 (enable, bn2/m/s2 start,
 * bn2/m/s2 end, first flash-decode workspace index, max kv blocks per core), words 324..899 72 vector-core entries of 8
 * (flash-decode tasks: always 0 here, rows are never split), words 900..1023 are left as they were. The plan follows
 * upstream's cost model (block cost 6 ceil(m/16) + 10 ceil(s2/64), whole batches then whole rows per core) with the
 * profile's core counts (GRADKIT_SOC: 32 cube cores on Ascend950, 24 on Atlas A2/A3; `gradkit info`).
 *
 * Lengths come from sequsedQOptional, else cuSeqlensQOptional (TND), else maxSeqlenQ (BSND); likewise for the ori
 * and cmp kv (PA_BBND kv: seqused). An optional tensor with no rows (null, 0 dims or dim 0 of 0) is absent. numHeadsQ
 * in [1, 128], numHeadsKv 1, headDim 512, masks and windows as aclnnSparseFlashMla takes them; hasOriKv / hasCmpKv
 * say which kv the main call has. The values of the int32 inputs are checked here (cu_seqlens from 0 and
 * non-decreasing, seqused within the lengths, residual in [0, cmpRatio), topk lengths >= 0): 161002.
 * workspaceSize or executor null: 561103. Both profiles. aclnnSparseFlashMla only checks metadata's dtype and shape.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseFlashMlaMetadataGetWorkspaceSize(
    const aclTensor* cuSeqlensQOptional, const aclTensor* cuSeqlensOriKvOptional,
    const aclTensor* cuSeqlensCmpKvOptional, const aclTensor* sequsedQOptional, const aclTensor* sequsedOriKvOptional,
    const aclTensor* sequsedCmpKvOptional, const aclTensor* cmpResidualKvOptional,
    const aclTensor* oriTopkLengthOptional, const aclTensor* cmpTopkLengthOptional, int64_t numHeadsQ,
    int64_t numHeadsKv, int64_t headDim, int64_t batchSize, int64_t maxSeqlenQ, int64_t maxSeqlenOriKv,
    int64_t maxSeqlenCmpKv, int64_t oriTopk, int64_t cmpTopk, int64_t cmpRatio, int64_t oriMaskMode,
    int64_t cmpMaskMode, int64_t oriWinLeft, int64_t oriWinRight, const char* layoutQOptional,
    const char* layoutKvOptional, bool hasOriKv, bool hasCmpKv, const aclTensor* metaData, uint64_t* workspaceSize,
    aclOpExecutor** executor);

/** Enqueues the planned aclnnSparseFlashMlaMetadata on `stream` (it writes metaData). */
ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseFlashMlaMetadata(void* workspace, uint64_t workspaceSize,
                                                            aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_SPARSE_FLASH_MLA_METADATA_H_
