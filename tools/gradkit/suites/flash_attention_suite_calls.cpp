#include "suites/flash_attention_suite_calls.h"

#include <memory>

#include "aclnnop/aclnn_flash_attention_score.h"
#include "aclnnop/aclnn_flash_attention_score_grad.h"
#include "harness/error.h"

namespace gradkit::cli {
namespace {

// What every entry point takes besides its tensors: arrays owned by the case, strings owned here.
struct Shared {
  std::shared_ptr<std::string> layout, statsLayout;
  aclIntArray* prefix = nullptr;
  aclIntArray* actualQ = nullptr;
  aclIntArray* actualKv = nullptr;
  aclIntArray* qStart = nullptr;
  aclIntArray* kvStart = nullptr;
};

Shared sharedArguments(OpCase& c, const FaCase& fc) {
  Shared s;
  s.layout = std::make_shared<std::string>(fc.layout);
  s.statsLayout = std::make_shared<std::string>(fc.softmaxLayout);
  if (!fc.prefix.empty()) s.prefix = c.intArray(fc.prefix);
  if (fc.tnd) {
    s.actualQ = c.intArray(fc.cumQ);
    s.actualKv = c.intArray(fc.cumKv);
  }
  if (!fc.qStartIdx.empty()) s.qStart = c.intArray(fc.qStartIdx);
  if (!fc.kvStartIdx.empty()) s.kvStart = c.intArray(fc.kvStartIdx);
  return s;
}

}  // namespace

FaEntryCall faForwardCall(OpCase& c, const FaCase& fc, const std::string& outKey, const std::string& api) {
  const Shared s = sharedArguments(c, fc);
  const std::string which = api.empty() ? fc.api : api;
  auto t = [&c, fc](const std::string& key) { return faTensor(c, fc, key); };
  auto out = [&c, fc, outKey](const std::string& key) { return faTensor(c, fc, key == "out" ? outKey : key); };
  FaEntryCall call;
  if (which == "Score") {
    call.plan = [t, out, s, fc](uint64_t* ws, aclOpExecutor** ex) {
      return aclnnFlashAttentionScoreGetWorkspaceSize(
          t("query"), t("key"), t("value"), t("pse"), t("dropMask"), nullptr, t("attenMask"), s.prefix, fc.scale,
          fc.keepProb, fc.preTokens, fc.nextTokens, fc.headNum, s.layout->data(), fc.innerPrecise, fc.sparseMode,
          out("softmaxMax"), out("softmaxSum"), nullptr, out("out"), ws, ex);
    };
    call.run = aclnnFlashAttentionScore;
  } else if (which == "ScoreV2") {
    call.plan = [t, out, s, fc](uint64_t* ws, aclOpExecutor** ex) {
      return aclnnFlashAttentionScoreV2GetWorkspaceSize(
          t("query"), t("key"), t("value"), t("pse"), t("dropMask"), nullptr, t("attenMask"), s.prefix, s.qStart,
          s.kvStart, fc.scale, fc.keepProb, fc.preTokens, fc.nextTokens, fc.headNum, s.layout->data(), fc.innerPrecise,
          fc.sparseMode, fc.pseType, out("softmaxMax"), out("softmaxSum"), nullptr, out("out"), ws, ex);
    };
    call.run = aclnnFlashAttentionScoreV2;
  } else if (which == "ScoreV4") {
    call.plan = [t, out, s, fc](uint64_t* ws, aclOpExecutor** ex) {
      return aclnnFlashAttentionScoreV4GetWorkspaceSize(
          t("query"), t("key"), t("value"), t("pse"), t("dropMask"), nullptr, t("attenMask"), nullptr, nullptr, nullptr,
          nullptr, nullptr, nullptr, s.prefix, s.actualQ, s.actualKv, s.qStart, s.kvStart, fc.scale, fc.keepProb,
          fc.preTokens, fc.nextTokens, fc.headNum, s.layout->data(), fc.innerPrecise, fc.sparseMode, 0, fc.pseType,
          s.statsLayout->data(), fc.dropSeed, fc.dropOffset, out("softmaxMax"), out("softmaxSum"), nullptr, out("out"),
          ws, ex);
    };
    call.run = aclnnFlashAttentionScoreV4;
  } else if (which == "VarLenScore") {
    call.plan = [t, out, s, fc](uint64_t* ws, aclOpExecutor** ex) {
      return aclnnFlashAttentionVarLenScoreGetWorkspaceSize(
          t("query"), t("key"), t("value"), t("pse"), t("dropMask"), nullptr, t("attenMask"), s.prefix, s.actualQ,
          s.actualKv, fc.scale, fc.keepProb, fc.preTokens, fc.nextTokens, fc.headNum, s.layout->data(), fc.innerPrecise,
          fc.sparseMode, out("softmaxMax"), out("softmaxSum"), nullptr, out("out"), ws, ex);
    };
    call.run = aclnnFlashAttentionVarLenScore;
  } else if (which == "VarLenScoreV2") {
    call.plan = [t, out, s, fc](uint64_t* ws, aclOpExecutor** ex) {
      return aclnnFlashAttentionVarLenScoreV2GetWorkspaceSize(
          t("query"), t("key"), t("value"), t("pse"), t("dropMask"), nullptr, t("attenMask"), s.prefix, s.actualQ,
          s.actualKv, s.qStart, s.kvStart, fc.scale, fc.keepProb, fc.preTokens, fc.nextTokens, fc.headNum,
          s.layout->data(), fc.innerPrecise, fc.sparseMode, fc.pseType, out("softmaxMax"), out("softmaxSum"), nullptr,
          out("out"), ws, ex);
    };
    call.run = aclnnFlashAttentionVarLenScoreV2;
  } else if (which == "VarLenScoreV4") {
    call.plan = [t, out, s, fc](uint64_t* ws, aclOpExecutor** ex) {
      return aclnnFlashAttentionVarLenScoreV4GetWorkspaceSize(
          t("query"), t("key"), t("value"), t("pse"), t("dropMask"), nullptr, t("attenMask"), s.prefix, s.actualQ,
          s.actualKv, fc.scale, fc.keepProb, fc.preTokens, fc.nextTokens, fc.headNum, s.layout->data(), fc.innerPrecise,
          fc.sparseMode, s.statsLayout->data(), out("softmaxMax"), out("softmaxSum"), nullptr, out("out"), ws, ex);
    };
    call.run = aclnnFlashAttentionVarLenScoreV4;
  } else {
    throw HarnessError("'api': unknown forward entry point \"" + which + "\"");
  }
  return call;
}

FaEntryCall faBackwardCall(OpCase& c, const FaCase& fc) {
  const Shared s = sharedArguments(c, fc);
  auto t = [&c, fc](const std::string& key) { return faTensor(c, fc, key); };
  FaEntryCall call;
  if (fc.api == "Grad") {
    call.plan = [t, s, fc](uint64_t* ws, aclOpExecutor** ex) {
      return aclnnFlashAttentionScoreGradGetWorkspaceSize(
          t("query"), t("key"), t("value"), t("dy"), t("pse"), t("dropMask"), nullptr, t("attenMask"), t("softmaxMax"),
          t("softmaxSum"), nullptr, t("attentionIn"), s.prefix, fc.scale, fc.keepProb, fc.preTokens, fc.nextTokens,
          fc.headNum, s.layout->data(), fc.innerPrecise, fc.sparseMode, t("dq"), t("dk"), t("dv"), nullptr, ws, ex);
    };
    call.run = aclnnFlashAttentionScoreGrad;
  } else if (fc.api == "GradV2") {
    call.plan = [t, s, fc](uint64_t* ws, aclOpExecutor** ex) {
      return aclnnFlashAttentionScoreGradV2GetWorkspaceSize(
          t("query"), t("key"), t("value"), t("dy"), t("pse"), t("dropMask"), nullptr, t("attenMask"), t("softmaxMax"),
          t("softmaxSum"), nullptr, t("attentionIn"), s.prefix, s.qStart, s.kvStart, fc.scale, fc.keepProb,
          fc.preTokens, fc.nextTokens, fc.headNum, s.layout->data(), fc.innerPrecise, fc.sparseMode, fc.pseType,
          t("dq"), t("dk"), t("dv"), nullptr, ws, ex);
    };
    call.run = aclnnFlashAttentionScoreGradV2;
  } else if (fc.api == "GradV4") {
    // outDtype: FP8 outputs FLOAT16 (0) or BFLOAT16 (1); the other dtypes ignore it.
    const int64_t outDtype = fc.fp8 && fc.outDtype == ACL_BF16 ? 1 : 0;
    call.plan = [t, s, fc, outDtype](uint64_t* ws, aclOpExecutor** ex) {
      return aclnnFlashAttentionScoreGradV4GetWorkspaceSize(
          t("query"), t("key"), t("value"), t("dy"), t("pse"), t("dropMask"), nullptr, t("attenMask"), t("softmaxMax"),
          t("softmaxSum"), nullptr, t("attentionIn"), nullptr, nullptr, nullptr, t("dScaleQ"), t("dScaleK"),
          t("dScaleV"), t("dScaleDy"), t("dScaleO"), s.prefix, s.actualQ, s.actualKv, s.qStart, s.kvStart, fc.scale,
          fc.keepProb, fc.preTokens, fc.nextTokens, fc.headNum, s.layout->data(), s.statsLayout->data(),
          fc.innerPrecise, fc.sparseMode, fc.pseType, fc.dropSeed, fc.dropOffset, outDtype, t("dq"), t("dk"), t("dv"),
          nullptr, nullptr, nullptr, nullptr, ws, ex);
    };
    call.run = aclnnFlashAttentionScoreGradV4;
  } else if (fc.api == "Unpadding") {
    call.plan = [t, s, fc](uint64_t* ws, aclOpExecutor** ex) {
      return aclnnFlashAttentionUnpaddingScoreGradGetWorkspaceSize(
          t("query"), t("key"), t("value"), t("dy"), t("pse"), t("dropMask"), nullptr, t("attenMask"), t("softmaxMax"),
          t("softmaxSum"), nullptr, t("attentionIn"), s.prefix, s.actualQ, s.actualKv, fc.scale, fc.keepProb,
          fc.preTokens, fc.nextTokens, fc.headNum, s.layout->data(), fc.innerPrecise, fc.sparseMode, t("dq"), t("dk"),
          t("dv"), nullptr, ws, ex);
    };
    call.run = aclnnFlashAttentionUnpaddingScoreGrad;
  } else if (fc.api == "UnpaddingV2") {
    call.plan = [t, s, fc](uint64_t* ws, aclOpExecutor** ex) {
      return aclnnFlashAttentionUnpaddingScoreGradV2GetWorkspaceSize(
          t("query"), t("key"), t("value"), t("dy"), t("pse"), t("dropMask"), nullptr, t("attenMask"), t("softmaxMax"),
          t("softmaxSum"), nullptr, t("attentionIn"), s.prefix, s.actualQ, s.actualKv, s.qStart, s.kvStart, fc.scale,
          fc.keepProb, fc.preTokens, fc.nextTokens, fc.headNum, s.layout->data(), fc.innerPrecise, fc.sparseMode,
          fc.pseType, t("dq"), t("dk"), t("dv"), nullptr, ws, ex);
    };
    call.run = aclnnFlashAttentionUnpaddingScoreGradV2;
  } else if (fc.api == "UnpaddingV4") {
    call.plan = [t, s, fc](uint64_t* ws, aclOpExecutor** ex) {
      return aclnnFlashAttentionUnpaddingScoreGradV4GetWorkspaceSize(
          t("query"), t("key"), t("value"), t("dy"), t("pse"), t("dropMask"), nullptr, t("attenMask"), t("softmaxMax"),
          t("softmaxSum"), nullptr, t("attentionIn"), s.prefix, s.actualQ, s.actualKv, fc.scale, fc.keepProb,
          fc.preTokens, fc.nextTokens, fc.headNum, s.layout->data(), fc.innerPrecise, fc.sparseMode, t("dq"), t("dk"),
          t("dv"), nullptr, s.statsLayout->data(), ws, ex);
    };
    call.run = aclnnFlashAttentionUnpaddingScoreGradV4;
  } else {
    throw HarnessError("'api': unknown backward entry point \"" + fc.api + "\"");
  }
  return call;
}

std::string faForwardApiFor(const std::string& backwardApi) {
  if (backwardApi == "Grad") return "Score";
  if (backwardApi == "GradV2") return "ScoreV2";
  if (backwardApi == "GradV4") return "ScoreV4";
  if (backwardApi == "Unpadding") return "VarLenScore";
  if (backwardApi == "UnpaddingV2") return "VarLenScoreV2";
  if (backwardApi == "UnpaddingV4") return "VarLenScoreV4";
  throw HarnessError("'api': no forward entry point for \"" + backwardApi + "\"");
}

}  // namespace gradkit::cli
