// gradkit: the flash attention forward, every version ops-transformer declares in this header
// (attention/flash_attention_score): aclnnFlashAttentionScore, V2, V3, V4 (padded layouts BNSD, BSND, BSH, SBH; V4
// also TND) and aclnnFlashAttentionVarLenScore, V2, V3, V4, V5 (TND).
//
// What every version computes, per batch b and query head n1 (KV head n1 / (N1 / N2)):
//   S = (Q.K^T + pse) * scaleValue (pseType 1, the V1 behaviour) or Q.K^T * scaleValue + pse (pseType 0, 2, 3),
//   masked positions (attenMaskOptional and sparseMode, tokens) excluded, P = softmax(S) in fp32,
//   attentionOutOut = dropout(P) . V (query's dtype), softmaxMaxOut / softmaxSumOut = the row max and the row sum of
//   exp(S - max), FP32, each value repeated 8 times on the last axis: [B, N1, S1, 8] for padded layouts, [T1, N1, 8]
//   for TND (data per batch [N1][S1_b][8] unless softmaxOutLayout is "same_as_input": then a true [T1, N1, 8]).
// Rows with every column masked give output 0, max -FLT_MAX and sum +FLT_MAX.
// The TND actual sequence arrays are cumulative ends without a leading 0 (lengths 2, 2, 2 -> [2, 4, 6]); entries
// after the last positive one are 0 (batches not computed). softmaxOutOut and paddingMaskOptional are reserved and
// never read or written. Any strides are accepted. Rejected calls return 161001 (a required pointer is null) or
// 161002 with a message (aclGetRecentErrMsg) that names the argument, what was expected and what was given.
#ifndef GRADKIT_ACLNNOP_ACLNN_FLASH_ATTENTION_SCORE_H_
#define GRADKIT_ACLNNOP_ACLNN_FLASH_ATTENTION_SCORE_H_

#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
extern "C" {
#endif

/**
 * The forward of flash attention with a padded layout (inputLayout "BNSD", "BSND", "BSH" or "SBH"). pseType is 1:
 * realShiftOptional is added before the scale. dropMaskOptional (UINT8, bit-packed, LSB first, over the elements
 * [B, N1, S1, S2]) is required when keepProb < 1.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionScoreGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* realShiftOptional,
    const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional,
    const aclIntArray* prefixOptional, double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens,
    int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode, const aclTensor* softmaxMaxOut,
    const aclTensor* softmaxSumOut, const aclTensor* softmaxOutOut, const aclTensor* attentionOutOut,
    uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnFlashAttentionScore on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionScore(void* workspace, uint64_t workspaceSize,
                                                         aclOpExecutor* executor, aclrtStream stream);

/**
 * aclnnFlashAttentionScore for the TND layout (inputLayout "TND"): query [T1, N1, D], key [T2, N2, D], value
 * [T2, N2, D_V], with the cumulative sequence ends actualSeqQLenOptional and actualSeqKvLenOptional (required, B
 * entries each). The drop mask covers the elements of every batch in order, each [N1][S1_b][S2_b].
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionVarLenScoreGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* realShiftOptional,
    const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional,
    const aclIntArray* prefixOptional, const aclIntArray* actualSeqQLenOptional,
    const aclIntArray* actualSeqKvLenOptional, double scaleValue, double keepProb, int64_t preTokens,
    int64_t nextTokens, int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode,
    const aclTensor* softmaxMaxOut, const aclTensor* softmaxSumOut, const aclTensor* softmaxOutOut,
    const aclTensor* attentionOutOut, uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnFlashAttentionVarLenScore on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionVarLenScore(void* workspace, uint64_t workspaceSize,
                                                               aclOpExecutor* executor, aclrtStream stream);

/**
 * aclnnFlashAttentionScore with pseType (0: pse added after the scale, 1: before, 2 / 3: ALiBi bias generated from
 * the FP32 slopes in realShiftOptional, [N1] or [B, N1], -slope * |dist| resp. -slope * sqrt(|dist|)) and the global
 * start positions qStartIdxOptional / kvStartIdxOptional (first element used, default 0) that the generated bias
 * measures distances from.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionScoreV2GetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* realShiftOptional,
    const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional,
    const aclIntArray* prefixOptional, const aclIntArray* qStartIdxOptional, const aclIntArray* kvStartIdxOptional,
    double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens, int64_t headNum, char* inputLayout,
    int64_t innerPrecise, int64_t sparseMode, int64_t pseType, const aclTensor* softmaxMaxOut,
    const aclTensor* softmaxSumOut, const aclTensor* softmaxOutOut, const aclTensor* attentionOutOut,
    uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnFlashAttentionScoreV2 on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionScoreV2(void* workspace, uint64_t workspaceSize,
                                                           aclOpExecutor* executor, aclrtStream stream);

/**
 * aclnnFlashAttentionScoreV2 with sinkOptional (one learnable logit per head in every softmax denominator). gradkit
 * does not implement the sink yet: a sink with elements is rejected with 161002; null or empty means none.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionScoreV3GetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* realShiftOptional,
    const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional,
    const aclTensor* sinkOptional, const aclIntArray* prefixOptional, const aclIntArray* qStartIdxOptional,
    const aclIntArray* kvStartIdxOptional, double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens,
    int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode, int64_t pseType,
    const aclTensor* softmaxMaxOut, const aclTensor* softmaxSumOut, const aclTensor* softmaxOutOut,
    const aclTensor* attentionOutOut, uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnFlashAttentionScoreV3 on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionScoreV3(void* workspace, uint64_t workspaceSize,
                                                           aclOpExecutor* executor, aclrtStream stream);

/**
 * The Ascend950 forward that serves padded layouts and TND (actual sequence arrays for TND only), with the rope
 * slices queryRopeOptional / keyRopeOptional (appended to Q and K along the head dim), softmaxOutLayout, and the
 * dropout mask drawn from the Philox4x32-7 stream of (seed, offset) when keepProb < 1 and dropMaskOptional is null.
 * The FP8 inputs dScaleQOptional / dScaleKOptional / dScaleVOptional (and outDtype, 0 or 1) are not supported yet, and
 * neither is sinkOptional: given with elements they are rejected with 161002. Ascend950 profile only (161002
 * elsewhere).
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionScoreV4GetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* realShiftOptional,
    const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional,
    const aclTensor* queryRopeOptional, const aclTensor* keyRopeOptional, const aclTensor* dScaleQOptional,
    const aclTensor* dScaleKOptional, const aclTensor* dScaleVOptional, const aclTensor* sinkOptional,
    const aclIntArray* prefixOptional, const aclIntArray* actualSeqQLenOptional,
    const aclIntArray* actualSeqKvLenOptional, const aclIntArray* qStartIdxOptional,
    const aclIntArray* kvStartIdxOptional, double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens,
    int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode, int64_t outDtype, int64_t pseType,
    char* softmaxOutLayout, int64_t seed, int64_t offset, const aclTensor* softmaxMaxOut,
    const aclTensor* softmaxSumOut, const aclTensor* softmaxOutOut, const aclTensor* attentionOutOut,
    uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnFlashAttentionScoreV4 on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionScoreV4(void* workspace, uint64_t workspaceSize,
                                                           aclOpExecutor* executor, aclrtStream stream);

/** aclnnFlashAttentionVarLenScore with pseType and qStartIdxOptional / kvStartIdxOptional (as ScoreV2). */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionVarLenScoreV2GetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* realShiftOptional,
    const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional,
    const aclIntArray* prefixOptional, const aclIntArray* actualSeqQLenOptional,
    const aclIntArray* actualSeqKvLenOptional, const aclIntArray* qStartIdxOptional,
    const aclIntArray* kvStartIdxOptional, double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens,
    int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode, int64_t pseType,
    const aclTensor* softmaxMaxOut, const aclTensor* softmaxSumOut, const aclTensor* softmaxOutOut,
    const aclTensor* attentionOutOut, uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnFlashAttentionVarLenScoreV2 on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionVarLenScoreV2(void* workspace, uint64_t workspaceSize,
                                                                 aclOpExecutor* executor, aclrtStream stream);

/**
 * aclnnFlashAttentionVarLenScoreV2 with the rope slices queryRope [T1, N1, D_rope] and keyRope [T2, N2, D_rope]
 * (both or neither; BFLOAT16 throughout, D and D_rope multiples of 8, D_rope <= D, attenMaskOptional required,
 * sparseMode != 6, no pse, no dropout).
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionVarLenScoreV3GetWorkspaceSize(
    const aclTensor* query, const aclTensor* queryRope, const aclTensor* key, const aclTensor* keyRope,
    const aclTensor* value, const aclTensor* realShiftOptional, const aclTensor* dropMaskOptional,
    const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional, const aclIntArray* prefixOptional,
    const aclIntArray* actualSeqQLenOptional, const aclIntArray* actualSeqKvLenOptional,
    const aclIntArray* qStartIdxOptional, const aclIntArray* kvStartIdxOptional, double scaleValue, double keepProb,
    int64_t preTokens, int64_t nextTokens, int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode,
    int64_t pseType, const aclTensor* softmaxMaxOut, const aclTensor* softmaxSumOut, const aclTensor* softmaxOutOut,
    const aclTensor* attentionOutOut, uint64_t* workspaceSize, aclOpExecutor** executor);

/** Enqueues the planned aclnnFlashAttentionVarLenScoreV3 on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionVarLenScoreV3(void* workspace, uint64_t workspaceSize,
                                                                 aclOpExecutor* executor, aclrtStream stream);

/**
 * aclnnFlashAttentionVarLenScore with softmaxOutLayout: "" (or null) writes the statistics per batch [N1][S1_b][8]
 * inside the [T1, N1, 8] tensors, "same_as_input" as a true [T1, N1, 8].
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionVarLenScoreV4GetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* realShiftOptional,
    const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional,
    const aclIntArray* prefixOptional, const aclIntArray* actualSeqQLenOptional,
    const aclIntArray* actualSeqKvLenOptional, double scaleValue, double keepProb, int64_t preTokens,
    int64_t nextTokens, int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode,
    char* softmaxOutLayout, const aclTensor* softmaxMaxOut, const aclTensor* softmaxSumOut,
    const aclTensor* softmaxOutOut, const aclTensor* attentionOutOut, uint64_t* workspaceSize,
    aclOpExecutor** executor);

/** Enqueues the planned aclnnFlashAttentionVarLenScoreV4 on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionVarLenScoreV4(void* workspace, uint64_t workspaceSize,
                                                                 aclOpExecutor* executor, aclrtStream stream);

/**
 * aclnnFlashAttentionVarLenScoreV3 with sinkOptional and softmaxOutLayout (as V4). The sink is not supported yet: a
 * sink with elements is rejected with 161002.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionVarLenScoreV5GetWorkspaceSize(
    const aclTensor* query, const aclTensor* queryRope, const aclTensor* key, const aclTensor* keyRope,
    const aclTensor* value, const aclTensor* realShiftOptional, const aclTensor* dropMaskOptional,
    const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional, const aclTensor* sinkOptional,
    const aclIntArray* prefixOptional, const aclIntArray* actualSeqQLenOptional,
    const aclIntArray* actualSeqKvLenOptional, const aclIntArray* qStartIdxOptional,
    const aclIntArray* kvStartIdxOptional, double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens,
    int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode, int64_t pseType,
    char* softmaxOutLayout, const aclTensor* softmaxMaxOut, const aclTensor* softmaxSumOut,
    const aclTensor* softmaxOutOut, const aclTensor* attentionOutOut, uint64_t* workspaceSize,
    aclOpExecutor** executor);

/**
 * The largest workspace aclnnFlashAttentionVarLenScoreV5 needs for these arguments. gradkit's workspace depends only
 * on the arguments, so this is aclnnFlashAttentionVarLenScoreV5GetWorkspaceSize: same checks, same executor.
 */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionVarLenScoreV5GetMaxWorkspaceSize(
    const aclTensor* query, const aclTensor* queryRope, const aclTensor* key, const aclTensor* keyRope,
    const aclTensor* value, const aclTensor* realShiftOptional, const aclTensor* dropMaskOptional,
    const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional, const aclTensor* sinkOptional,
    const aclIntArray* prefixOptional, const aclIntArray* actualSeqQLenOptional,
    const aclIntArray* actualSeqKvLenOptional, const aclIntArray* qStartIdxOptional,
    const aclIntArray* kvStartIdxOptional, double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens,
    int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode, int64_t pseType,
    char* softmaxOutLayout, const aclTensor* softmaxMaxOut, const aclTensor* softmaxSumOut,
    const aclTensor* softmaxOutOut, const aclTensor* attentionOutOut, uint64_t* workspaceSize,
    aclOpExecutor** executor);

/** Enqueues the planned aclnnFlashAttentionVarLenScoreV5 on `stream`. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnFlashAttentionVarLenScoreV5(void* workspace, uint64_t workspaceSize,
                                                                 aclOpExecutor* executor, aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACLNNOP_ACLNN_FLASH_ATTENTION_SCORE_H_
