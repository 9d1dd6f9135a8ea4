// gradkit: the flash attention backward, every version ops-transformer declares in this header
// (attention/flash_attention_score_grad): aclnnFlashAttentionScoreGrad, V2, V3, V4 (padded layouts BNSD, BSND, BSH,
// SBH; V4 also TND) and aclnnFlashAttentionUnpaddingScoreGrad, V2, V3, V4, V5 (TND).
//
// From the forward's inputs (same mask, pse, dropout and tokens arguments), its statistics softmaxMaxOptional /
// softmaxSumOptional (FP32, [B, N1, S1, 8] padded, [T1, N1, 8] TND) and output attentionInOptional, and the incoming
// gradient dy (attentionIn's shape), every version recomputes P = exp(S - max) / sum and writes
//   dvOut = dropout(P)^T . dy,  dS = P * (dropout(dy . V^T) - rowsum(dy * attentionIn)),
//   dqOut = dS . K * scaleValue,  dkOut = dS^T . Q * scaleValue,
// dk and dv summed over the query heads that share a KV head; dqOut, dkOut, dvOut have the shapes of query, keyIn,
// value and query's dtype. dpseOut is never written (no pse gradient). When dqOut, dkOut and dvOut are all empty
// (and dpseOut null or empty) the call succeeds and computes nothing. softmaxInOptional and paddingMaskOptional are
// reserved and never read. Any strides are accepted. Rejected calls return 161001 (a required pointer is null) or
// 161002 with a message (aclGetRecentErrMsg) that names the argument, what was expected and what was given.
#ifndef GRADKIT_ACLNNOP_ACLNN_FLASH_ATTENTION_SCORE_GRAD_H_
#define GRADKIT_ACLNNOP_ACLNN_FLASH_ATTENTION_SCORE_GRAD_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The gradient of aclnnFlashAttentionScore (padded layouts "BNSD", "BSND", "BSH", "SBH"; pseType 1). The external
 * drop mask (UINT8, bit-packed, LSB first over [B, N1, S1, S2]) is required when keepProb < 1.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionScoreGradGetWorkspaceSize(
    const aclTensor* query, const aclTensor* keyIn, const aclTensor* value, const aclTensor* dy,
    const aclTensor* pseShiftOptional, const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional,
    const aclTensor* attenMaskOptional, const aclTensor* softmaxMaxOptional, const aclTensor* softmaxSumOptional,
    const aclTensor* softmaxInOptional, const aclTensor* attentionInOptional, const aclIntArray* prefixOptional,
    double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens, int64_t headNum, char* inputLayout,
    int64_t innerPrecise, int64_t sparseMode, const aclTensor* dqOut, const aclTensor* dkOut, const aclTensor* dvOut,
    const aclTensor* dpseOut, uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnFlashAttentionScoreGrad on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionScoreGrad(void* workspace, uint64_t workspaceSize,
                                                             aclOpExecutor* executor, aclrtStream stream);

/**
 * The gradient of aclnnFlashAttentionVarLenScore (inputLayout "TND"; actualSeqQLenOptional and actualSeqKvLenOptional
 * required: cumulative ends, B entries each).
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionUnpaddingScoreGradGetWorkspaceSize(
    const aclTensor* query, const aclTensor* keyIn, const aclTensor* value, const aclTensor* dy,
    const aclTensor* pseShiftOptional, const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional,
    const aclTensor* attenMaskOptional, const aclTensor* softmaxMaxOptional, const aclTensor* softmaxSumOptional,
    const aclTensor* softmaxInOptional, const aclTensor* attentionInOptional, const aclIntArray* prefixOptional,
    const aclIntArray* actualSeqQLenOptional, const aclIntArray* actualSeqKvLenOptional, double scaleValue,
    double keepProb, int64_t preTokens, int64_t nextTokens, int64_t headNum, char* inputLayout, int64_t innerPrecise,
    int64_t sparseMode, const aclTensor* dqOut, const aclTensor* dkOut, const aclTensor* dvOut,
    const aclTensor* dpseOut, uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnFlashAttentionUnpaddingScoreGrad on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionUnpaddingScoreGrad(void* workspace, uint64_t workspaceSize,
                                                                      aclOpExecutor* executor, aclrtStream stream);

/** aclnnFlashAttentionScoreGrad with qStartIdxOptional / kvStartIdxOptional and pseType (see ScoreV2). */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionScoreGradV2GetWorkspaceSize(
    const aclTensor* query, const aclTensor* keyIn, const aclTensor* value, const aclTensor* dy,
    const aclTensor* pseShiftOptional, const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional,
    const aclTensor* attenMaskOptional, const aclTensor* softmaxMaxOptional, const aclTensor* softmaxSumOptional,
    const aclTensor* softmaxInOptional, const aclTensor* attentionInOptional, const aclIntArray* prefixOptional,
    const aclIntArray* qStartIdxOptional, const aclIntArray* kvStartIdxOptional, double scaleValue, double keepProb,
    int64_t preTokens, int64_t nextTokens, int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode,
    int64_t pseType, const aclTensor* dqOut, const aclTensor* dkOut, const aclTensor* dvOut, const aclTensor* dpseOut,
    uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnFlashAttentionScoreGradV2 on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionScoreGradV2(void* workspace, uint64_t workspaceSize,
                                                               aclOpExecutor* executor, aclrtStream stream);

/**
 * aclnnFlashAttentionScoreGradV2 with the sink (sinkInOptional, its gradient dsinkOut). gradkit does not implement
 * the sink yet: a sinkInOptional with elements is rejected with 161002; null or empty means none (dsinkOut unused).
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionScoreGradV3GetWorkspaceSize(
    const aclTensor* query, const aclTensor* keyIn, const aclTensor* value, const aclTensor* dy,
    const aclTensor* pseShiftOptional, const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional,
    const aclTensor* attenMaskOptional, const aclTensor* softmaxMaxOptional, const aclTensor* softmaxSumOptional,
    const aclTensor* softmaxInOptional, const aclTensor* attentionInOptional, const aclTensor* sinkInOptional,
    const aclIntArray* prefixOptional, const aclIntArray* qStartIdxOptional, const aclIntArray* kvStartIdxOptional,
    double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens, int64_t headNum, char* inputLayout,
    int64_t innerPrecise, int64_t sparseMode, int64_t pseType, const aclTensor* dqOut, const aclTensor* dkOut,
    const aclTensor* dvOut, const aclTensor* dpseOut, const aclTensor* dsinkOut, uint64_t* workspaceSize,
    aclOpExecutor** executor);

/** Enqueues the planned aclnnFlashAttentionScoreGradV3 on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionScoreGradV3(void* workspace, uint64_t workspaceSize,
                                                               aclOpExecutor* executor, aclrtStream stream);

/**
 * The Ascend950 gradient that serves padded layouts and TND (actual sequence arrays for TND only), with the rope
 * slices (queryRopeOptional / keyRopeOptional -> dqRopeOut / dkRopeOut; FLOAT16 or BFLOAT16, D = D_V = 128,
 * D_rope = 64), softmaxInLayout, and the dropout mask drawn from the Philox4x32-7 stream of (seed, offset >= 0) when
 * keepProb < 1 and dropMaskOptional is null. FP8 (spec fag.md 5.9): query, keyIn, value, dy of FLOAT8_E5M2 or
 * FLOAT8_E4M3FN (one format), padded layouts only, no rope, with FLOAT32 de-quant scales dScaleQOptional /
 * dScaleDyOptional [B, N1, ceil(S1/128), 1] and dScaleKOptional / dScaleVOptional [B, N2, ceil(S2/128), 1] (required);
 * attentionInOptional, a pse table and dqOut / dkOut / dvOut are FLOAT16 (outDtype 0) or BFLOAT16 (outDtype 1).
 * dScaleOOptional is optional, checked for the dScaleQ shape and not read (attentionIn comes de-quantised). P_d and
 * dS are cast to the inputs' fp8 format (dS with 128 x 128 block scales). De-quant scales with non-FP8 inputs and
 * sinkInOptional with elements are rejected with 161002. Ascend950 profile only (161002 elsewhere).
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionScoreGradV4GetWorkspaceSize(
    const aclTensor* query, const aclTensor* keyIn, const aclTensor* value, const aclTensor* dy,
    const aclTensor* pseShiftOptional, const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional,
    const aclTensor* attenMaskOptional, const aclTensor* softmaxMaxOptional, const aclTensor* softmaxSumOptional,
    const aclTensor* softmaxInOptional, const aclTensor* attentionInOptional, const aclTensor* sinkInOptional,
    const aclTensor* queryRopeOptional, const aclTensor* keyRopeOptional, const aclTensor* dScaleQOptional,
    const aclTensor* dScaleKOptional, const aclTensor* dScaleVOptional, const aclTensor* dScaleDyOptional,
    const aclTensor* dScaleOOptional, const aclIntArray* prefixOptional, const aclIntArray* actualSeqQLenOptional,
    const aclIntArray* actualSeqKvLenOptional, const aclIntArray* qStartIdxOptional,
    const aclIntArray* kvStartIdxOptional, double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens,
    int64_t headNum, char* inputLayout, char* softmaxInLayout, int64_t innerPrecise, int64_t sparseMode,
    int64_t pseType, int64_t seed, int64_t offset, int64_t outDtype, const aclTensor* dqOut, const aclTensor* dkOut,
    const aclTensor* dvOut, const aclTensor* dqRopeOut, const aclTensor* dkRopeOut, const aclTensor* dpseOut,
    const aclTensor* dsinkOut, uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnFlashAttentionScoreGradV4 on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionScoreGradV4(void* workspace, uint64_t workspaceSize,
                                                               aclOpExecutor* executor, aclrtStream stream);

/** aclnnFlashAttentionUnpaddingScoreGrad with qStartIdxOptional / kvStartIdxOptional and pseType. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV2GetWorkspaceSize(
    const aclTensor* query, const aclTensor* keyIn, const aclTensor* value, const aclTensor* dy,
    const aclTensor* pseShiftOptional, const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional,
    const aclTensor* attenMaskOptional, const aclTensor* softmaxMaxOptional, const aclTensor* softmaxSumOptional,
    const aclTensor* softmaxInOptional, const aclTensor* attentionInOptional, const aclIntArray* prefixOptional,
    const aclIntArray* actualSeqQLenOptional, const aclIntArray* actualSeqKvLenOptional,
    const aclIntArray* qStartIdxOptional, const aclIntArray* kvStartIdxOptional, double scaleValue, double keepProb,
    int64_t preTokens, int64_t nextTokens, int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode,
    int64_t pseType, const aclTensor* dqOut, const aclTensor* dkOut, const aclTensor* dvOut, const aclTensor* dpseOut,
    uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnFlashAttentionUnpaddingScoreGradV2 on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV2(void* workspace, uint64_t workspaceSize,
                                                                        aclOpExecutor* executor, aclrtStream stream);

/**
 * aclnnFlashAttentionUnpaddingScoreGradV2 with the rope slices queryRope / keyInRope (both or neither; BFLOAT16, the
 * rules of VarLenScoreV3) and their gradients dqRopeOut / dkRopeOut.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV3GetWorkspaceSize(
    const aclTensor* query, const aclTensor* queryRope, const aclTensor* keyIn, const aclTensor* keyInRope,
    const aclTensor* value, const aclTensor* dy, const aclTensor* pseShiftOptional, const aclTensor* dropMaskOptional,
    const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional, const aclTensor* softmaxMaxOptional,
    const aclTensor* softmaxSumOptional, const aclTensor* softmaxInOptional, const aclTensor* attentionInOptional,
    const aclIntArray* prefixOptional, const aclIntArray* actualSeqQLenOptional,
    const aclIntArray* actualSeqKvLenOptional, const aclIntArray* qStartIdxOptional,
    const aclIntArray* kvStartIdxOptional, double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens,
    int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode, int64_t pseType,
    const aclTensor* dqOut, const aclTensor* dqRopeOut, const aclTensor* dkOut, const aclTensor* dkRopeOut,
    const aclTensor* dvOut, const aclTensor* dpseOut, uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnFlashAttentionUnpaddingScoreGradV3 on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV3(void* workspace, uint64_t workspaceSize,
                                                                        aclOpExecutor* executor, aclrtStream stream);

/**
 * aclnnFlashAttentionUnpaddingScoreGrad with softmaxInLayout: "" (or null) reads the statistics per batch
 * [N1][S1_b][8] inside the [T1, N1, 8] tensors, "same_as_input" as a true [T1, N1, 8].
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV4GetWorkspaceSize(
    const aclTensor* query, const aclTensor* keyIn, const aclTensor* value, const aclTensor* dy,
    const aclTensor* pseShiftOptional, const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional,
    const aclTensor* attenMaskOptional, const aclTensor* softmaxMaxOptional, const aclTensor* softmaxSumOptional,
    const aclTensor* softmaxInOptional, const aclTensor* attentionInOptional, const aclIntArray* prefixOptional,
    const aclIntArray* actualSeqQLenOptional, const aclIntArray* actualSeqKvLenOptional, double scaleValue,
    double keepProb, int64_t preTokens, int64_t nextTokens, int64_t headNum, char* inputLayout, int64_t innerPrecise,
    int64_t sparseMode, const aclTensor* dqOut, const aclTensor* dkOut, const aclTensor* dvOut,
    const aclTensor* dpseOut, char* softmaxInLayout, uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnFlashAttentionUnpaddingScoreGradV4 on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV4(void* workspace, uint64_t workspaceSize,
                                                                        aclOpExecutor* executor, aclrtStream stream);

/**
 * aclnnFlashAttentionUnpaddingScoreGradV3 with sinkInOptional / dsinkOut and softmaxInLayout (as V4). The sink is not
 * supported yet: a sinkInOptional with elements is rejected with 161002.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV5GetWorkspaceSize(
    const aclTensor* query, const aclTensor* queryRope, const aclTensor* keyIn, const aclTensor* keyInRope,
    const aclTensor* value, const aclTensor* dy, const aclTensor* pseShiftOptional, const aclTensor* dropMaskOptional,
    const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional, const aclTensor* softmaxMaxOptional,
    const aclTensor* softmaxSumOptional, const aclTensor* softmaxInOptional, const aclTensor* attentionInOptional,
    const aclTensor* sinkInOptional, const aclIntArray* prefixOptional, const aclIntArray* actualSeqQLenOptional,
    const aclIntArray* actualSeqKvLenOptional, const aclIntArray* qStartIdxOptional,
    const aclIntArray* kvStartIdxOptional, double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens,
    int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode, int64_t pseType,
    char* softmaxInLayout, const aclTensor* dqOut, const aclTensor* dqRopeOut, const aclTensor* dkOut,
    const aclTensor* dkRopeOut, const aclTensor* dvOut, const aclTensor* dpseOut, const aclTensor* dsinkOut,
    uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnFlashAttentionUnpaddingScoreGradV5 on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV5(void* workspace, uint64_t workspaceSize,
                                                                        aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_FLASH_ATTENTION_SCORE_GRAD_H_
