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

bool isBackwardApi(const std::string& api) { return api.rfind("Grad", 0) == 0 || api.rfind("Unpadding", 0) == 0; }

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

}  // namespace

OpCall faCall(OpCase& c, const FaCase& fc, bool backward, const std::string& api, const std::string& forwardOut) {
  const std::string name = api.empty() ? fc.api : api;
  // The other direction's tensors are not in the suite: nullptr.
  const auto t = [&](const char* key, bool inSuite = true) { return inSuite ? faTensor(c, fc, key) : nullptr; };
  using Tensor = aclTensor*;
  using IntArray = aclIntArray*;
  const Tensor q = t("query"), k = t("key"), v = t("value"), pse = t("pse"), drop = t("dropMask");
  const Tensor mask = t("attenMask"), qRope = t("queryRope"), kRope = t("keyRope");
  const Tensor max = t("softmaxMax"), sum = t("softmaxSum"), out = t(forwardOut.c_str(), !backward);
  const Tensor dy = t("dy", backward), in = t("attentionIn", backward);
  const Tensor dq = t("dq", backward), dk = t("dk", backward), dv = t("dv", backward);
  const Tensor dqRope = t("dqRope", backward), dkRope = t("dkRope", backward);
  const Tensor dsQ = t("dScaleQ", backward), dsK = t("dScaleK", backward), dsV = t("dScaleV", backward);
  const Tensor dsDy = t("dScaleDy", backward), dsO = t("dScaleO", backward);
  const IntArray prefix = fc.prefix.empty() ? nullptr : c.intArray(fc.prefix);
  const IntArray seqQ = fc.tnd() ? c.intArray(fc.cumQ) : nullptr;
  const IntArray seqKv = fc.tnd() ? c.intArray(fc.cumKv) : nullptr;
  const IntArray qStart = fc.qStartIdx.empty() ? nullptr : c.intArray(fc.qStartIdx);
  const IntArray kvStart = fc.kvStartIdx.empty() ? nullptr : c.intArray(fc.kvStartIdx);
  // The char* arguments, owned by the captures.
  const auto layout = std::make_shared<std::string>(fc.layoutName);
  const auto statsLayout = std::make_shared<std::string>(fc.softmaxLayout);
  const double scale = fc.scale, keep = fc.keepProb;
  const int64_t pre = fc.preTokens, next = fc.nextTokens, heads = fc.headNum, precise = fc.innerPrecise;
  const int64_t mode = fc.sparseMode, pseType = fc.pseType, seed = fc.dropSeed, offset = fc.dropOffset;
  // outDtype: FP8 outputs FLOAT16 (0) or BFLOAT16 (1); the other dtypes ignore it.
  const int64_t outDtype = fc.fp8 && fc.outDtype == ACL_BF16 ? 1 : 0;
  const std::map<std::string, OpCall> entries{
      {"Score", FA_ENTRY(aclnnFlashAttentionScore, q, k, v, pse, drop, nullptr, mask, prefix, scale, keep, pre, next,
                         heads, layout->data(), precise, mode, max, sum, nullptr, out)},
      {"ScoreV2",
       FA_ENTRY(aclnnFlashAttentionScoreV2, q, k, v, pse, drop, nullptr, mask, prefix, qStart, kvStart, scale, keep,
                pre, next, heads, layout->data(), precise, mode, pseType, max, sum, nullptr, out)},
      {"ScoreV4",
       FA_ENTRY(aclnnFlashAttentionScoreV4, q, k, v, pse, drop, nullptr, mask, qRope, kRope, nullptr, nullptr, nullptr,
                nullptr, prefix, seqQ, seqKv, qStart, kvStart, scale, keep, pre, next, heads, layout->data(), precise,
                mode, 0, pseType, statsLayout->data(), seed, offset, max, sum, nullptr, out)},
      {"VarLenScore", FA_ENTRY(aclnnFlashAttentionVarLenScore, q, k, v, pse, drop, nullptr, mask, prefix, seqQ, seqKv,
                               scale, keep, pre, next, heads, layout->data(), precise, mode, max, sum, nullptr, out)},
      {"VarLenScoreV2", FA_ENTRY(aclnnFlashAttentionVarLenScoreV2, q, k, v, pse, drop, nullptr, mask, prefix, seqQ,
                                 seqKv, qStart, kvStart, scale, keep, pre, next, heads, layout->data(), precise, mode,
                                 pseType, max, sum, nullptr, out)},
      {"VarLenScoreV4",
       FA_ENTRY(aclnnFlashAttentionVarLenScoreV4, q, k, v, pse, drop, nullptr, mask, prefix, seqQ, seqKv, scale, keep,
                pre, next, heads, layout->data(), precise, mode, statsLayout->data(), max, sum, nullptr, out)},
      {"Grad", FA_ENTRY(aclnnFlashAttentionScoreGrad, q, k, v, dy, pse, drop, nullptr, mask, max, sum, nullptr, in,
                        prefix, scale, keep, pre, next, heads, layout->data(), precise, mode, dq, dk, dv, nullptr)},
      {"GradV2", FA_ENTRY(aclnnFlashAttentionScoreGradV2, q, k, v, dy, pse, drop, nullptr, mask, max, sum, nullptr, in,
                          prefix, qStart, kvStart, scale, keep, pre, next, heads, layout->data(), precise, mode,
                          pseType, dq, dk, dv, nullptr)},
      {"GradV4", FA_ENTRY(aclnnFlashAttentionScoreGradV4, q, k, v, dy, pse, drop, nullptr, mask, max, sum, nullptr, in,
                          nullptr, qRope, kRope, dsQ, dsK, dsV, dsDy, dsO, prefix, seqQ, seqKv, qStart, kvStart, scale,
                          keep, pre, next, heads, layout->data(), statsLayout->data(), precise, mode, pseType, seed,
                          offset, outDtype, dq, dk, dv, dqRope, dkRope, nullptr, nullptr)},
      {"Unpadding", FA_ENTRY(aclnnFlashAttentionUnpaddingScoreGrad, q, k, v, dy, pse, drop, nullptr, mask, max, sum,
                             nullptr, in, prefix, seqQ, seqKv, scale, keep, pre, next, heads, layout->data(), precise,
                             mode, dq, dk, dv, nullptr)},
      {"UnpaddingV2", FA_ENTRY(aclnnFlashAttentionUnpaddingScoreGradV2, q, k, v, dy, pse, drop, nullptr, mask, max, sum,
                               nullptr, in, prefix, seqQ, seqKv, qStart, kvStart, scale, keep, pre, next, heads,
                               layout->data(), precise, mode, pseType, dq, dk, dv, nullptr)},
      {"UnpaddingV4", FA_ENTRY(aclnnFlashAttentionUnpaddingScoreGradV4, q, k, v, dy, pse, drop, nullptr, mask, max, sum,
                               nullptr, in, prefix, seqQ, seqKv, scale, keep, pre, next, heads, layout->data(), precise,
                               mode, dq, dk, dv, nullptr, statsLayout->data())}};
  const auto found = entries.find(name);
  if (found == entries.end() || isBackwardApi(name) != backward) {
    throw HarnessError(std::string("'api': unknown ") + (backward ? "backward" : "forward") + " entry point \"" + name +
                       "\"");
  }
  return found->second;
}

void writeOurForward(OpCase& c, const FaCase& fc) {
  const std::string api = forwardApiFor(fc.api);
  const OpCall entry = faCall(c, fc, /*backward=*/false, api, "attentionIn");
  VerifyRow row;
  if (!runTwoPhase("forward " + api, entry.plan, entry.run, nullptr, 0, {}, row)) {
    throw HarnessError("our forward for the auto case failed: " + row.note);
  }
  for (const char* key : {"attentionIn", "softmaxMax", "softmaxSum"}) c.tensor(key).download();
}

}  // namespace gradkit::cli
