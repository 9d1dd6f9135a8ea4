// gradkit: aclnnSparseFlashMla, DeepSeek-V4's shared-KV sparse attention over a sliding window of the original KV and
// the compressed KV, dense (HCA) or by top-k indices (CSA) (ops-transformer attention/sparse_flash_mla).
#ifndef GRADKIT_ACLNNOP_ACLNN_SPARSE_FLASH_MLA_H_
#define GRADKIT_ACLNNOP_ACLNN_SPARSE_FLASH_MLA_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * For every query row i of batch b and head n (N2 = 1, so every head shares the one KV head; D = 512):
 *   keys  = the ori rows the row sees (oriMaskMode 0 all, 3 causal, 4 the band [thr - oriWinLeft - 1,
 *           thr + oriWinRight) with thr = S2 - S1 + i + 1, -1 = unbounded; or the rows oriSparseIndicesOptional lists)
 *           then the compressed rows (cmpKvOptional: [0, v) dense, or the rows cmpSparseIndicesOptional lists below v,
 *           v = floor((C * cmpRatio + cmpResidual - S1 + i + 1) / cmpRatio) with cmpMaskMode 3); K = V
 *   out   = sum_j e^{s_j} k_j / (e^{sinks[n]} + sum_j e^{s_j}),  s_j = softmaxScale * q . k_j
 *   lse   = ln(e^{sinks[n]} + sum_j e^{s_j})                      (a row that sees nothing: out 0, lse 0)
 * q [B,S1,N1,512] (BSND) or [T1,N1,512] (TND, cuSeqlensQOptional), FLOAT16 / BFLOAT16; the KV [B,S,1,512], [T,1,512]
 * or paged [blocks, blockSize, 1, 512] (PA_BBND with block tables and sequsedOriKvOptional); sinks [N1] FLOAT32;
 * metadataOptional [1024] INT32 from aclnnSparseFlashMlaMetadata (required, its contents are not needed on a CPU);
 * attnOutOut like q; softmaxLseOutOptional [B,1,S1,N1] / [1,T1,N1] FLOAT32 when returnSoftmaxLse. The INT32 tensors
 * of lengths, tables and residuals are read in this first phase (their values are checked here); the index tensors in
 * the second. docs/sparse_attention.md has the modes, the checks and the numerics.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseFlashMlaGetWorkspaceSize(
    const aclTensor* q, const aclTensor* oriKvOptional, const aclTensor* cmpKvOptional,
    const aclTensor* oriSparseIndicesOptional, const aclTensor* cmpSparseIndicesOptional,
    const aclTensor* oriBlockTableOptional, const aclTensor* cmpBlockTableOptional, const aclTensor* cuSeqlensQOptional,
    const aclTensor* cuSeqlensOriKvOptional, const aclTensor* cuSeqlensCmpKvOptional, const aclTensor* sequsedQOptional,
    const aclTensor* sequsedOriKvOptional, const aclTensor* sequsedCmpKvOptional,
    const aclTensor* cmpResidualKvOptional, const aclTensor* oriTopkLengthOptional,
    const aclTensor* cmpTopkLengthOptional, const aclTensor* sinksOptional, const aclTensor* metadataOptional,
    double softmaxScale, int64_t cmpRatio, int64_t oriMaskMode, int64_t cmpMaskMode, int64_t oriWinLeft,
    int64_t oriWinRight, char* layoutQOptional, char* layoutKvOptional, int64_t topkValueMode, bool returnSoftmaxLse,
    const aclTensor* attnOutOut, const aclTensor* softmaxLseOutOptional, uint64_t* workspaceSize,
    aclOpExecutor** executor);

/** Enqueues the planned aclnnSparseFlashMla on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnSparseFlashMla(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                    aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_SPARSE_FLASH_MLA_H_
