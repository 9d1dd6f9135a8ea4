// The aclnn entry points of the flash attention backward: each version fills FagArgs with what it has (the IR
// defaults of spec fag.md 2.2 for the rest) and names itself, so messages and executors carry the entry point the
// caller used.
#include <cstdint>

#include "aclnnop/aclnn_flash_attention_score_grad.h"
#include "opapi/op_definition.h"
#include "opapi/tensor_rules.h"
#include "ops/flash_attention/fa_plan.h"
#include "ops/flash_attention/fag_check.h"

namespace gradkit::ops {
namespace {

constexpr const char kGrad[] = "aclnnFlashAttentionScoreGrad";
constexpr const char kGradV2[] = "aclnnFlashAttentionScoreGradV2";
constexpr const char kGradV3[] = "aclnnFlashAttentionScoreGradV3";
constexpr const char kGradV4[] = "aclnnFlashAttentionScoreGradV4";
constexpr const char kUnpad[] = "aclnnFlashAttentionUnpaddingScoreGrad";
constexpr const char kUnpadV2[] = "aclnnFlashAttentionUnpaddingScoreGradV2";
constexpr const char kUnpadV3[] = "aclnnFlashAttentionUnpaddingScoreGradV3";
constexpr const char kUnpadV4[] = "aclnnFlashAttentionUnpaddingScoreGradV4";
constexpr const char kUnpadV5[] = "aclnnFlashAttentionUnpaddingScoreGradV5";

using FagDefinition = OpDefinition<FagArgs, FagPlan>;
const FagDefinition kGradDef{kGrad, checkFlashAttentionGrad, flashAttentionGradNothingToCompute,
                             planFlashAttentionGrad};
const FagDefinition kGradV2Def{kGradV2, checkFlashAttentionGrad, flashAttentionGradNothingToCompute,
                               planFlashAttentionGrad};
const FagDefinition kGradV3Def{kGradV3, checkFlashAttentionGrad, flashAttentionGradNothingToCompute,
                               planFlashAttentionGrad};
const FagDefinition kGradV4Def{kGradV4, checkFlashAttentionGrad, flashAttentionGradNothingToCompute,
                               planFlashAttentionGrad};
const FagDefinition kUnpadDef{kUnpad, checkFlashAttentionGrad, flashAttentionGradNothingToCompute,
                              planFlashAttentionGrad};
const FagDefinition kUnpadV2Def{kUnpadV2, checkFlashAttentionGrad, flashAttentionGradNothingToCompute,
                                planFlashAttentionGrad};
const FagDefinition kUnpadV3Def{kUnpadV3, checkFlashAttentionGrad, flashAttentionGradNothingToCompute,
                                planFlashAttentionGrad};
const FagDefinition kUnpadV4Def{kUnpadV4, checkFlashAttentionGrad, flashAttentionGradNothingToCompute,
                                planFlashAttentionGrad};
const FagDefinition kUnpadV5Def{kUnpadV5, checkFlashAttentionGrad, flashAttentionGradNothingToCompute,
                                planFlashAttentionGrad};

// The arguments every version has, in upstream's order; the version adds the rest.
FagArgs common(const char* api, FaEntry entry, const aclTensor* query, const aclTensor* keyIn, const aclTensor* value,
               const aclTensor* dy, const aclTensor* pseShift, const aclTensor* dropMask, const aclTensor* paddingMask,
               const aclTensor* attenMask, const aclTensor* softmaxMax, const aclTensor* softmaxSum,
               const aclTensor* softmaxIn, const aclTensor* attentionIn, const aclIntArray* prefix, double scaleValue,
               double keepProb, int64_t preTokens, int64_t nextTokens, int64_t headNum, const char* inputLayout,
               int64_t innerPrecise, int64_t sparseMode, const aclTensor* dqOut, const aclTensor* dkOut,
               const aclTensor* dvOut, const aclTensor* dpseOut) {
  FagArgs a;
  a.api = api;
  a.entry = entry;
  a.query = query, a.key = keyIn, a.value = value, a.dy = dy;
  a.pseShift = absentIfScalar(pseShift), a.dropMask = absentIfScalar(dropMask);
  a.paddingMask = absentIfScalar(paddingMask), a.attenMask = absentIfScalar(attenMask);
  a.softmaxMax = softmaxMax, a.softmaxSum = softmaxSum, a.softmaxIn = absentIfScalar(softmaxIn);
  a.attentionIn = attentionIn;
  a.prefix = prefix;
  a.scaleValue = scaleValue, a.keepProb = keepProb, a.preTokens = preTokens, a.nextTokens = nextTokens;
  a.headNum = headNum, a.inputLayout = inputLayout, a.innerPrecise = innerPrecise, a.sparseMode = sparseMode;
  a.dqOut = dqOut, a.dkOut = dkOut, a.dvOut = dvOut, a.dpseOut = absentIfScalar(dpseOut);
  return a;
}

}  // namespace
}  // namespace gradkit::ops

using gradkit::absentIfScalar;
using gradkit::ops::common;
using gradkit::ops::FaEntry;
using gradkit::ops::FagArgs;

extern "C" aclnnStatus aclnnFlashAttentionScoreGradGetWorkspaceSize(
    const aclTensor* query, const aclTensor* keyIn, const aclTensor* value, const aclTensor* dy,
    const aclTensor* pseShiftOptional, const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional,
    const aclTensor* attenMaskOptional, const aclTensor* softmaxMaxOptional, const aclTensor* softmaxSumOptional,
    const aclTensor* softmaxInOptional, const aclTensor* attentionInOptional, const aclIntArray* prefixOptional,
    double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens, int64_t headNum, char* inputLayout,
    int64_t innerPrecise, int64_t sparseMode, const aclTensor* dqOut, const aclTensor* dkOut, const aclTensor* dvOut,
    const aclTensor* dpseOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  const FagArgs args =
      common(gradkit::ops::kGrad, FaEntry::Padded, query, keyIn, value, dy, pseShiftOptional, dropMaskOptional,
             paddingMaskOptional, attenMaskOptional, softmaxMaxOptional, softmaxSumOptional, softmaxInOptional,
             attentionInOptional, prefixOptional, scaleValue, keepProb, preTokens, nextTokens, headNum, inputLayout,
             innerPrecise, sparseMode, dqOut, dkOut, dvOut, dpseOut);
  return gradkit::getWorkspaceSize(gradkit::ops::kGradDef, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnFlashAttentionScoreGrad(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                    aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kGrad, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnFlashAttentionUnpaddingScoreGradGetWorkspaceSize(
    const aclTensor* query, const aclTensor* keyIn, const aclTensor* value, const aclTensor* dy,
    const aclTensor* pseShiftOptional, const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional,
    const aclTensor* attenMaskOptional, const aclTensor* softmaxMaxOptional, const aclTensor* softmaxSumOptional,
    const aclTensor* softmaxInOptional, const aclTensor* attentionInOptional, const aclIntArray* prefixOptional,
    const aclIntArray* actualSeqQLenOptional, const aclIntArray* actualSeqKvLenOptional, double scaleValue,
    double keepProb, int64_t preTokens, int64_t nextTokens, int64_t headNum, char* inputLayout, int64_t innerPrecise,
    int64_t sparseMode, const aclTensor* dqOut, const aclTensor* dkOut, const aclTensor* dvOut,
    const aclTensor* dpseOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  FagArgs args =
      common(gradkit::ops::kUnpad, FaEntry::VarLen, query, keyIn, value, dy, pseShiftOptional, dropMaskOptional,
             paddingMaskOptional, attenMaskOptional, softmaxMaxOptional, softmaxSumOptional, softmaxInOptional,
             attentionInOptional, prefixOptional, scaleValue, keepProb, preTokens, nextTokens, headNum, inputLayout,
             innerPrecise, sparseMode, dqOut, dkOut, dvOut, dpseOut);
  args.actualSeqQLen = actualSeqQLenOptional, args.actualSeqKvLen = actualSeqKvLenOptional;
  return gradkit::getWorkspaceSize(gradkit::ops::kUnpadDef, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnFlashAttentionUnpaddingScoreGrad(void* workspace, uint64_t workspaceSize,
                                                             aclOpExecutor* executor, aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kUnpad, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnFlashAttentionScoreGradV2GetWorkspaceSize(
    const aclTensor* query, const aclTensor* keyIn, const aclTensor* value, const aclTensor* dy,
    const aclTensor* pseShiftOptional, const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional,
    const aclTensor* attenMaskOptional, const aclTensor* softmaxMaxOptional, const aclTensor* softmaxSumOptional,
    const aclTensor* softmaxInOptional, const aclTensor* attentionInOptional, const aclIntArray* prefixOptional,
    const aclIntArray* qStartIdxOptional, const aclIntArray* kvStartIdxOptional, double scaleValue, double keepProb,
    int64_t preTokens, int64_t nextTokens, int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode,
    int64_t pseType, const aclTensor* dqOut, const aclTensor* dkOut, const aclTensor* dvOut, const aclTensor* dpseOut,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  FagArgs args =
      common(gradkit::ops::kGradV2, FaEntry::Padded, query, keyIn, value, dy, pseShiftOptional, dropMaskOptional,
             paddingMaskOptional, attenMaskOptional, softmaxMaxOptional, softmaxSumOptional, softmaxInOptional,
             attentionInOptional, prefixOptional, scaleValue, keepProb, preTokens, nextTokens, headNum, inputLayout,
             innerPrecise, sparseMode, dqOut, dkOut, dvOut, dpseOut);
  args.qStartIdx = qStartIdxOptional, args.kvStartIdx = kvStartIdxOptional, args.pseType = pseType;
  return gradkit::getWorkspaceSize(gradkit::ops::kGradV2Def, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnFlashAttentionScoreGradV2(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                      aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kGradV2, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnFlashAttentionScoreGradV3GetWorkspaceSize(
    const aclTensor* query, const aclTensor* keyIn, const aclTensor* value, const aclTensor* dy,
    const aclTensor* pseShiftOptional, const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional,
    const aclTensor* attenMaskOptional, const aclTensor* softmaxMaxOptional, const aclTensor* softmaxSumOptional,
    const aclTensor* softmaxInOptional, const aclTensor* attentionInOptional, const aclTensor* sinkInOptional,
    const aclIntArray* prefixOptional, const aclIntArray* qStartIdxOptional, const aclIntArray* kvStartIdxOptional,
    double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens, int64_t headNum, char* inputLayout,
    int64_t innerPrecise, int64_t sparseMode, int64_t pseType, const aclTensor* dqOut, const aclTensor* dkOut,
    const aclTensor* dvOut, const aclTensor* dpseOut, const aclTensor* dsinkOut, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  FagArgs args =
      common(gradkit::ops::kGradV3, FaEntry::Padded, query, keyIn, value, dy, pseShiftOptional, dropMaskOptional,
             paddingMaskOptional, attenMaskOptional, softmaxMaxOptional, softmaxSumOptional, softmaxInOptional,
             attentionInOptional, prefixOptional, scaleValue, keepProb, preTokens, nextTokens, headNum, inputLayout,
             innerPrecise, sparseMode, dqOut, dkOut, dvOut, dpseOut);
  args.qStartIdx = qStartIdxOptional, args.kvStartIdx = kvStartIdxOptional, args.pseType = pseType;
  args.sinkIn = absentIfScalar(sinkInOptional), args.dsinkOut = absentIfScalar(dsinkOut);
  return gradkit::getWorkspaceSize(gradkit::ops::kGradV3Def, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnFlashAttentionScoreGradV3(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                      aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kGradV3, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnFlashAttentionScoreGradV4GetWorkspaceSize(
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
    const aclTensor* dsinkOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  FagArgs args =
      common(gradkit::ops::kGradV4, FaEntry::Merged950, query, keyIn, value, dy, pseShiftOptional, dropMaskOptional,
             paddingMaskOptional, attenMaskOptional, softmaxMaxOptional, softmaxSumOptional, softmaxInOptional,
             attentionInOptional, prefixOptional, scaleValue, keepProb, preTokens, nextTokens, headNum, inputLayout,
             innerPrecise, sparseMode, dqOut, dkOut, dvOut, dpseOut);
  args.sinkIn = absentIfScalar(sinkInOptional), args.dsinkOut = absentIfScalar(dsinkOut);
  args.queryRope = absentIfScalar(queryRopeOptional), args.keyRope = absentIfScalar(keyRopeOptional);
  args.dqRopeOut = absentIfScalar(dqRopeOut), args.dkRopeOut = absentIfScalar(dkRopeOut);
  args.dScaleQ = absentIfScalar(dScaleQOptional), args.dScaleK = absentIfScalar(dScaleKOptional);
  args.dScaleV = absentIfScalar(dScaleVOptional), args.dScaleDy = absentIfScalar(dScaleDyOptional);
  args.dScaleO = absentIfScalar(dScaleOOptional);
  args.actualSeqQLen = actualSeqQLenOptional, args.actualSeqKvLen = actualSeqKvLenOptional;
  args.qStartIdx = qStartIdxOptional, args.kvStartIdx = kvStartIdxOptional, args.pseType = pseType;
  args.softmaxInLayout = softmaxInLayout;
  args.seed = seed, args.offset = offset, args.outDtype = outDtype;
  args.philoxDropout = true;  // keepProb < 1 without a dropMask: the Philox stream of (seed, offset), spec 3
  return gradkit::getWorkspaceSize(gradkit::ops::kGradV4Def, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnFlashAttentionScoreGradV4(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                      aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kGradV4, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV2GetWorkspaceSize(
    const aclTensor* query, const aclTensor* keyIn, const aclTensor* value, const aclTensor* dy,
    const aclTensor* pseShiftOptional, const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional,
    const aclTensor* attenMaskOptional, const aclTensor* softmaxMaxOptional, const aclTensor* softmaxSumOptional,
    const aclTensor* softmaxInOptional, const aclTensor* attentionInOptional, const aclIntArray* prefixOptional,
    const aclIntArray* actualSeqQLenOptional, const aclIntArray* actualSeqKvLenOptional,
    const aclIntArray* qStartIdxOptional, const aclIntArray* kvStartIdxOptional, double scaleValue, double keepProb,
    int64_t preTokens, int64_t nextTokens, int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode,
    int64_t pseType, const aclTensor* dqOut, const aclTensor* dkOut, const aclTensor* dvOut, const aclTensor* dpseOut,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  FagArgs args =
      common(gradkit::ops::kUnpadV2, FaEntry::VarLen, query, keyIn, value, dy, pseShiftOptional, dropMaskOptional,
             paddingMaskOptional, attenMaskOptional, softmaxMaxOptional, softmaxSumOptional, softmaxInOptional,
             attentionInOptional, prefixOptional, scaleValue, keepProb, preTokens, nextTokens, headNum, inputLayout,
             innerPrecise, sparseMode, dqOut, dkOut, dvOut, dpseOut);
  args.actualSeqQLen = actualSeqQLenOptional, args.actualSeqKvLen = actualSeqKvLenOptional;
  args.qStartIdx = qStartIdxOptional, args.kvStartIdx = kvStartIdxOptional, args.pseType = pseType;
  return gradkit::getWorkspaceSize(gradkit::ops::kUnpadV2Def, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV2(void* workspace, uint64_t workspaceSize,
                                                               aclOpExecutor* executor, aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kUnpadV2, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV3GetWorkspaceSize(
    const aclTensor* query, const aclTensor* queryRope, const aclTensor* keyIn, const aclTensor* keyInRope,
    const aclTensor* value, const aclTensor* dy, const aclTensor* pseShiftOptional, const aclTensor* dropMaskOptional,
    const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional, const aclTensor* softmaxMaxOptional,
    const aclTensor* softmaxSumOptional, const aclTensor* softmaxInOptional, const aclTensor* attentionInOptional,
    const aclIntArray* prefixOptional, const aclIntArray* actualSeqQLenOptional,
    const aclIntArray* actualSeqKvLenOptional, const aclIntArray* qStartIdxOptional,
    const aclIntArray* kvStartIdxOptional, double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens,
    int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode, int64_t pseType,
    const aclTensor* dqOut, const aclTensor* dqRopeOut, const aclTensor* dkOut, const aclTensor* dkRopeOut,
    const aclTensor* dvOut, const aclTensor* dpseOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  FagArgs args =
      common(gradkit::ops::kUnpadV3, FaEntry::VarLen, query, keyIn, value, dy, pseShiftOptional, dropMaskOptional,
             paddingMaskOptional, attenMaskOptional, softmaxMaxOptional, softmaxSumOptional, softmaxInOptional,
             attentionInOptional, prefixOptional, scaleValue, keepProb, preTokens, nextTokens, headNum, inputLayout,
             innerPrecise, sparseMode, dqOut, dkOut, dvOut, dpseOut);
  args.queryRope = absentIfScalar(queryRope), args.keyRope = absentIfScalar(keyInRope);
  args.dqRopeOut = absentIfScalar(dqRopeOut), args.dkRopeOut = absentIfScalar(dkRopeOut);
  args.actualSeqQLen = actualSeqQLenOptional, args.actualSeqKvLen = actualSeqKvLenOptional;
  args.qStartIdx = qStartIdxOptional, args.kvStartIdx = kvStartIdxOptional, args.pseType = pseType;
  return gradkit::getWorkspaceSize(gradkit::ops::kUnpadV3Def, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV3(void* workspace, uint64_t workspaceSize,
                                                               aclOpExecutor* executor, aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kUnpadV3, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV4GetWorkspaceSize(
    const aclTensor* query, const aclTensor* keyIn, const aclTensor* value, const aclTensor* dy,
    const aclTensor* pseShiftOptional, const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional,
    const aclTensor* attenMaskOptional, const aclTensor* softmaxMaxOptional, const aclTensor* softmaxSumOptional,
    const aclTensor* softmaxInOptional, const aclTensor* attentionInOptional, const aclIntArray* prefixOptional,
    const aclIntArray* actualSeqQLenOptional, const aclIntArray* actualSeqKvLenOptional, double scaleValue,
    double keepProb, int64_t preTokens, int64_t nextTokens, int64_t headNum, char* inputLayout, int64_t innerPrecise,
    int64_t sparseMode, const aclTensor* dqOut, const aclTensor* dkOut, const aclTensor* dvOut,
    const aclTensor* dpseOut, char* softmaxInLayout, uint64_t* workspaceSize, aclOpExecutor** executor) {
  FagArgs args =
      common(gradkit::ops::kUnpadV4, FaEntry::VarLen, query, keyIn, value, dy, pseShiftOptional, dropMaskOptional,
             paddingMaskOptional, attenMaskOptional, softmaxMaxOptional, softmaxSumOptional, softmaxInOptional,
             attentionInOptional, prefixOptional, scaleValue, keepProb, preTokens, nextTokens, headNum, inputLayout,
             innerPrecise, sparseMode, dqOut, dkOut, dvOut, dpseOut);
  args.actualSeqQLen = actualSeqQLenOptional, args.actualSeqKvLen = actualSeqKvLenOptional;
  args.softmaxInLayout = softmaxInLayout;
  return gradkit::getWorkspaceSize(gradkit::ops::kUnpadV4Def, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV4(void* workspace, uint64_t workspaceSize,
                                                               aclOpExecutor* executor, aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kUnpadV4, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV5GetWorkspaceSize(
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
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  FagArgs args =
      common(gradkit::ops::kUnpadV5, FaEntry::VarLen, query, keyIn, value, dy, pseShiftOptional, dropMaskOptional,
             paddingMaskOptional, attenMaskOptional, softmaxMaxOptional, softmaxSumOptional, softmaxInOptional,
             attentionInOptional, prefixOptional, scaleValue, keepProb, preTokens, nextTokens, headNum, inputLayout,
             innerPrecise, sparseMode, dqOut, dkOut, dvOut, dpseOut);
  args.queryRope = absentIfScalar(queryRope), args.keyRope = absentIfScalar(keyInRope);
  args.dqRopeOut = absentIfScalar(dqRopeOut), args.dkRopeOut = absentIfScalar(dkRopeOut);
  args.sinkIn = absentIfScalar(sinkInOptional), args.dsinkOut = absentIfScalar(dsinkOut);
  args.actualSeqQLen = actualSeqQLenOptional, args.actualSeqKvLen = actualSeqKvLenOptional;
  args.qStartIdx = qStartIdxOptional, args.kvStartIdx = kvStartIdxOptional, args.pseType = pseType;
  args.softmaxInLayout = softmaxInLayout;
  return gradkit::getWorkspaceSize(gradkit::ops::kUnpadV5Def, args, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnFlashAttentionUnpaddingScoreGradV5(void* workspace, uint64_t workspaceSize,
                                                               aclOpExecutor* executor, aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kUnpadV5, workspace, workspaceSize, executor, stream);
}
