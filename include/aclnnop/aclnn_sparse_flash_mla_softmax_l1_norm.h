// gradkit: aclnnSparseFlashMlaSoftmaxL1Norm, the head-averaged softmax of DeepSeek-V4's sparse MLA attention over the
// compressed keys, dense (HCA) or by top-k indices (CSA): the target distribution of the lightning indexer's KL loss
// (ops-transformer attention/sparse_flash_mla_softmax_l1_norm).
#ifndef GRADKIT_ACLNNOP_ACLNN_SPARSE_FLASH_MLA_SOFTMAX_L1_NORM_H_
#define GRADKIT_ACLNNOP_ACLNN_SPARSE_FLASH_MLA_SOFTMAX_L1_NORM_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * For every query row i of batch b (S1 used query rows, C used key rows, N2 = 1 so the N1 = G heads share the keys;
 * D = 512), over the keys j the row sees:
 *   softmaxL1Norm[row][col] = (sum_h exp(softmaxScale * q_h . k_j - softmaxLse[row][h])) / N1
 * keys: maskMode 0 all C rows, 3 the rows [0, v) with v = floor((C * cmpRatio + cmpResidual - S1 + i + 1) / cmpRatio);
 * with sparseIndicesOptional the rows its entries name (the first min(K, v) entries under mask 3, min(K, the row's
 * topkLengthOptional) under mask 0; a negative entry ends the list, entries outside the rows are skipped, duplicates
 * kept). col = the entry's slot (sparse: [B,S1,1,K] / [T1,1,K]) or the key's row (dense: [B,S1,1,S2] /
 * [T1,1,maxSeqlenK]); every other element is 0, so are the rows past sequsedQOptional. q [B,S1,N1,512] (BSND) or
 * [T1,N1,512] (TND, with cuSeqlensQOptional / cuSeqlensKOptional), FLOAT16 / BFLOAT16; k [B,S2,1,512] / [T2,1,512]
 * like q; softmaxLse [B,1,S1,N1] / [1,T1,N1] FLOAT32 (the forward's); metadataOptional [64] INT32 from
 * aclnnSparseFlashMlaSoftmaxL1NormMetadata (required, its contents are not needed on a CPU); softmaxL1Norm FLOAT32.
 * The INT32 length tensors are read and checked in this first phase, the index lists in the second. Ascend950 profile
 * only (GRADKIT_SOC), as upstream. docs/sparse_attention.md ("aclnnSparseFlashMlaSoftmaxL1Norm") has the checks and
 * the numerics.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseFlashMlaSoftmaxL1NormGetWorkspaceSize(
    const aclTensor* q, const aclTensor* k, const aclTensor* softmaxLse, const aclTensor* sparseIndicesOptional,
    const aclTensor* cuSeqlensQOptional, const aclTensor* cuSeqlensKOptional, const aclTensor* sequsedQOptional,
    const aclTensor* sequsedKOptional, const aclTensor* cmpResidualKOptional, const aclTensor* topkLengthOptional,
    const aclTensor* metadataOptional, double softmaxScale, int64_t maxSeqlenK, int64_t cmpRatio, int64_t maskMode,
    char* layoutQOptional, char* layoutKOptional, const aclTensor* softmaxL1Norm, uint64_t* workspaceSize,
    aclOpExecutor** executor);

/** Enqueues the planned aclnnSparseFlashMlaSoftmaxL1Norm on `stream` (it writes softmaxL1Norm). */
ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseFlashMlaSoftmaxL1Norm(void* workspace, uint64_t workspaceSize,
                                                                 aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_SPARSE_FLASH_MLA_SOFTMAX_L1_NORM_H_
