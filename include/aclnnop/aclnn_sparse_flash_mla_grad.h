// gradkit: aclnnSparseFlashMlaGrad, the backward of aclnnSparseFlashMla (ops-transformer
// attention/sparse_flash_mla_grad): dq, the scatter-added gradients of the shared K = V rows, dSinks and the softmax
// L1 norms of the listed keys.
#ifndef GRADKIT_ACLNNOP_ACLNN_SPARSE_FLASH_MLA_GRAD_H_
#define GRADKIT_ACLNNOP_ACLNN_SPARSE_FLASH_MLA_GRAD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * For every query row and head, over the keys the forward saw (aclnnSparseFlashMla's rules; no paged layout here),
 * from the forward's `out` and `lse`:
 *   P_j = e^{s_j - lse}, s_j = scaleValue * q . k_j;  dP_j = dOut . k_j;  dS_j = P_j (dP_j - dOut . out)
 *   dQueryOut     = scaleValue * sum_j dS_j k_j
 *   dOriKvOut / dCmpKvOut, row of key j += scaleValue * sum_n dS_nj q_n + sum_n P_nj dOut_n  (K = V; repeated keys add)
 *   dSinksOut[n]  = -sum_rows e^{sinks[n] - lse} sum_j P_j dP_j
 *   ori / cmpSoftmaxL1NormOptional[row][slot] = (sum_n P_n,slot) / N1 for each listed key (0 for slots not used)
 * query, dOut, out, dQueryOut [B,S1,N1,512] (BSND) or [T1,N1,512] (TND), FLOAT16 / BFLOAT16; lse [B,1,S1,N1] /
 * [1,T1,N1] FLOAT32; oriKvOptional and cmpKvOptional [B,S,1,512] / [T,1,512] with their gradients alike; sinks and
 * dSinksOut [N1] FLOAT32; metadataOptional [1024] INT32 from aclnnSparseFlashMlaGradMetadata (optional here, its
 * contents are not needed on a CPU; not taken in the A2/A3 profile). The INT32 lengths and residuals are read and
 * checked in this first phase. Bits do not depend on the thread count. docs/sparse_attention.md has the modes, the
 * checks and the numerics.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseFlashMlaGradGetWorkspaceSize(
    const aclTensor* query, const aclTensor* dOut, const aclTensor* out, const aclTensor* lse,
    const aclTensor* oriKvOptional, const aclTensor* cmpKvOptional, const aclTensor* oriSparseIndicesOptional,
    const aclTensor* cmpSparseIndicesOptional, const aclTensor* cuSeqlensQOptional,
    const aclTensor* cuSeqlensOriKvOptional, const aclTensor* cuSeqlensCmpKvOptional, const aclTensor* sequsedQOptional,
    const aclTensor* sequsedOriKvOptional, const aclTensor* sequsedCmpKvOptional,
    const aclTensor* cmpResidualKvOptional, const aclTensor* oriTopkLengthOptional,
    const aclTensor* cmpTopkLengthOptional, const aclTensor* sinksOptional, const aclTensor* metadataOptional,
    double scaleValue, int64_t cmpRatio, int64_t oriMaskMode, int64_t cmpMaskMode, int64_t oriWinLeft,
    int64_t oriWinRight, char* layoutQOptional, char* layoutKvOptional, const aclTensor* dQueryOut,
    const aclTensor* dOriKvOutOptional, const aclTensor* dCmpKvOutOptional, const aclTensor* dSinksOutOptional,
    const aclTensor* oriSoftmaxL1NormOptional, const aclTensor* cmpSoftmaxL1NormOptional, uint64_t* workspaceSize,
    aclOpExecutor** executor);

/** Enqueues the planned aclnnSparseFlashMlaGrad on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseFlashMlaGrad(void* workspace, uint64_t workspaceSize,
                                                        aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_SPARSE_FLASH_MLA_GRAD_H_
