// gradkit: aclnnSparseFlashMlaSoftmaxL1NormMetadata, the row split of aclnnSparseFlashMlaSoftmaxL1Norm over the
// emulated chip's cube cores (ops-transformer attention/sparse_flash_mla_softmax_l1_norm_metadata; upstream runs it on
// the AI CPU).
#ifndef GRADKIT_ACLNNOP_ACLNN_SPARSE_FLASH_MLA_SOFTMAX_L1_NORM_METADATA_H_
#define GRADKIT_ACLNNOP_ACLNN_SPARSE_FLASH_MLA_SOFTMAX_L1_NORM_METADATA_H_

#ifdef __cplusplus
#include <string>  // upstream's header includes it; C programs can use this header as well
#endif

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * Zero-fills metadata (INT32 [64]) and writes words 0..4: the query rows T (sum of seqUsedQOptional, else
 * cuSeqLensQOptional[B] for TND, else batchSize * maxSeqLenQ), ceil(T / cores), floor(T / cores), 0 or
 * cores - T mod cores, and cores = min(T, the profile's cube-core count, 36); the L1 kernel takes rows core,
 * core + cores, ... (all five 0 when T = 0, where upstream divides by zero). numHeadsQ in [1, 128], numHeadsK 1,
 * headDim 512, maskMode 0 or 3, cmpRatio in [1, 128]; batchSize 0 or the batch the tensors give. The int32 inputs'
 * values are checked here (161002). workspaceSize or executor null: 561103. Ascend950 profile only (GRADKIT_SOC).
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseFlashMlaSoftmaxL1NormMetadataGetWorkspaceSize(
    const aclTensor* cuSeqLensQOptional, const aclTensor* cuSeqLensKOptional, const aclTensor* seqUsedQOptional,
    const aclTensor* seqUsedKOptional, const aclTensor* cmpResidualKOptional, const aclTensor* topkLengthOptional,
    int64_t batchSize, int64_t maxSeqLenQ, int64_t maxSeqLenK, int64_t numHeadsQ, int64_t numHeadsK, int64_t headDim,
    int64_t topk, int64_t cmpRatio, int64_t maskMode, char* layoutQ, char* layoutK, const aclTensor* metadata,
    uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnSparseFlashMlaSoftmaxL1NormMetadata on `stream` (it writes metadata). */
ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseFlashMlaSoftmaxL1NormMetadata(void* workspace, uint64_t workspaceSize,
                                                                         aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_SPARSE_FLASH_MLA_SOFTMAX_L1_NORM_METADATA_H_
