// The flash attention entry points as the suites call them (spec fag.md 2.2): the case's "api" picks the
// GetWorkspaceSize and the second phase of one upstream version, given the case's tensors (nullptr where the case
// leaves one out; the V4 ones take the rope tensors of a case with D_rope), arrays and attributes in that version's
// order.
#include <map>
#include <memory>

#include "aclnnop/aclnn_flash_attention_score.h"
#include "aclnnop/aclnn_flash_attention_score_grad.h"
#include "harness/error.h"
#include "harness/two_phase.h"
#include "suites/flash_attention_suite.h"

namespace gradkit::cli {
namespace {

// What every entry point takes besides the direction's own tensors, resolved once.
struct SharedArguments {
  aclTensor *q{}, *k{}, *v{}, *pse{}, *drop{}, *mask{}, *qRope{}, *kRope{}, *max{}, *sum{};
  aclIntArray *prefix{}, *seqQ{}, *seqKv{}, *qStart{}, *kvStart{};
  std::shared_ptr<std::string> layout, statsLayout;  // the char* arguments
  double scale{}, keep{};
  int64_t pre{}, next{}, heads{}, precise{}, mode{}, pseType{}, seed{}, offset{};
};

SharedArguments sharedArguments(OpCase& c, const FaCase& fc) {
  const auto t = [&](const char* key) { return faTensor(c, fc, key); };
  SharedArguments a;
  a.q = t("query"), a.k = t("key"), a.v = t("value"), a.pse = t("pse"), a.drop = t("dropMask");
  a.mask = t("attenMask"), a.qRope = t("queryRope"), a.kRope = t("keyRope");
  a.max = t("softmaxMax"), a.sum = t("softmaxSum");
  if (!fc.prefix.empty()) a.prefix = c.intArray(fc.prefix);
  if (fc.tnd()) a.seqQ = c.intArray(fc.cumQ), a.seqKv = c.intArray(fc.cumKv);
  if (!fc.qStartIdx.empty()) a.qStart = c.intArray(fc.qStartIdx);
  if (!fc.kvStartIdx.empty()) a.kvStart = c.intArray(fc.kvStartIdx);
  a.layout = std::make_shared<std::string>(fc.layoutName);
  a.statsLayout = std::make_shared<std::string>(fc.softmaxLayout);
  a.scale = fc.scale, a.keep = fc.keepProb, a.pre = fc.preTokens, a.next = fc.nextTokens, a.heads = fc.headNum;
  a.precise = fc.innerPrecise, a.mode = fc.sparseMode, a.pseType = fc.pseType;
  a.seed = fc.dropSeed, a.offset = fc.dropOffset;
  return a;
}

// The same version of the forward family of a backward entry point: GradV2 -> ScoreV2, UnpaddingV4 -> VarLenScoreV4.
std::string forwardApiFor(const std::string& backwardApi) {
  if (backwardApi.rfind("Grad", 0) == 0) return "Score" + backwardApi.substr(4);
  if (backwardApi.rfind("Unpadding", 0) == 0) return "VarLenScore" + backwardApi.substr(9);
  throw HarnessError("'api': no forward entry point for \"" + backwardApi + "\"");
}

// One entry point bound to arguments (captured by value): its GetWorkspaceSize and its second phase.
OpCall entryCall(PlanCall plan, RunCall run) {
  OpCall call;
  call.plan = std::move(plan);
  call.run = std::move(run);
  return call;
}
#define FA_ENTRY(api, ...) \
  entryCall([=](uint64_t* ws, aclOpExecutor** ex) { return api##GetWorkspaceSize(__VA_ARGS__, ws, ex); }, api)

OpCall pick(const std::map<std::string, OpCall>& entries, const std::string& api, const char* direction) {
  const auto found = entries.find(api);
  if (found == entries.end())
    throw HarnessError(std::string("'api': unknown ") + direction + " entry point \"" + api + "\"");
  return found->second;
}

}  // namespace

OpCall faForwardCall(OpCase& c, const FaCase& fc, const std::string& outKey, const std::string& api) {
  const SharedArguments a = sharedArguments(c, fc);
  aclTensor* const out = faTensor(c, fc, outKey);
  char* const layout = a.layout->data();
  const std::map<std::string, OpCall> entries{
      {"Score", FA_ENTRY(aclnnFlashAttentionScore, a.q, a.k, a.v, a.pse, a.drop, nullptr, a.mask, a.prefix, a.scale,
                         a.keep, a.pre, a.next, a.heads, layout, a.precise, a.mode, a.max, a.sum, nullptr, out)},
      {"ScoreV2", FA_ENTRY(aclnnFlashAttentionScoreV2, a.q, a.k, a.v, a.pse, a.drop, nullptr, a.mask, a.prefix,
                           a.qStart, a.kvStart, a.scale, a.keep, a.pre, a.next, a.heads, layout, a.precise, a.mode,
                           a.pseType, a.max, a.sum, nullptr, out)},
      {"ScoreV4", FA_ENTRY(aclnnFlashAttentionScoreV4, a.q, a.k, a.v, a.pse, a.drop, nullptr, a.mask, a.qRope, a.kRope,
                           nullptr, nullptr, nullptr, nullptr, a.prefix, a.seqQ, a.seqKv, a.qStart, a.kvStart, a.scale,
                           a.keep, a.pre, a.next, a.heads, layout, a.precise, a.mode, 0, a.pseType,
                           a.statsLayout->data(), a.seed, a.offset, a.max, a.sum, nullptr, out)},
      {"VarLenScore", FA_ENTRY(aclnnFlashAttentionVarLenScore, a.q, a.k, a.v, a.pse, a.drop, nullptr, a.mask, a.prefix,
                               a.seqQ, a.seqKv, a.scale, a.keep, a.pre, a.next, a.heads, layout, a.precise, a.mode,
                               a.max, a.sum, nullptr, out)},
      {"VarLenScoreV2", FA_ENTRY(aclnnFlashAttentionVarLenScoreV2, a.q, a.k, a.v, a.pse, a.drop, nullptr, a.mask,
                                 a.prefix, a.seqQ, a.seqKv, a.qStart, a.kvStart, a.scale, a.keep, a.pre, a.next,
                                 a.heads, layout, a.precise, a.mode, a.pseType, a.max, a.sum, nullptr, out)},
      {"VarLenScoreV4", FA_ENTRY(aclnnFlashAttentionVarLenScoreV4, a.q, a.k, a.v, a.pse, a.drop, nullptr, a.mask,
                                 a.prefix, a.seqQ, a.seqKv, a.scale, a.keep, a.pre, a.next, a.heads, layout, a.precise,
                                 a.mode, a.statsLayout->data(), a.max, a.sum, nullptr, out)}};
  return pick(entries, api.empty() ? fc.api : api, "forward");
}

OpCall faBackwardCall(OpCase& c, const FaCase& fc) {
  const SharedArguments a = sharedArguments(c, fc);
  const auto t = [&](const char* key) { return faTensor(c, fc, key); };
  aclTensor *const dy = t("dy"), *const in = t("attentionIn"), *const dq = t("dq"), *const dk = t("dk"),
                   *const dv = t("dv"), *const dqRope = t("dqRope"), *const dkRope = t("dkRope");
  aclTensor *const dsQ = t("dScaleQ"), *const dsK = t("dScaleK"), *const dsV = t("dScaleV"),
                   *const dsDy = t("dScaleDy"), *const dsO = t("dScaleO");
  char* const layout = a.layout->data();
  // outDtype: FP8 outputs FLOAT16 (0) or BFLOAT16 (1); the other dtypes ignore it.
  const int64_t outDtype = fc.fp8 && fc.outDtype == ACL_BF16 ? 1 : 0;
  const std::map<std::string, OpCall> entries{
      {"Grad",
       FA_ENTRY(aclnnFlashAttentionScoreGrad, a.q, a.k, a.v, dy, a.pse, a.drop, nullptr, a.mask, a.max, a.sum, nullptr,
                in, a.prefix, a.scale, a.keep, a.pre, a.next, a.heads, layout, a.precise, a.mode, dq, dk, dv, nullptr)},
      {"GradV2", FA_ENTRY(aclnnFlashAttentionScoreGradV2, a.q, a.k, a.v, dy, a.pse, a.drop, nullptr, a.mask, a.max,
                          a.sum, nullptr, in, a.prefix, a.qStart, a.kvStart, a.scale, a.keep, a.pre, a.next, a.heads,
                          layout, a.precise, a.mode, a.pseType, dq, dk, dv, nullptr)},
      {"GradV4",
       FA_ENTRY(aclnnFlashAttentionScoreGradV4, a.q, a.k, a.v, dy, a.pse, a.drop, nullptr, a.mask, a.max, a.sum,
                nullptr, in, nullptr, a.qRope, a.kRope, dsQ, dsK, dsV, dsDy, dsO, a.prefix, a.seqQ, a.seqKv, a.qStart,
                a.kvStart, a.scale, a.keep, a.pre, a.next, a.heads, layout, a.statsLayout->data(), a.precise, a.mode,
                a.pseType, a.seed, a.offset, outDtype, dq, dk, dv, dqRope, dkRope, nullptr, nullptr)},
      {"Unpadding", FA_ENTRY(aclnnFlashAttentionUnpaddingScoreGrad, a.q, a.k, a.v, dy, a.pse, a.drop, nullptr, a.mask,
                             a.max, a.sum, nullptr, in, a.prefix, a.seqQ, a.seqKv, a.scale, a.keep, a.pre, a.next,
                             a.heads, layout, a.precise, a.mode, dq, dk, dv, nullptr)},
      {"UnpaddingV2",
       FA_ENTRY(aclnnFlashAttentionUnpaddingScoreGradV2, a.q, a.k, a.v, dy, a.pse, a.drop, nullptr, a.mask, a.max,
                a.sum, nullptr, in, a.prefix, a.seqQ, a.seqKv, a.qStart, a.kvStart, a.scale, a.keep, a.pre, a.next,
                a.heads, layout, a.precise, a.mode, a.pseType, dq, dk, dv, nullptr)},
      {"UnpaddingV4",
       FA_ENTRY(aclnnFlashAttentionUnpaddingScoreGradV4, a.q, a.k, a.v, dy, a.pse, a.drop, nullptr, a.mask, a.max,
                a.sum, nullptr, in, a.prefix, a.seqQ, a.seqKv, a.scale, a.keep, a.pre, a.next, a.heads, layout,
                a.precise, a.mode, dq, dk, dv, nullptr, a.statsLayout->data())}};
  return pick(entries, fc.api, "backward");
}

void writeOurForward(OpCase& c, const FaCase& fc) {
  const std::string api = forwardApiFor(fc.api);
  const OpCall entry = faForwardCall(c, fc, "attentionIn", api);
  VerifyRow row;
  if (!runTwoPhase("forward " + api, entry.plan, entry.run, nullptr, 0, {}, row)) {
    throw HarnessError("our forward for the auto case failed: " + row.note);
  }
  for (const char* key : {"attentionIn", "softmaxMax", "softmaxSum"}) c.tensor(key).download();
}

}  // namespace gradkit::cli
