// gradkit: aclnnSparseLightningIndexerKLLossGrad, the backward of the lightning indexer's KL loss (ops-transformer
// attention/sparse_lightning_indexer_kl_loss_grad).
#ifndef GRADKIT_ACLNNOP_ACLNN_SPARSE_LIGHTNING_INDEXER_KL_LOSS_GRAD_H_
#define GRADKIT_ACLNNOP_ACLNN_SPARSE_LIGHTNING_INDEXER_KL_LOSS_GRAD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The gradients of the indexer's loss L = sum_t sum_j p[t,j] log(p[t,j] / y[t,j]) (not returned) with respect to q,
 * k and w, and y itself. For query row t with selected keys idx_j = sparseIndices[t, 0, j] (0-based in the batch):
 *   S[h,j] = q[t,h,:] . k[idx_j,0,:];  I[j] = sum_h w[t,h] ReLU(S[h,j]);  y = softmax(I) over the valid slots;
 *   p = attnSoftmaxL1Norm[t,0,:];  dI[j] = y[j] sum_j' p[j'] - p[j] (sums over the valid slots only);
 *   dw[t,h] = sum_j ReLU(S[h,j]) dI[j];  dS[h,j] = dI[j] w[t,h] [S[h,j] > 0], rounded to q's dtype;
 *   dq[t,h,:] = sum_j dS[h,j] k[idx_j,0,:];  dk[idx_j,0,:] += sum_h dS[h,j] q[t,h,:] (scatter-add);
 *   softmaxOut[t,0,:] = y (0 in invalid slots).
 * Slot j is valid iff j < min(K, c_t) and 0 <= idx_j < c_t, with c_t the keys row t sees: every used key with
 * maskMode 0; with maskMode 3 (right-down causal on the uncompressed axis) floor((Sk*cmpRatio + res - Sq + i + 1) /
 * cmpRatio) clamped to [0, Sk] for row i of a batch with Sq used query rows, Sk used keys, res = cmpResidualK[b].
 * Layouts (layoutQ = layoutK): BSND q [B,S1,N1,128], k [B,S2,1,128], w [B,S1,N1], sparseIndices / attnSoftmaxL1Norm
 * [B,S1,1,K]; TND q [T1,N1,128], k [T2,1,128], w [T1,N1], [T1,1,K] with cuSeqLensQ/K [B+1]. q, k, dq, dk FLOAT16 or
 * BFLOAT16; w, attnSoftmaxL1Norm, dw, softmaxOut FLOAT; the rest INT32. Ascend950: N1 in [1, 128], K in [1, 2048],
 * metadataOptional (the Metadata op's [64] output) required, cmpResidualKOptional required with maskMode 3 and
 * cmpRatio != 1. Every output element is written (rows and keys no batch uses, empty rows: zeros). Deterministic for
 * any thread count; any strides are accepted.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseLightningIndexerKLLossGradGetWorkspaceSize(
    const aclTensor* q, const aclTensor* k, const aclTensor* w, const aclTensor* sparseIndices,
    const aclTensor* attnSoftmaxL1Norm, const aclTensor* cuSeqLensQOptional, const aclTensor* cuSeqLensKOptional,
    const aclTensor* seqUsedQOptional, const aclTensor* seqUsedKOptional, const aclTensor* cmpResidualKOptional,
    const aclTensor* metadataOptional, char* layoutQ, char* layoutK, int64_t maskMode, int64_t cmpRatio,
    const aclTensor* dq, const aclTensor* dk, const aclTensor* dw, const aclTensor* softmaxOut, uint64_t* workspaceSize,
    aclOpExecutor** executor);

/** Enqueues the planned aclnnSparseLightningIndexerKLLossGrad on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseLightningIndexerKLLossGrad(void* workspace, uint64_t workspaceSize,
                                                                      aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_SPARSE_LIGHTNING_INDEXER_KL_LOSS_GRAD_H_
