// The flash attention entry points as the suites call them (spec fag.md 2.2): the case's "api" picks the
// GetWorkspaceSize and the second phase of one upstream version, given the case's tensors (nullptr where the case
// leaves one out; the V4 ones take the rope tensors of a case with D_rope), arrays and attributes in that version's
// order.
#include <memory>

#include "aclnnop/aclnn_flash_attention_score.h"
#include "aclnnop/aclnn_flash_attention_score_grad.h"
#include "harness/error.h"
#include "harness/two_phase.h"
#include "suites/flash_attention_suite.h"

namespace gradkit::cli {
namespace {

// What every entry point takes besides the direction's own tensors, resolved once.
struct Common {
  aclTensor *q{}, *k{}, *v{}, *pse{}, *drop{}, *mask{}, *qRope{}, *kRope{}, *max{}, *sum{};
  aclIntArray *prefix{}, *seqQ{}, *seqKv{}, *qStart{}, *kvStart{};
  std::shared_ptr<std::string> layout, statsLayout;  // the char* arguments
  double scale{}, keep{};
  int64_t pre{}, next{}, heads{}, precise{}, mode{}, pseType{}, seed{}, offset{};
};

Common commonOf(OpCase& c, const FaCase& fc) {
  const auto t = [&](const char* key) { return faTensor(c, fc, key); };
  const auto array = [&c](const std::vector<int64_t>& values, bool passed) {
    return passed ? c.intArray(values) : nullptr;
  };
  return {t("query"),
          t("key"),
          t("value"),
          t("pse"),
          t("dropMask"),
          t("attenMask"),
          t("queryRope"),
          t("keyRope"),
          t("softmaxMax"),
          t("softmaxSum"),
          array(fc.prefix, !fc.prefix.empty()),
          array(fc.cumQ, fc.tnd()),
          array(fc.cumKv, fc.tnd()),
          array(fc.qStartIdx, !fc.qStartIdx.empty()),
          array(fc.kvStartIdx, !fc.kvStartIdx.empty()),
          std::make_shared<std::string>(fc.layoutName),
          std::make_shared<std::string>(fc.softmaxLayout),
          fc.scale,
          fc.keepProb,
          fc.preTokens,
          fc.nextTokens,
          fc.headNum,
          fc.innerPrecise,
          fc.sparseMode,
          fc.pseType,
          fc.dropSeed,
          fc.dropOffset};
}

// The forward entry point of the family of a backward one ("GradV2" -> "ScoreV2").
std::string forwardApiFor(const std::string& backwardApi) {
  for (const auto& [grad, score] : {std::pair<const char*, const char*>{"Grad", "Score"},
                                    {"GradV2", "ScoreV2"},
                                    {"GradV4", "ScoreV4"},
                                    {"Unpadding", "VarLenScore"},
                                    {"UnpaddingV2", "VarLenScoreV2"},
                                    {"UnpaddingV4", "VarLenScoreV4"}}) {
    if (backwardApi == grad) return score;
  }
  throw HarnessError("'api': no forward entry point for \"" + backwardApi + "\"");
}

}  // namespace

FaEntryCall faForwardCall(OpCase& c, const FaCase& fc, const std::string& outKey, const std::string& api) {
  const Common a = commonOf(c, fc);
  aclTensor* const out = faTensor(c, fc, outKey);
  const std::string which = api.empty() ? fc.api : api;
  if (which == "Score") {
    return {[a, out](uint64_t* ws, aclOpExecutor** ex) {
              return aclnnFlashAttentionScoreGetWorkspaceSize(a.q, a.k, a.v, a.pse, a.drop, nullptr, a.mask, a.prefix,
                                                              a.scale, a.keep, a.pre, a.next, a.heads, a.layout->data(),
                                                              a.precise, a.mode, a.max, a.sum, nullptr, out, ws, ex);
            },
            aclnnFlashAttentionScore};
  }
  if (which == "ScoreV2") {
    return {[a, out](uint64_t* ws, aclOpExecutor** ex) {
              return aclnnFlashAttentionScoreV2GetWorkspaceSize(
                  a.q, a.k, a.v, a.pse, a.drop, nullptr, a.mask, a.prefix, a.qStart, a.kvStart, a.scale, a.keep, a.pre,
                  a.next, a.heads, a.layout->data(), a.precise, a.mode, a.pseType, a.max, a.sum, nullptr, out, ws, ex);
            },
            aclnnFlashAttentionScoreV2};
  }
  if (which == "ScoreV4") {
    return {[a, out](uint64_t* ws, aclOpExecutor** ex) {
              return aclnnFlashAttentionScoreV4GetWorkspaceSize(
                  a.q, a.k, a.v, a.pse, a.drop, nullptr, a.mask, a.qRope, a.kRope, nullptr, nullptr, nullptr, nullptr,
                  a.prefix, a.seqQ, a.seqKv, a.qStart, a.kvStart, a.scale, a.keep, a.pre, a.next, a.heads,
                  a.layout->data(), a.precise, a.mode, 0, a.pseType, a.statsLayout->data(), a.seed, a.offset, a.max,
                  a.sum, nullptr, out, ws, ex);
            },
            aclnnFlashAttentionScoreV4};
  }
  if (which == "VarLenScore") {
    return {[a, out](uint64_t* ws, aclOpExecutor** ex) {
              return aclnnFlashAttentionVarLenScoreGetWorkspaceSize(
                  a.q, a.k, a.v, a.pse, a.drop, nullptr, a.mask, a.prefix, a.seqQ, a.seqKv, a.scale, a.keep, a.pre,
                  a.next, a.heads, a.layout->data(), a.precise, a.mode, a.max, a.sum, nullptr, out, ws, ex);
            },
            aclnnFlashAttentionVarLenScore};
  }
  if (which == "VarLenScoreV2") {
    return {[a, out](uint64_t* ws, aclOpExecutor** ex) {
              return aclnnFlashAttentionVarLenScoreV2GetWorkspaceSize(
                  a.q, a.k, a.v, a.pse, a.drop, nullptr, a.mask, a.prefix, a.seqQ, a.seqKv, a.qStart, a.kvStart,
                  a.scale, a.keep, a.pre, a.next, a.heads, a.layout->data(), a.precise, a.mode, a.pseType, a.max, a.sum,
                  nullptr, out, ws, ex);
            },
            aclnnFlashAttentionVarLenScoreV2};
  }
  if (which == "VarLenScoreV4") {
    return {[a, out](uint64_t* ws, aclOpExecutor** ex) {
              return aclnnFlashAttentionVarLenScoreV4GetWorkspaceSize(
                  a.q, a.k, a.v, a.pse, a.drop, nullptr, a.mask, a.prefix, a.seqQ, a.seqKv, a.scale, a.keep, a.pre,
                  a.next, a.heads, a.layout->data(), a.precise, a.mode, a.statsLayout->data(), a.max, a.sum, nullptr,
                  out, ws, ex);
            },
            aclnnFlashAttentionVarLenScoreV4};
  }
  throw HarnessError("'api': unknown forward entry point \"" + which + "\"");
}

FaEntryCall faBackwardCall(OpCase& c, const FaCase& fc) {
  const Common a = commonOf(c, fc);
  const auto t = [&](const char* key) { return faTensor(c, fc, key); };
  aclTensor *const dy = t("dy"), *const in = t("attentionIn"), *const dq = t("dq"), *const dk = t("dk"),
                   *const dv = t("dv");
  if (fc.api == "Grad") {
    return {[a, dy, in, dq, dk, dv](uint64_t* ws, aclOpExecutor** ex) {
              return aclnnFlashAttentionScoreGradGetWorkspaceSize(
                  a.q, a.k, a.v, dy, a.pse, a.drop, nullptr, a.mask, a.max, a.sum, nullptr, in, a.prefix, a.scale,
                  a.keep, a.pre, a.next, a.heads, a.layout->data(), a.precise, a.mode, dq, dk, dv, nullptr, ws, ex);
            },
            aclnnFlashAttentionScoreGrad};
  }
  if (fc.api == "GradV2") {
    return {[a, dy, in, dq, dk, dv](uint64_t* ws, aclOpExecutor** ex) {
              return aclnnFlashAttentionScoreGradV2GetWorkspaceSize(
                  a.q, a.k, a.v, dy, a.pse, a.drop, nullptr, a.mask, a.max, a.sum, nullptr, in, a.prefix, a.qStart,
                  a.kvStart, a.scale, a.keep, a.pre, a.next, a.heads, a.layout->data(), a.precise, a.mode, a.pseType,
                  dq, dk, dv, nullptr, ws, ex);
            },
            aclnnFlashAttentionScoreGradV2};
  }
  if (fc.api == "GradV4") {
    aclTensor *const dsQ = t("dScaleQ"), *const dsK = t("dScaleK"), *const dsV = t("dScaleV"),
                     *const dsDy = t("dScaleDy"), *const dsO = t("dScaleO"), *const dqRope = t("dqRope"),
                     *const dkRope = t("dkRope");
    // outDtype: FP8 outputs FLOAT16 (0) or BFLOAT16 (1); the other dtypes ignore it.
    const int64_t outDtype = fc.fp8 && fc.outDtype == ACL_BF16 ? 1 : 0;
    return {[=](uint64_t* ws, aclOpExecutor** ex) {
              return aclnnFlashAttentionScoreGradV4GetWorkspaceSize(
                  a.q, a.k, a.v, dy, a.pse, a.drop, nullptr, a.mask, a.max, a.sum, nullptr, in, nullptr, a.qRope,
                  a.kRope, dsQ, dsK, dsV, dsDy, dsO, a.prefix, a.seqQ, a.seqKv, a.qStart, a.kvStart, a.scale, a.keep,
                  a.pre, a.next, a.heads, a.layout->data(), a.statsLayout->data(), a.precise, a.mode, a.pseType, a.seed,
                  a.offset, outDtype, dq, dk, dv, dqRope, dkRope, nullptr, nullptr, ws, ex);
            },
            aclnnFlashAttentionScoreGradV4};
  }
  if (fc.api == "Unpadding") {
    return {[a, dy, in, dq, dk, dv](uint64_t* ws, aclOpExecutor** ex) {
              return aclnnFlashAttentionUnpaddingScoreGradGetWorkspaceSize(
                  a.q, a.k, a.v, dy, a.pse, a.drop, nullptr, a.mask, a.max, a.sum, nullptr, in, a.prefix, a.seqQ,
                  a.seqKv, a.scale, a.keep, a.pre, a.next, a.heads, a.layout->data(), a.precise, a.mode, dq, dk, dv,
                  nullptr, ws, ex);
            },
            aclnnFlashAttentionUnpaddingScoreGrad};
  }
  if (fc.api == "UnpaddingV2") {
    return {[a, dy, in, dq, dk, dv](uint64_t* ws, aclOpExecutor** ex) {
              return aclnnFlashAttentionUnpaddingScoreGradV2GetWorkspaceSize(
                  a.q, a.k, a.v, dy, a.pse, a.drop, nullptr, a.mask, a.max, a.sum, nullptr, in, a.prefix, a.seqQ,
                  a.seqKv, a.qStart, a.kvStart, a.scale, a.keep, a.pre, a.next, a.heads, a.layout->data(), a.precise,
                  a.mode, a.pseType, dq, dk, dv, nullptr, ws, ex);
            },
            aclnnFlashAttentionUnpaddingScoreGradV2};
  }
  if (fc.api == "UnpaddingV4") {
    return {[a, dy, in, dq, dk, dv](uint64_t* ws, aclOpExecutor** ex) {
              return aclnnFlashAttentionUnpaddingScoreGradV4GetWorkspaceSize(
                  a.q, a.k, a.v, dy, a.pse, a.drop, nullptr, a.mask, a.max, a.sum, nullptr, in, a.prefix, a.seqQ,
                  a.seqKv, a.scale, a.keep, a.pre, a.next, a.heads, a.layout->data(), a.precise, a.mode, dq, dk, dv,
                  nullptr, a.statsLayout->data(), ws, ex);
            },
            aclnnFlashAttentionUnpaddingScoreGradV4};
  }
  throw HarnessError("'api': unknown backward entry point \"" + fc.api + "\"");
}

void writeOurForward(OpCase& c, const FaCase& fc) {
  const std::string api = forwardApiFor(fc.api);
  const FaEntryCall entry = faForwardCall(c, fc, "attentionIn", api);
  VerifyRow row;
  if (!runTwoPhase("forward " + api, entry.plan, entry.run, nullptr, 0, {}, row)) {
    throw HarnessError("our forward for the auto case failed: " + row.note);
  }
  for (const char* key : {"attentionIn", "softmaxMax", "softmaxSum"}) c.tensor(key).download();
}

}  // namespace gradkit::cli
