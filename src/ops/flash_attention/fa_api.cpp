// The aclnn entry points of the flash attention forward: each version fills FaArgs with what it has (the IR defaults
// of spec fag.md 2.2 for the rest) and names itself, so messages and executors carry the entry point the caller used.
#include <cstdint>

#include "aclnnop/aclnn_flash_attention_score.h"
#include "base/error.h"
#include "opapi/check.h"
#include "opapi/op_definition.h"
#include "opapi/tensor_rules.h"
#include "ops/flash_attention/fa_check.h"
#include "ops/flash_attention/fa_check_common.h"
#include "ops/flash_attention/fa_plan.h"

namespace gradkit::ops {
namespace {

constexpr const char kScore[] = "aclnnFlashAttentionScore";
constexpr const char kScoreV2[] = "aclnnFlashAttentionScoreV2";
constexpr const char kScoreV3[] = "aclnnFlashAttentionScoreV3";
constexpr const char kScoreV4[] = "aclnnFlashAttentionScoreV4";
constexpr const char kVarLen[] = "aclnnFlashAttentionVarLenScore";
constexpr const char kVarLenV2[] = "aclnnFlashAttentionVarLenScoreV2";
constexpr const char kVarLenV3[] = "aclnnFlashAttentionVarLenScoreV3";
constexpr const char kVarLenV4[] = "aclnnFlashAttentionVarLenScoreV4";
constexpr const char kVarLenV5[] = "aclnnFlashAttentionVarLenScoreV5";

// A forward call plus the arguments FaArgs has no field for (the sink, the FP8 scales and outDtype): gradkit does
// not support them yet, so they are checked here and never reach the plan.
struct FaForwardCall {
  FaArgs args;
  const aclTensor* sink = nullptr;
  const aclTensor* dScaleQ = nullptr;
  const aclTensor* dScaleK = nullptr;
  const aclTensor* dScaleV = nullptr;
  int64_t outDtype = 0;
};

bool hasElements(const aclTensor* t) { return t != nullptr && !t->isEmpty(); }

aclnnStatus checkCall(const FaForwardCall& call, const uint64_t* workspaceSize, aclOpExecutor* const* executor) {
  GRADKIT_RETURN_IF_ERROR(checkFlashAttention(call.args, workspaceSize, executor));
  const char* api = call.args.api;
  if (hasElements(call.sink)) return rejectFaNotSupported(api, "sinkOptional", *call.sink, "the attention sink");
  const NamedTensor scales[] = {
      {"dScaleQOptional", call.dScaleQ}, {"dScaleKOptional", call.dScaleK}, {"dScaleVOptional", call.dScaleV}};
  for (const NamedTensor& t : scales) {
    if (hasElements(t.tensor)) return rejectFaNotSupported(api, t.name, *t.tensor, "FP8 (block de-quant scales)");
  }
  if (call.outDtype != 0 && call.outDtype != 1) {
    return fail(ACLNN_ERR_PARAM_INVALID, api, "outDtype", "0 (FLOAT16) or 1 (BFLOAT16)", std::to_string(call.outDtype));
  }
  return ACLNN_SUCCESS;
}

bool nothingToCompute(const FaForwardCall& call) { return flashAttentionNothingToCompute(call.args); }

FaPlan plan(const FaForwardCall& call) { return planFlashAttention(call.args); }

using FaDefinition = OpDefinition<FaForwardCall, FaPlan>;
const FaDefinition kScoreDef{kScore, checkCall, nothingToCompute, plan};
const FaDefinition kScoreV2Def{kScoreV2, checkCall, nothingToCompute, plan};
const FaDefinition kScoreV3Def{kScoreV3, checkCall, nothingToCompute, plan};
const FaDefinition kScoreV4Def{kScoreV4, checkCall, nothingToCompute, plan};
const FaDefinition kVarLenDef{kVarLen, checkCall, nothingToCompute, plan};
const FaDefinition kVarLenV2Def{kVarLenV2, checkCall, nothingToCompute, plan};
const FaDefinition kVarLenV3Def{kVarLenV3, checkCall, nothingToCompute, plan};
const FaDefinition kVarLenV4Def{kVarLenV4, checkCall, nothingToCompute, plan};
const FaDefinition kVarLenV5Def{kVarLenV5, checkCall, nothingToCompute, plan};

// The arguments every version has, in upstream's order; the version adds the rest.
FaForwardCall common(const char* api, FaEntry entry, const aclTensor* query, const aclTensor* key,
                     const aclTensor* value, const aclTensor* realShift, const aclTensor* dropMask,
                     const aclTensor* paddingMask, const aclTensor* attenMask, const aclIntArray* prefix,
                     double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens, int64_t headNum,
                     const char* inputLayout, int64_t innerPrecise, int64_t sparseMode, const aclTensor* softmaxMaxOut,
                     const aclTensor* softmaxSumOut, const aclTensor* softmaxOutOut, const aclTensor* attentionOutOut) {
  FaForwardCall call;
  FaArgs& a = call.args;
  a.api = api;
  a.entry = entry;
  a.query = query, a.key = key, a.value = value;
  a.realShift = absentIfScalar(realShift), a.dropMask = absentIfScalar(dropMask),
  a.paddingMask = absentIfScalar(paddingMask);
  a.attenMask = absentIfScalar(attenMask);
  a.prefix = prefix;
  a.scaleValue = scaleValue, a.keepProb = keepProb, a.preTokens = preTokens, a.nextTokens = nextTokens;
  a.headNum = headNum, a.inputLayout = inputLayout, a.innerPrecise = innerPrecise, a.sparseMode = sparseMode;
  a.softmaxMaxOut = softmaxMaxOut, a.softmaxSumOut = softmaxSumOut, a.softmaxOutOut = absentIfScalar(softmaxOutOut);
  a.attentionOutOut = attentionOutOut;
  return call;
}

}  // namespace
}  // namespace gradkit::ops

using gradkit::absentIfScalar;
using gradkit::ops::common;
using gradkit::ops::FaEntry;
using gradkit::ops::FaForwardCall;

extern "C" aclnnStatus aclnnFlashAttentionScoreGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* realShiftOptional,
    const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional,
    const aclIntArray* prefixOptional, double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens,
    int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode, const aclTensor* softmaxMaxOut,
    const aclTensor* softmaxSumOut, const aclTensor* softmaxOutOut, const aclTensor* attentionOutOut,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  const FaForwardCall call = common(gradkit::ops::kScore, FaEntry::Padded, query, key, value, realShiftOptional,
                                    dropMaskOptional, paddingMaskOptional, attenMaskOptional, prefixOptional,
                                    scaleValue, keepProb, preTokens, nextTokens, headNum, inputLayout, innerPrecise,
                                    sparseMode, softmaxMaxOut, softmaxSumOut, softmaxOutOut, attentionOutOut);
  return gradkit::getWorkspaceSize(gradkit::ops::kScoreDef, call, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnFlashAttentionScore(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kScore, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnFlashAttentionVarLenScoreGetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* realShiftOptional,
    const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional,
    const aclIntArray* prefixOptional, const aclIntArray* actualSeqQLenOptional,
    const aclIntArray* actualSeqKvLenOptional, double scaleValue, double keepProb, int64_t preTokens,
    int64_t nextTokens, int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode,
    const aclTensor* softmaxMaxOut, const aclTensor* softmaxSumOut, const aclTensor* softmaxOutOut,
    const aclTensor* attentionOutOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  FaForwardCall call = common(gradkit::ops::kVarLen, FaEntry::VarLen, query, key, value, realShiftOptional,
                              dropMaskOptional, paddingMaskOptional, attenMaskOptional, prefixOptional, scaleValue,
                              keepProb, preTokens, nextTokens, headNum, inputLayout, innerPrecise, sparseMode,
                              softmaxMaxOut, softmaxSumOut, softmaxOutOut, attentionOutOut);
  call.args.actualSeqQLen = actualSeqQLenOptional, call.args.actualSeqKvLen = actualSeqKvLenOptional;
  return gradkit::getWorkspaceSize(gradkit::ops::kVarLenDef, call, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnFlashAttentionVarLenScore(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                      aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kVarLen, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnFlashAttentionScoreV2GetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* realShiftOptional,
    const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional,
    const aclIntArray* prefixOptional, const aclIntArray* qStartIdxOptional, const aclIntArray* kvStartIdxOptional,
    double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens, int64_t headNum, char* inputLayout,
    int64_t innerPrecise, int64_t sparseMode, int64_t pseType, const aclTensor* softmaxMaxOut,
    const aclTensor* softmaxSumOut, const aclTensor* softmaxOutOut, const aclTensor* attentionOutOut,
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  FaForwardCall call = common(gradkit::ops::kScoreV2, FaEntry::Padded, query, key, value, realShiftOptional,
                              dropMaskOptional, paddingMaskOptional, attenMaskOptional, prefixOptional, scaleValue,
                              keepProb, preTokens, nextTokens, headNum, inputLayout, innerPrecise, sparseMode,
                              softmaxMaxOut, softmaxSumOut, softmaxOutOut, attentionOutOut);
  call.args.qStartIdx = qStartIdxOptional, call.args.kvStartIdx = kvStartIdxOptional, call.args.pseType = pseType;
  return gradkit::getWorkspaceSize(gradkit::ops::kScoreV2Def, call, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnFlashAttentionScoreV2(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                  aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kScoreV2, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnFlashAttentionScoreV3GetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* realShiftOptional,
    const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional,
    const aclTensor* sinkOptional, const aclIntArray* prefixOptional, const aclIntArray* qStartIdxOptional,
    const aclIntArray* kvStartIdxOptional, double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens,
    int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode, int64_t pseType,
    const aclTensor* softmaxMaxOut, const aclTensor* softmaxSumOut, const aclTensor* softmaxOutOut,
    const aclTensor* attentionOutOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  FaForwardCall call = common(gradkit::ops::kScoreV3, FaEntry::Padded, query, key, value, realShiftOptional,
                              dropMaskOptional, paddingMaskOptional, attenMaskOptional, prefixOptional, scaleValue,
                              keepProb, preTokens, nextTokens, headNum, inputLayout, innerPrecise, sparseMode,
                              softmaxMaxOut, softmaxSumOut, softmaxOutOut, attentionOutOut);
  call.args.qStartIdx = qStartIdxOptional, call.args.kvStartIdx = kvStartIdxOptional, call.args.pseType = pseType;
  call.sink = absentIfScalar(sinkOptional);
  return gradkit::getWorkspaceSize(gradkit::ops::kScoreV3Def, call, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnFlashAttentionScoreV3(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                  aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kScoreV3, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnFlashAttentionScoreV4GetWorkspaceSize(
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
    uint64_t* workspaceSize, aclOpExecutor** executor) {
  FaForwardCall call = common(gradkit::ops::kScoreV4, FaEntry::Merged950, query, key, value, realShiftOptional,
                              dropMaskOptional, paddingMaskOptional, attenMaskOptional, prefixOptional, scaleValue,
                              keepProb, preTokens, nextTokens, headNum, inputLayout, innerPrecise, sparseMode,
                              softmaxMaxOut, softmaxSumOut, softmaxOutOut, attentionOutOut);
  gradkit::ops::FaArgs& a = call.args;
  a.queryRope = absentIfScalar(queryRopeOptional), a.keyRope = absentIfScalar(keyRopeOptional);
  a.actualSeqQLen = actualSeqQLenOptional, a.actualSeqKvLen = actualSeqKvLenOptional;
  a.qStartIdx = qStartIdxOptional, a.kvStartIdx = kvStartIdxOptional, a.pseType = pseType;
  a.softmaxOutLayout = softmaxOutLayout;
  a.philoxDropout = true, a.seed = seed, a.offset = offset;  // keepProb < 1 without a dropMask: the Philox stream
  call.sink = absentIfScalar(sinkOptional);
  call.dScaleQ = absentIfScalar(dScaleQOptional), call.dScaleK = absentIfScalar(dScaleKOptional);
  call.dScaleV = absentIfScalar(dScaleVOptional), call.outDtype = outDtype;
  return gradkit::getWorkspaceSize(gradkit::ops::kScoreV4Def, call, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnFlashAttentionScoreV4(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                                  aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kScoreV4, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnFlashAttentionVarLenScoreV2GetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* realShiftOptional,
    const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional,
    const aclIntArray* prefixOptional, const aclIntArray* actualSeqQLenOptional,
    const aclIntArray* actualSeqKvLenOptional, const aclIntArray* qStartIdxOptional,
    const aclIntArray* kvStartIdxOptional, double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens,
    int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode, int64_t pseType,
    const aclTensor* softmaxMaxOut, const aclTensor* softmaxSumOut, const aclTensor* softmaxOutOut,
    const aclTensor* attentionOutOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  FaForwardCall call = common(gradkit::ops::kVarLenV2, FaEntry::VarLen, query, key, value, realShiftOptional,
                              dropMaskOptional, paddingMaskOptional, attenMaskOptional, prefixOptional, scaleValue,
                              keepProb, preTokens, nextTokens, headNum, inputLayout, innerPrecise, sparseMode,
                              softmaxMaxOut, softmaxSumOut, softmaxOutOut, attentionOutOut);
  gradkit::ops::FaArgs& a = call.args;
  a.actualSeqQLen = actualSeqQLenOptional, a.actualSeqKvLen = actualSeqKvLenOptional;
  a.qStartIdx = qStartIdxOptional, a.kvStartIdx = kvStartIdxOptional, a.pseType = pseType;
  return gradkit::getWorkspaceSize(gradkit::ops::kVarLenV2Def, call, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnFlashAttentionVarLenScoreV2(void* workspace, uint64_t workspaceSize,
                                                        aclOpExecutor* executor, aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kVarLenV2, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnFlashAttentionVarLenScoreV3GetWorkspaceSize(
    const aclTensor* query, const aclTensor* queryRope, const aclTensor* key, const aclTensor* keyRope,
    const aclTensor* value, const aclTensor* realShiftOptional, const aclTensor* dropMaskOptional,
    const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional, const aclIntArray* prefixOptional,
    const aclIntArray* actualSeqQLenOptional, const aclIntArray* actualSeqKvLenOptional,
    const aclIntArray* qStartIdxOptional, const aclIntArray* kvStartIdxOptional, double scaleValue, double keepProb,
    int64_t preTokens, int64_t nextTokens, int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode,
    int64_t pseType, const aclTensor* softmaxMaxOut, const aclTensor* softmaxSumOut, const aclTensor* softmaxOutOut,
    const aclTensor* attentionOutOut, uint64_t* workspaceSize, aclOpExecutor** executor) {
  FaForwardCall call = common(gradkit::ops::kVarLenV3, FaEntry::VarLen, query, key, value, realShiftOptional,
                              dropMaskOptional, paddingMaskOptional, attenMaskOptional, prefixOptional, scaleValue,
                              keepProb, preTokens, nextTokens, headNum, inputLayout, innerPrecise, sparseMode,
                              softmaxMaxOut, softmaxSumOut, softmaxOutOut, attentionOutOut);
  gradkit::ops::FaArgs& a = call.args;
  a.queryRope = absentIfScalar(queryRope), a.keyRope = absentIfScalar(keyRope);
  a.actualSeqQLen = actualSeqQLenOptional, a.actualSeqKvLen = actualSeqKvLenOptional;
  a.qStartIdx = qStartIdxOptional, a.kvStartIdx = kvStartIdxOptional, a.pseType = pseType;
  return gradkit::getWorkspaceSize(gradkit::ops::kVarLenV3Def, call, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnFlashAttentionVarLenScoreV3(void* workspace, uint64_t workspaceSize,
                                                        aclOpExecutor* executor, aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kVarLenV3, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnFlashAttentionVarLenScoreV4GetWorkspaceSize(
    const aclTensor* query, const aclTensor* key, const aclTensor* value, const aclTensor* realShiftOptional,
    const aclTensor* dropMaskOptional, const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional,
    const aclIntArray* prefixOptional, const aclIntArray* actualSeqQLenOptional,
    const aclIntArray* actualSeqKvLenOptional, double scaleValue, double keepProb, int64_t preTokens,
    int64_t nextTokens, int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode,
    char* softmaxOutLayout, const aclTensor* softmaxMaxOut, const aclTensor* softmaxSumOut,
    const aclTensor* softmaxOutOut, const aclTensor* attentionOutOut, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  FaForwardCall call = common(gradkit::ops::kVarLenV4, FaEntry::VarLen, query, key, value, realShiftOptional,
                              dropMaskOptional, paddingMaskOptional, attenMaskOptional, prefixOptional, scaleValue,
                              keepProb, preTokens, nextTokens, headNum, inputLayout, innerPrecise, sparseMode,
                              softmaxMaxOut, softmaxSumOut, softmaxOutOut, attentionOutOut);
  gradkit::ops::FaArgs& a = call.args;
  a.actualSeqQLen = actualSeqQLenOptional, a.actualSeqKvLen = actualSeqKvLenOptional;
  a.softmaxOutLayout = softmaxOutLayout;
  return gradkit::getWorkspaceSize(gradkit::ops::kVarLenV4Def, call, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnFlashAttentionVarLenScoreV4(void* workspace, uint64_t workspaceSize,
                                                        aclOpExecutor* executor, aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kVarLenV4, workspace, workspaceSize, executor, stream);
}

extern "C" aclnnStatus aclnnFlashAttentionVarLenScoreV5GetWorkspaceSize(
    const aclTensor* query, const aclTensor* queryRope, const aclTensor* key, const aclTensor* keyRope,
    const aclTensor* value, const aclTensor* realShiftOptional, const aclTensor* dropMaskOptional,
    const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional, const aclTensor* sinkOptional,
    const aclIntArray* prefixOptional, const aclIntArray* actualSeqQLenOptional,
    const aclIntArray* actualSeqKvLenOptional, const aclIntArray* qStartIdxOptional,
    const aclIntArray* kvStartIdxOptional, double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens,
    int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode, int64_t pseType,
    char* softmaxOutLayout, const aclTensor* softmaxMaxOut, const aclTensor* softmaxSumOut,
    const aclTensor* softmaxOutOut, const aclTensor* attentionOutOut, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  FaForwardCall call = common(gradkit::ops::kVarLenV5, FaEntry::VarLen, query, key, value, realShiftOptional,
                              dropMaskOptional, paddingMaskOptional, attenMaskOptional, prefixOptional, scaleValue,
                              keepProb, preTokens, nextTokens, headNum, inputLayout, innerPrecise, sparseMode,
                              softmaxMaxOut, softmaxSumOut, softmaxOutOut, attentionOutOut);
  gradkit::ops::FaArgs& a = call.args;
  a.queryRope = absentIfScalar(queryRope), a.keyRope = absentIfScalar(keyRope);
  a.actualSeqQLen = actualSeqQLenOptional, a.actualSeqKvLen = actualSeqKvLenOptional;
  a.qStartIdx = qStartIdxOptional, a.kvStartIdx = kvStartIdxOptional, a.pseType = pseType;
  a.softmaxOutLayout = softmaxOutLayout;
  call.sink = absentIfScalar(sinkOptional);
  return gradkit::getWorkspaceSize(gradkit::ops::kVarLenV5Def, call, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnFlashAttentionVarLenScoreV5GetMaxWorkspaceSize(
    const aclTensor* query, const aclTensor* queryRope, const aclTensor* key, const aclTensor* keyRope,
    const aclTensor* value, const aclTensor* realShiftOptional, const aclTensor* dropMaskOptional,
    const aclTensor* paddingMaskOptional, const aclTensor* attenMaskOptional, const aclTensor* sinkOptional,
    const aclIntArray* prefixOptional, const aclIntArray* actualSeqQLenOptional,
    const aclIntArray* actualSeqKvLenOptional, const aclIntArray* qStartIdxOptional,
    const aclIntArray* kvStartIdxOptional, double scaleValue, double keepProb, int64_t preTokens, int64_t nextTokens,
    int64_t headNum, char* inputLayout, int64_t innerPrecise, int64_t sparseMode, int64_t pseType,
    char* softmaxOutLayout, const aclTensor* softmaxMaxOut, const aclTensor* softmaxSumOut,
    const aclTensor* softmaxOutOut, const aclTensor* attentionOutOut, uint64_t* workspaceSize,
    aclOpExecutor** executor) {
  return aclnnFlashAttentionVarLenScoreV5GetWorkspaceSize(
      query, queryRope, key, keyRope, value, realShiftOptional, dropMaskOptional, paddingMaskOptional,
      attenMaskOptional, sinkOptional, prefixOptional, actualSeqQLenOptional, actualSeqKvLenOptional, qStartIdxOptional,
      kvStartIdxOptional, scaleValue, keepProb, preTokens, nextTokens, headNum, inputLayout, innerPrecise, sparseMode,
      pseType, softmaxOutLayout, softmaxMaxOut, softmaxSumOut, softmaxOutOut, attentionOutOut, workspaceSize, executor);
}

extern "C" aclnnStatus aclnnFlashAttentionVarLenScoreV5(void* workspace, uint64_t workspaceSize,
                                                        aclOpExecutor* executor, aclrtStream stream) {
  return gradkit::launch(gradkit::ops::kVarLenV5, workspace, workspaceSize, executor, stream);
}
