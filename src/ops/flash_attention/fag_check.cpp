// The backward checks, spec fag.md 2.4 in upstream's order, then 2.15 as 161002: the profile (the V4 entry point is
// Ascend950 only), null pointers (161001), the all-empty-outputs shortcut, what gradkit does not support yet (sink;
// FP8 scales without FLOAT8 inputs), the layout and the sizes it implies (headNum, ranks, N1 % N2, D(K) = D(Q) >= D_V,
// D <= 768), the TND sequence arrays, softmaxInLayout, rope, dtypes, the exact shapes of dy / attentionIn / the
// statistics / the outputs, empty sizes, sparse mode, mask, prefix, tokens, pse, dropout; last the data pointers and
// gradkit's memory rules (no output overlaps an input or another output). GradV4 with FLOAT8 inputs (spec 5.9) adds
// its own rules (checkFp8).
#include "ops/flash_attention/fag_check.h"

#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/error.h"
#include "opapi/check.h"
#include "ops/flash_attention/fa_check_common.h"
#include "ops/flash_attention/fa_check_masking.h"

namespace gradkit::ops {
namespace {

constexpr int64_t kFaFp8ScaleRows = 128;  // rows per de-quant scale block (spec 5.9)

bool emptyOrNull(const aclTensor* t) { return t == nullptr || t->isEmpty(); }

/** A GradV4 call with FLOAT8 inputs: the FP8 path (spec 5.9). */
bool fp8Call(const FagArgs& a) { return a.entry == FaEntry::Merged950 && isFloat8Dtype(a.query->dtype); }

/** The dtype of the FP8 path's attentionIn, pse table and outputs: outDtype 0 -> FLOAT16, 1 -> BFLOAT16. */
aclDataType fp8OutDtype(const FagArgs& a) { return a.outDtype == 1 ? ACL_BF16 : ACL_FLOAT16; }

// The sink (GradV3 / V4 / UnpaddingV5) is not implemented yet; the FP8 scales belong to FLOAT8 inputs only.
aclnnStatus checkNotSupportedYet(const FagArgs& a) {
  if (!emptyOrNull(a.sinkIn)) return rejectFaNotSupported(a.api, "sinkInOptional", *a.sinkIn, "the attention sink");
  const NamedTensor scales[] = {{"dScaleQOptional", a.dScaleQ},
                                {"dScaleKOptional", a.dScaleK},
                                {"dScaleVOptional", a.dScaleV},
                                {"dScaleDyOptional", a.dScaleDy},
                                {"dScaleOOptional", a.dScaleO}};
  for (const NamedTensor& t : scales) {
    if (!fp8Call(a) && !emptyOrNull(t.tensor)) {
      return fail(ACLNN_ERR_PARAM_INVALID, a.api, t.name,
                  "nullptr or an empty tensor unless query is FLOAT8_E5M2 / FLOAT8_E4M3FN (the FP8 path)",
                  "shape " + t.tensor->shapeString() + " with query " + dtypeName(a.query->dtype));
    }
  }
  if (a.outDtype != 0 && a.outDtype != 1) {
    return fail(ACLNN_ERR_PARAM_INVALID, a.api, "outDtype", "0 (FLOAT16) or 1 (BFLOAT16)", std::to_string(a.outDtype));
  }
  return ACLNN_SUCCESS;
}

// FP8 (spec 5.9): dy in query's fp8 format; attentionIn and the outputs in the out dtype (outDtype).
aclnnStatus checkFp8Dtypes(const FagArgs& a) {
  GRADKIT_RETURN_IF_ERROR(checkSameDtype(a.api, "dy", *a.dy, "query", *a.query));
  const aclDataType out = fp8OutDtype(a);
  const NamedTensor outs[] = {
      {"attentionInOptional", a.attentionIn}, {"dqOut", a.dqOut}, {"dkOut", a.dkOut}, {"dvOut", a.dvOut}};
  for (const NamedTensor& t : outs) {
    if (t.tensor->dtype == out) continue;
    return fail(ACLNN_ERR_PARAM_INVALID, a.api, t.name,
                std::string(dtypeName(out)) + " (FP8 inputs: outDtype " + std::to_string(a.outDtype) + ")",
                dtypeName(t.tensor->dtype));
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkDtypes(const FagArgs& a) {
  if (fp8Call(a)) return checkFp8Dtypes(a);
  const NamedTensor same[] = {
      {"dy", a.dy}, {"attentionInOptional", a.attentionIn}, {"dqOut", a.dqOut}, {"dkOut", a.dkOut}, {"dvOut", a.dvOut}};
  for (const NamedTensor& t : same)
    GRADKIT_RETURN_IF_ERROR(checkSameDtype(a.api, t.name, *t.tensor, "query", *a.query));
  return ACLNN_SUCCESS;
}

aclnnStatus checkShapes(const FagArgs& a, const FaCall& v, const FaSizes& s) {
  const std::vector<int64_t> attention = faLayoutShape(s, true, s.n1, s.dv);
  const char* withDv = "query's shape with the last dim D_V";
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(a.api, "dy", *a.dy, attention, withDv));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(a.api, "attentionInOptional", *a.attentionIn, attention, withDv));
  GRADKIT_RETURN_IF_ERROR(checkFaStatistics(a.api, "softmaxMaxOptional", *a.softmaxMax, s));
  GRADKIT_RETURN_IF_ERROR(checkFaStatistics(a.api, "softmaxSumOptional", *a.softmaxSum, s));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(a.api, "dqOut", *a.dqOut, a.query->viewDims, "the shape of query"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(a.api, "dkOut", *a.dkOut, a.key->viewDims, "the shape of keyIn"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(a.api, "dvOut", *a.dvOut, a.value->viewDims, "the shape of value"));
  if (a.queryRope == nullptr) return ACLNN_SUCCESS;
  const NamedTensor ropeOuts[] = {{"dqRopeOut", a.dqRopeOut}, {"dkRopeOut", a.dkRopeOut}};
  GRADKIT_RETURN_IF_ERROR(checkFaRequired(a.api, {ropeOuts[0], ropeOuts[1]}));
  GRADKIT_RETURN_IF_ERROR(checkSameDtype(a.api, "dqRopeOut", *a.dqRopeOut, "query", *a.query));
  GRADKIT_RETURN_IF_ERROR(checkSameDtype(a.api, "dkRopeOut", *a.dkRopeOut, "query", *a.query));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(a.api, "dqRopeOut", *a.dqRopeOut, a.queryRope->viewDims,
                                       std::string("the shape of ") + v.queryRopeName));
  return checkShapeIs(a.api, "dkRopeOut", *a.dkRopeOut, a.keyRope->viewDims,
                      std::string("the shape of ") + v.keyRopeName);
}

// Past the all-empty shortcut every size must be positive (the grad tiling's CheckShapeValid, spec 2.15).
aclnnStatus checkNotEmpty(const FagArgs& a, const FaSizes& s) {
  const int64_t rows1 = s.tnd() ? s.t1 : s.s1, rows2 = s.tnd() ? s.t2 : s.s2;
  const bool tndWithoutWork = s.tnd() && (s.s1 == 0 || s.s2 == 0);
  if (s.b > 0 && s.n1 > 0 && rows1 > 0 && rows2 > 0 && s.d > 0 && s.dv > 0 && !tndWithoutWork) return ACLNN_SUCCESS;
  const std::string given =
      "B = " + std::to_string(s.b) + ", N1 = " + std::to_string(s.n1) + ", " + (s.tnd() ? "T1 = " : "S1 = ") +
      std::to_string(rows1) + ", " + (s.tnd() ? "T2 = " : "S2 = ") + std::to_string(rows2) +
      ", D = " + std::to_string(s.d) + ", D_V = " + std::to_string(s.dv) +
      (s.tnd() ? ", longest batches S1 = " + std::to_string(s.s1) + ", S2 = " + std::to_string(s.s2) : "");
  return fail(ACLNN_ERR_PARAM_INVALID, a.api, "query",
              "B, N1, S1, S2, D, D_V >= 1 (empty sizes are supported only when dqOut, dkOut and dvOut are all empty)",
              given);
}

// FP8 (spec 5.9): padded layouts only, no rope, and the de-quant scales: FLOAT32 [B, N1, ceil(S1/128), 1] for q, dy
// (and o when given: upstream fills it with q's scales; gradkit does not read it, attentionIn is already de-quantised),
// [B, N2, ceil(S2/128), 1] for k, v.
aclnnStatus checkFp8(const FagArgs& a, const FaSizes& s) {
  if (s.tnd()) {
    return fail(ACLNN_ERR_PARAM_INVALID, a.api, "inputLayout",
                "BNSD, BSND, BSH or SBH with FLOAT8 inputs (upstream's FP8 path has no TND)", "\"TND\"");
  }
  if (a.queryRope != nullptr) {
    return fail(ACLNN_ERR_PARAM_INVALID, a.api, "queryRopeOptional", "nullptr with FLOAT8 inputs (no FP8 rope)",
                "shape " + a.queryRope->shapeString());
  }
  GRADKIT_RETURN_IF_ERROR(checkFaRequired(a.api, {{"dScaleQOptional", a.dScaleQ},
                                                  {"dScaleKOptional", a.dScaleK},
                                                  {"dScaleVOptional", a.dScaleV},
                                                  {"dScaleDyOptional", a.dScaleDy}}));
  const int64_t blocks1 = (s.s1 + kFaFp8ScaleRows - 1) / kFaFp8ScaleRows;
  const int64_t blocks2 = (s.s2 + kFaFp8ScaleRows - 1) / kFaFp8ScaleRows;
  const std::vector<int64_t> queryScales = {s.b, s.n1, blocks1, 1}, keyScales = {s.b, s.n2, blocks2, 1};
  const struct {
    const char* name;
    const aclTensor* tensor;
    const std::vector<int64_t>& shape;
    const char* why;
  } scales[] = {{"dScaleQOptional", a.dScaleQ, queryScales, "[B, N1, ceil(S1 / 128), 1]"},
                {"dScaleKOptional", a.dScaleK, keyScales, "[B, N2, ceil(S2 / 128), 1]"},
                {"dScaleVOptional", a.dScaleV, keyScales, "[B, N2, ceil(S2 / 128), 1]"},
                {"dScaleDyOptional", a.dScaleDy, queryScales, "[B, N1, ceil(S1 / 128), 1]"},
                {"dScaleOOptional", a.dScaleO, queryScales, "[B, N1, ceil(S1 / 128), 1]"}};
  for (const auto& scale : scales) {
    if (scale.tensor == nullptr) continue;  // only dScaleO may be absent here
    GRADKIT_RETURN_IF_ERROR(checkDtypeIn(a.api, scale.name, *scale.tensor, {ACL_FLOAT}));
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(a.api, scale.name, *scale.tensor, scale.shape, scale.why));
  }
  return ACLNN_SUCCESS;
}

}  // namespace

FaCall faCallOf(const FagArgs& a) {
  FaCall v = faSharedCallOf(a);
  v.pse = a.pseShift;
  v.statsSameAsInput = faSameAsInput(a.softmaxInLayout);
  v.keyName = "keyIn", v.pseName = "pseShiftOptional";
  if (fp8Call(a)) v.fp8OutDtype = fp8OutDtype(a);
  v.keyRopeName = a.entry == FaEntry::Merged950 ? "keyRopeOptional" : "keyInRope";
  return v;
}

bool flashAttentionGradNothingToCompute(const FagArgs& args) {
  return emptyOrNull(args.dqOut) && emptyOrNull(args.dkOut) && emptyOrNull(args.dvOut) && emptyOrNull(args.dpseOut);
}

aclnnStatus checkFlashAttentionGrad(const FagArgs& args, const uint64_t* workspaceSize,
                                    aclOpExecutor* const* executor) {
  const char* api = args.api;
  GRADKIT_RETURN_IF_ERROR(checkFaProfile(api, args.entry));
  GRADKIT_RETURN_IF_ERROR(checkFaRequired(api, {{"query", args.query},
                                                {"keyIn", args.key},
                                                {"value", args.value},
                                                {"dy", args.dy},
                                                {"attentionInOptional", args.attentionIn},
                                                {"dqOut", args.dqOut},
                                                {"dkOut", args.dkOut},
                                                {"dvOut", args.dvOut}}));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "executor", executor));
  if (flashAttentionGradNothingToCompute(args)) return ACLNN_SUCCESS;  // spec 2.4: workspace 0, nothing computed
  GRADKIT_RETURN_IF_ERROR(
      checkFaRequired(api, {{"softmaxMaxOptional", args.softmaxMax}, {"softmaxSumOptional", args.softmaxSum}}));
  GRADKIT_RETURN_IF_ERROR(checkNotSupportedYet(args));
  const FaCall v = faCallOf(args);
  FaLayout layout = FaLayout::BNSD;
  GRADKIT_RETURN_IF_ERROR(parseFaLayout(v, &layout));
  FaSizes s;
  GRADKIT_RETURN_IF_ERROR(deriveFaSizes(v, layout, &s));
  GRADKIT_RETURN_IF_ERROR(checkFaSequenceArrays(v, &s));
  GRADKIT_RETURN_IF_ERROR(checkFaSoftmaxLayout(api, "softmaxInLayout", args.softmaxInLayout));
  GRADKIT_RETURN_IF_ERROR(checkFaInputDtypes(v));
  if (fp8Call(args)) GRADKIT_RETURN_IF_ERROR(checkFp8(args, s));
  GRADKIT_RETURN_IF_ERROR(checkFaRope(v, &s));
  GRADKIT_RETURN_IF_ERROR(checkDtypes(args));
  GRADKIT_RETURN_IF_ERROR(checkShapes(args, v, s));
  GRADKIT_RETURN_IF_ERROR(checkNotEmpty(args, s));
  GRADKIT_RETURN_IF_ERROR(checkFaMaskAndTokens(v, s));
  GRADKIT_RETURN_IF_ERROR(checkFaPse(v, s));
  GRADKIT_RETURN_IF_ERROR(checkFaDropout(v, s));
  const bool dropout = static_cast<float>(args.keepProb) < 1.0f;
  const std::vector<NamedTensor> inputs = {{"query", args.query},
                                           {v.queryRopeName, args.queryRope},
                                           {"keyIn", args.key},
                                           {v.keyRopeName, args.keyRope},
                                           {"value", args.value},
                                           {"dy", args.dy},
                                           {"pseShiftOptional", args.pseShift},
                                           {"dropMaskOptional", dropout ? args.dropMask : nullptr},
                                           {"attenMaskOptional", args.attenMask},
                                           {"softmaxMaxOptional", args.softmaxMax},
                                           {"softmaxSumOptional", args.softmaxSum},
                                           {"attentionInOptional", args.attentionIn},
                                           {"dScaleQOptional", fp8Call(args) ? args.dScaleQ : nullptr},
                                           {"dScaleKOptional", fp8Call(args) ? args.dScaleK : nullptr},
                                           {"dScaleVOptional", fp8Call(args) ? args.dScaleV : nullptr},
                                           {"dScaleDyOptional", fp8Call(args) ? args.dScaleDy : nullptr}};
  const bool rope = args.queryRope != nullptr;
  const std::vector<NamedTensor> outputs = {{"dqOut", args.dqOut},
                                            {"dkOut", args.dkOut},
                                            {"dvOut", args.dvOut},
                                            {"dqRopeOut", rope ? args.dqRopeOut : nullptr},
                                            {"dkRopeOut", rope ? args.dkRopeOut : nullptr}};
  GRADKIT_RETURN_IF_ERROR(checkEachHasData(api, inputs));
  GRADKIT_RETURN_IF_ERROR(checkEachHasData(api, outputs));
  return checkMemoryRules(api, inputs, outputs);
}

}  // namespace gradkit::ops
