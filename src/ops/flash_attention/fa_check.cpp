// The forward checks: the profile (the V4 entry point is Ascend950 only), null pointers (161001), the dtypes of
// query / key / value, the layout and the sizes it implies (headNum, ranks, N1 % N2, D(K) = D(Q) >= D_V, D <= 768),
// the TND sequence arrays, rope, the outputs' dtypes and shapes, the statistics layout, the empty-tensor rule, then
// spec 2.15 as 161002: sparse mode, mask, prefix, tokens, pse, dropout; last the data pointers and gradkit's memory
// rules (no output overlaps an input or another output).
#include "ops/flash_attention/fa_check.h"

#include <string>
#include <vector>

#include "base/error.h"
#include "opapi/check.h"
#include "ops/flash_attention/fa_check_common.h"
#include "ops/flash_attention/fa_check_masking.h"

namespace gradkit::ops {
namespace {

// B, N1 or S1 zero: nothing to compute (spec 2.15). Any other empty size with queries to answer is not supported.
aclnnStatus checkEmpty(const FaArgs& a, const FaSizes& s) {
  const bool anyQuery = s.n1 > 0 && s.s1 > 0 && (s.tnd() || s.b > 0);  // TND: s1 is the longest batch
  if (!anyQuery) return ACLNN_SUCCESS;
  if (s.d > 0 && s.dv > 0 && s.s2 > 0) return ACLNN_SUCCESS;
  return fail(ACLNN_ERR_PARAM_INVALID, a.api, s.d == 0 ? "query" : (s.dv == 0 ? "value" : "key"),
              "D, D_V and S2 >= 1 when there are queries (empty keys or head dims are not supported)",
              "D = " + std::to_string(s.d) + ", D_V = " + std::to_string(s.dv) + ", S2 = " + std::to_string(s.s2) +
                  (s.tnd() ? " (the longest batch)" : ""));
}

aclnnStatus checkOutputs(const FaArgs& a, const FaSizes& s) {
  GRADKIT_RETURN_IF_ERROR(checkSameDtype(a.api, "attentionOutOut", *a.attentionOutOut, "query", *a.query));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(a.api, "attentionOutOut", *a.attentionOutOut, faLayoutShape(s, true, s.n1, s.dv),
                                       "query's shape with the last dim D_V"));
  GRADKIT_RETURN_IF_ERROR(checkFaStatistics(a.api, "softmaxMaxOut", *a.softmaxMaxOut, s));
  return checkFaStatistics(a.api, "softmaxSumOut", *a.softmaxSumOut, s);
}

}  // namespace

FaCall faCallOf(const FaArgs& a) {
  FaCall v = faSharedCallOf(a);
  v.pse = a.realShift;
  v.statsSameAsInput = faSameAsInput(a.softmaxOutLayout);
  v.keyName = "key", v.pseName = "realShiftOptional";
  v.keyRopeName = a.entry == FaEntry::Merged950 ? "keyRopeOptional" : "keyRope";
  return v;
}

aclnnStatus checkFlashAttention(const FaArgs& args, const uint64_t* workspaceSize, aclOpExecutor* const* executor) {
  const char* api = args.api;
  GRADKIT_RETURN_IF_ERROR(checkFaProfile(api, args.entry));
  GRADKIT_RETURN_IF_ERROR(checkFaRequired(api, {{"query", args.query},
                                                {"key", args.key},
                                                {"value", args.value},
                                                {"softmaxMaxOut", args.softmaxMaxOut},
                                                {"softmaxSumOut", args.softmaxSumOut},
                                                {"attentionOutOut", args.attentionOutOut}}));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "inputLayout", args.inputLayout));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "executor", executor));
  const FaCall v = faCallOf(args);
  GRADKIT_RETURN_IF_ERROR(checkFaInputDtypes(v));
  FaLayout layout = FaLayout::BNSD;
  GRADKIT_RETURN_IF_ERROR(parseFaLayout(v, &layout));
  FaSizes s;
  GRADKIT_RETURN_IF_ERROR(deriveFaSizes(v, layout, &s));
  GRADKIT_RETURN_IF_ERROR(checkFaSequenceArrays(v, &s));
  GRADKIT_RETURN_IF_ERROR(checkFaSoftmaxLayout(api, "softmaxOutLayout", args.softmaxOutLayout));
  GRADKIT_RETURN_IF_ERROR(checkFaRope(v, &s));
  GRADKIT_RETURN_IF_ERROR(checkOutputs(args, s));
  GRADKIT_RETURN_IF_ERROR(checkEmpty(args, s));
  GRADKIT_RETURN_IF_ERROR(checkFaMaskAndTokens(v, s));
  GRADKIT_RETURN_IF_ERROR(checkFaPse(v, s));
  GRADKIT_RETURN_IF_ERROR(checkFaDropout(v, s));
  const bool dropout = static_cast<float>(args.keepProb) < 1.0f;
  const std::vector<NamedTensor> inputs = {{"query", args.query},
                                           {"queryRope", args.queryRope},
                                           {"key", args.key},
                                           {"keyRope", args.keyRope},
                                           {"value", args.value},
                                           {"realShiftOptional", args.realShift},
                                           {"dropMaskOptional", dropout ? args.dropMask : nullptr},
                                           {"attenMaskOptional", args.attenMask}};
  const std::vector<NamedTensor> outputs = {{"softmaxMaxOut", args.softmaxMaxOut},
                                            {"softmaxSumOut", args.softmaxSumOut},
                                            {"attentionOutOut", args.attentionOutOut}};
  GRADKIT_RETURN_IF_ERROR(checkEachHasData(api, inputs));
  GRADKIT_RETURN_IF_ERROR(checkEachHasData(api, outputs));
  return checkMemoryRules(api, inputs, outputs);
}

}  // namespace gradkit::ops
