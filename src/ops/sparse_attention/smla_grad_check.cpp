// aclnnSparseFlashMlaGrad's rules, in the forward's phases (smla_check.cpp) with the gradient's own tensors: null
// required tensors (161001); each argument alone; which optional tensors the layouts and modes need or forbid; feature
// combinations; cross-tensor shapes (the forward's shared rules plus dOut, out, lse and the outputs); the A2/A3
// profile (upstream's Atlas A2 tiling: no ori indices or top-k lengths, no seqused or metadata, oriMaskMode 4 with the
// window 127 / 0, cmpMaskMode 3); the INT32 values; the memory rules. Every failure after the null checks is 161002.
#include <cmath>
#include <string>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "opapi/tensor_rules.h"
#include "ops/sparse_attention/smla_check.h"
#include "ops/sparse_attention/smla_grad_check.h"
#include "runtime/runtime.h"

namespace gradkit::ops {
namespace {

constexpr const char* kApi = kSmlaGradApi;
constexpr SmlaCheckNames kNames{kApi, "query"};
constexpr int64_t kMaxRatio = 128, kMetadataElements = 1024;

aclnnStatus invalid(const char* name, const std::string& expected, const std::string& given) {
  return fail(ACLNN_ERR_PARAM_INVALID, kApi, name, expected, given);
}

std::string text(const char* s) { return s == nullptr ? "nullptr" : std::string("\"") + s + "\""; }
std::string shapeOf(const aclTensor& t) { return "shape " + t.shapeString(); }

aclnnStatus checkLayouts(const SmlaGradArgs& a) {
  const auto q = smlaLayoutOf(a.layoutQ), kv = smlaLayoutOf(a.layoutKv);
  if (!q || *q == SmlaLayout::PaBbnd) return invalid("layoutQOptional", "\"BSND\" or \"TND\"", text(a.layoutQ));
  if (!kv || *kv == SmlaLayout::PaBbnd) return invalid("layoutKvOptional", "\"BSND\" or \"TND\"", text(a.layoutKv));
  if (*kv != *q) {
    return invalid("layoutKvOptional", std::string("layoutQ's ") + smlaLayoutName(*q), text(a.layoutKv));
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkTyped(const char* name, const aclTensor* t, std::initializer_list<aclDataType> types, int64_t rank,
                       const char* why) {
  return checkSmlaTyped(kApi, name, t, types, rank, why);
}

/** Phase 1: each argument alone. */
aclnnStatus checkSingle(const SmlaGradArgs& a, int64_t rank) {
  if (!std::isfinite(a.scaleValue)) return invalid("scaleValue", "a finite value", std::to_string(a.scaleValue));
  for (const auto& [name, t] :
       {std::pair{"query", a.query}, std::pair{"dOut", a.dOut}, std::pair{"out", a.out},
        std::pair{"oriKvOptional", a.oriKv}, std::pair{"cmpKvOptional", a.cmpKv}, std::pair{"dQueryOut", a.dQuery},
        std::pair{"dOriKvOutOptional", a.dOriKv}, std::pair{"dCmpKvOutOptional", a.dCmpKv}}) {
    GRADKIT_RETURN_IF_ERROR(checkSmlaIo(kApi, name, t, rank));
  }
  if (a.query->isEmpty()) return invalid("query", "no dim of 0 (an empty query is not supported)", shapeOf(*a.query));
  GRADKIT_RETURN_IF_ERROR(checkTyped("lse", a.lse, {ACL_FLOAT}, rank == 4 ? 4 : 3, "[B, 1, S1, N1] or [1, T1, N1]"));
  const char* lengthsWhy = "1 dim ([B + 1] or [B])";
  for (const auto& [name, t] :
       {std::pair{"cuSeqlensQOptional", a.cuSeqlensQ}, std::pair{"cuSeqlensOriKvOptional", a.cuSeqlensOriKv},
        std::pair{"cuSeqlensCmpKvOptional", a.cuSeqlensCmpKv}, std::pair{"sequsedQOptional", a.sequsedQ},
        std::pair{"sequsedOriKvOptional", a.sequsedOriKv}, std::pair{"sequsedCmpKvOptional", a.sequsedCmpKv},
        std::pair{"cmpResidualKvOptional", a.cmpResidualKv}}) {
    GRADKIT_RETURN_IF_ERROR(checkTyped(name, t, {ACL_INT32}, 1, lengthsWhy));
  }
  if (a.cmpRatio < 1 || a.cmpRatio > kMaxRatio) return invalid("cmpRatio", "1 .. 128", std::to_string(a.cmpRatio));
  const char* indicesWhy = rank == 4 ? "[B, S1, 1, K] (layoutQ BSND)" : "[T1, 1, K] (layoutQ TND)";
  GRADKIT_RETURN_IF_ERROR(checkTyped("oriSparseIndicesOptional", a.oriSparseIndices, {ACL_INT32}, rank, indicesWhy));
  GRADKIT_RETURN_IF_ERROR(checkTyped("cmpSparseIndicesOptional", a.cmpSparseIndices, {ACL_INT32}, rank, indicesWhy));
  const char* lengthWhy = rank == 4 ? "[B, S1, 1] (layoutQ BSND)" : "[T1, 1] (layoutQ TND)";
  GRADKIT_RETURN_IF_ERROR(checkTyped("oriTopkLengthOptional", a.oriTopkLength, {ACL_INT32}, rank - 1, lengthWhy));
  GRADKIT_RETURN_IF_ERROR(checkTyped("cmpTopkLengthOptional", a.cmpTopkLength, {ACL_INT32}, rank - 1, lengthWhy));
  GRADKIT_RETURN_IF_ERROR(checkSmlaModesAndWindows(kApi, smlaForwardViewOf(a)));
  GRADKIT_RETURN_IF_ERROR(checkTyped("sinksOptional", a.sinks, {ACL_FLOAT}, 1, "[N1]"));
  GRADKIT_RETURN_IF_ERROR(checkTyped("metadataOptional", a.metadata, {ACL_INT32}, 1, "[1024]"));
  GRADKIT_RETURN_IF_ERROR(checkTyped("dSinksOutOptional", a.dSinks, {ACL_FLOAT}, 1, "[N1]"));
  const char* l1Why = rank == 4 ? "[B, S1, 1, K] (layoutQ BSND)" : "[T1, 1, K] (layoutQ TND)";
  GRADKIT_RETURN_IF_ERROR(checkTyped("oriSoftmaxL1NormOptional", a.oriSoftmaxL1Norm, {ACL_FLOAT}, rank, l1Why));
  return checkTyped("cmpSoftmaxL1NormOptional", a.cmpSoftmaxL1Norm, {ACL_FLOAT}, rank, l1Why);
}

aclnnStatus mustBeAbsent(const char* name, const aclTensor* t, const std::string& why) {
  if (t == nullptr) return ACLNN_SUCCESS;
  return invalid(name, "nullptr or an empty tensor (" + why + ")", shapeOf(*t));
}

aclnnStatus mustBePresent(const char* name, const aclTensor* t, const std::string& why) {
  if (t != nullptr) return ACLNN_SUCCESS;
  return invalid(name, "a tensor (" + why + ")", "nullptr or an empty tensor");
}

/** Phase 2: which optional tensors the call's layout and modes need or forbid. */
aclnnStatus checkExistence(const SmlaGradArgs& a, const SmlaShape& s) {
  if (s.layoutQ == SmlaLayout::Tnd) {
    GRADKIT_RETURN_IF_ERROR(mustBePresent("cuSeqlensQOptional", a.cuSeqlensQ, "layout TND"));
    GRADKIT_RETURN_IF_ERROR(mustBePresent("cuSeqlensOriKvOptional", a.cuSeqlensOriKv, "layout TND"));
    if (s.hasCmp) GRADKIT_RETURN_IF_ERROR(mustBePresent("cuSeqlensCmpKvOptional", a.cuSeqlensCmpKv, "TND with cmpKv"));
  } else {
    GRADKIT_RETURN_IF_ERROR(mustBeAbsent("cuSeqlensQOptional", a.cuSeqlensQ, "layout BSND"));
    GRADKIT_RETURN_IF_ERROR(mustBeAbsent("cuSeqlensOriKvOptional", a.cuSeqlensOriKv, "layout BSND"));
    GRADKIT_RETURN_IF_ERROR(mustBeAbsent("cuSeqlensCmpKvOptional", a.cuSeqlensCmpKv, "layout BSND"));
  }
  if (!s.hasCmp) {
    if (a.cmpSparseIndices != nullptr) {
      return invalid("cmpKvOptional", "a tensor (cmpSparseIndicesOptional indexes it)", "nullptr or an empty tensor");
    }
    for (const auto& [name, t] :
         {std::pair{"cmpTopkLengthOptional", a.cmpTopkLength}, std::pair{"cmpResidualKvOptional", a.cmpResidualKv},
          std::pair{"sequsedCmpKvOptional", a.sequsedCmpKv}, std::pair{"cuSeqlensCmpKvOptional", a.cuSeqlensCmpKv},
          std::pair{"dCmpKvOutOptional", a.dCmpKv}}) {
      GRADKIT_RETURN_IF_ERROR(mustBeAbsent(name, t, "no cmpKv"));
    }
    if (a.cmpRatio != 1) return invalid("cmpRatio", "1 without cmpKv", std::to_string(a.cmpRatio));
  } else if (a.cmpMaskMode == 3 && a.cmpRatio != 1) {
    GRADKIT_RETURN_IF_ERROR(mustBePresent("cmpResidualKvOptional", a.cmpResidualKv, "cmpMaskMode 3 with cmpRatio > 1"));
  } else {
    GRADKIT_RETURN_IF_ERROR(
        mustBeAbsent("cmpResidualKvOptional", a.cmpResidualKv, "only cmpMaskMode 3 with cmpRatio > 1 takes it"));
  }
  const bool oriListedNoMask = a.oriSparseIndices != nullptr && a.oriMaskMode == 0;
  const bool cmpListedNoMask = a.cmpSparseIndices != nullptr && a.cmpMaskMode == 0;
  if (oriListedNoMask) {
    GRADKIT_RETURN_IF_ERROR(mustBePresent("oriTopkLengthOptional", a.oriTopkLength, "oriSparseIndices, oriMaskMode 0"));
  } else {
    GRADKIT_RETURN_IF_ERROR(
        mustBeAbsent("oriTopkLengthOptional", a.oriTopkLength, "only oriSparseIndices with oriMaskMode 0 take it"));
  }
  if (cmpListedNoMask) {
    GRADKIT_RETURN_IF_ERROR(mustBePresent("cmpTopkLengthOptional", a.cmpTopkLength, "cmpSparseIndices, cmpMaskMode 0"));
  } else {
    GRADKIT_RETURN_IF_ERROR(
        mustBeAbsent("cmpTopkLengthOptional", a.cmpTopkLength, "only cmpSparseIndices with cmpMaskMode 0 take it"));
  }
  if (a.sinks == nullptr) GRADKIT_RETURN_IF_ERROR(mustBeAbsent("dSinksOutOptional", a.dSinks, "no sinks"));
  if (rt::currentSoc() ==
      rt::Soc::Ascend950) {  // upstream's torch API requires it there (A2/A3: the profile forbids it)
    GRADKIT_RETURN_IF_ERROR(
        mustBePresent("metadataOptional", a.metadata, "Ascend950: aclnnSparseFlashMlaGradMetadata's output"));
  }
  if (a.oriSparseIndices == nullptr) {
    GRADKIT_RETURN_IF_ERROR(mustBeAbsent("oriSoftmaxL1NormOptional", a.oriSoftmaxL1Norm, "no oriSparseIndices"));
  }
  if (a.cmpSparseIndices == nullptr) {
    return mustBeAbsent("cmpSoftmaxL1NormOptional", a.cmpSoftmaxL1Norm, "no cmpSparseIndices");
  }
  return mustBePresent("cmpSoftmaxL1NormOptional", a.cmpSoftmaxL1Norm, "cmpSparseIndices (upstream writes it)");
}

/** Phase 3: combinations of features. */
aclnnStatus checkFeatures(const SmlaGradArgs& a, const SmlaShape& s) {
  if (a.cmpSparseIndices != nullptr && a.cmpSparseIndices->viewDims.back() <= 0) {
    return invalid("cmpSparseIndicesOptional", "K2 > 0 (its last dim)", shapeOf(*a.cmpSparseIndices));
  }
  if (a.oriMaskMode != 4 && (a.oriWinLeft != -1 || a.oriWinRight != -1) && rt::currentSoc() == rt::Soc::Ascend950) {
    return invalid("oriWinLeft", "-1 and oriWinRight -1 unless oriMaskMode is 4 (band)",
                   std::to_string(a.oriWinLeft) + " and " + std::to_string(a.oriWinRight) + " with oriMaskMode " +
                       std::to_string(a.oriMaskMode));
  }
  if (!s.hasCmp && a.cmpMaskMode != 0) return invalid("cmpMaskMode", "0 without cmpKv", std::to_string(a.cmpMaskMode));
  return ACLNN_SUCCESS;
}

/** t has the shape and dtype of `reference` (named `referenceName` in the message). */
aclnnStatus checkLike(const char* name, const aclTensor* t, const char* referenceName, const aclTensor& reference) {
  GRADKIT_RETURN_IF_ERROR(checkSameShape(kApi, name, *t, referenceName, reference));
  return checkSameDtype(kApi, name, *t, referenceName, reference);
}

/** Phase 4: cross-tensor shapes. */
aclnnStatus checkShapes(const SmlaGradArgs& a, const SmlaArgs& view, const SmlaShape& s) {
  GRADKIT_RETURN_IF_ERROR(checkLike("dOut", a.dOut, "query", *a.query));
  GRADKIT_RETURN_IF_ERROR(checkLike("out", a.out, "query", *a.query));
  GRADKIT_RETURN_IF_ERROR(checkLike("dQueryOut", a.dQuery, "query", *a.query));
  GRADKIT_RETURN_IF_ERROR(checkSmlaCommonShapes(kNames, view, s));
  GRADKIT_RETURN_IF_ERROR(
      checkShapeIs(kApi, "lse", *a.lse, smlaLseDims(s), "[B, N2, S1, N1 / N2] or [N2, T1, N1 / N2] with N2 = 1"));
  if (a.sinks != nullptr) {
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "sinksOptional", *a.sinks, {s.n1}, "[N1], one sink per query head"));
  }
  if (a.dOriKv != nullptr) GRADKIT_RETURN_IF_ERROR(checkLike("dOriKvOutOptional", a.dOriKv, "oriKvOptional", *a.oriKv));
  if (a.dCmpKv != nullptr) GRADKIT_RETURN_IF_ERROR(checkLike("dCmpKvOutOptional", a.dCmpKv, "cmpKvOptional", *a.cmpKv));
  if (a.dSinks != nullptr) {
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "dSinksOutOptional", *a.dSinks, {s.n1}, "[N1], like sinksOptional"));
  }
  for (const auto& [name, l1, indices] :
       {std::tuple{"oriSoftmaxL1NormOptional", a.oriSoftmaxL1Norm, a.oriSparseIndices},
        std::tuple{"cmpSoftmaxL1NormOptional", a.cmpSoftmaxL1Norm, a.cmpSparseIndices}}) {
    if (l1 != nullptr) GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, name, *l1, indices->viewDims, "its indices' shape"));
  }
  return checkSmlaCount(kApi, "metadataOptional", a.metadata, kMetadataElements,
                        "aclnnSparseFlashMlaGradMetadata's output");
}

/** Phase 5: the A2/A3 profile's narrower rules. */
aclnnStatus checkProfile(const SmlaGradArgs& a, const SmlaShape& s) {
  if (rt::currentSoc() == rt::Soc::Ascend950) return ACLNN_SUCCESS;
  const std::string why = std::string("not supported in the ") + rt::socName(rt::currentSoc()) + " profile";
  for (const auto& [name, t] :
       {std::pair{"oriSparseIndicesOptional", a.oriSparseIndices}, std::pair{"oriTopkLengthOptional", a.oriTopkLength},
        std::pair{"cmpTopkLengthOptional", a.cmpTopkLength}, std::pair{"sequsedQOptional", a.sequsedQ},
        std::pair{"sequsedOriKvOptional", a.sequsedOriKv}, std::pair{"sequsedCmpKvOptional", a.sequsedCmpKv},
        std::pair{"metadataOptional", a.metadata}}) {
    GRADKIT_RETURN_IF_ERROR(mustBeAbsent(name, t, why));
  }
  const std::string profile = std::string(" in the ") + rt::socName(rt::currentSoc()) + " profile";
  if (a.oriMaskMode != 4 || a.oriWinLeft != 127 || a.oriWinRight != 0) {
    return invalid(
        "oriMaskMode", "4 with oriWinLeft 127 and oriWinRight 0" + profile,
        std::to_string(a.oriMaskMode) + " with " + std::to_string(a.oriWinLeft) + ", " + std::to_string(a.oriWinRight));
  }
  if (s.hasCmp && a.cmpMaskMode != 3) {
    return invalid("cmpMaskMode", "3 with cmpKv" + profile, std::to_string(a.cmpMaskMode));
  }
  return ACLNN_SUCCESS;
}

}  // namespace

aclnnStatus checkSparseFlashMlaGrad(const SmlaGradArgs& a, const uint64_t* workspaceSize,
                                    aclOpExecutor* const* executor) {
  GRADKIT_RETURN_IF_ERROR(checkEachNotNull(kApi, {{"query", a.query},
                                                  {"dOut", a.dOut},
                                                  {"out", a.out},
                                                  {"lse", a.lse},
                                                  {"oriKvOptional", a.oriKv},
                                                  {"dQueryOut", a.dQuery}}));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "executor", executor));
  GRADKIT_RETURN_IF_ERROR(checkLayouts(a));
  GRADKIT_RETURN_IF_ERROR(checkSingle(a, *smlaLayoutOf(a.layoutQ) == SmlaLayout::Tnd ? 3 : 4));
  const SmlaArgs view = smlaForwardViewOf(a);
  const SmlaShape shape = smlaShapeOf(view);
  GRADKIT_RETURN_IF_ERROR(checkExistence(a, shape));
  GRADKIT_RETURN_IF_ERROR(checkFeatures(a, shape));
  GRADKIT_RETURN_IF_ERROR(checkShapes(a, view, shape));
  GRADKIT_RETURN_IF_ERROR(checkProfile(a, shape));
  GRADKIT_RETURN_IF_ERROR(checkSmlaValues(kNames, view, shape));
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormats(kApi, {{"query", a.query},
                                                        {"dOut", a.dOut},
                                                        {"out", a.out},
                                                        {"oriKvOptional", a.oriKv},
                                                        {"cmpKvOptional", a.cmpKv},
                                                        {"dQueryOut", a.dQuery},
                                                        {"dOriKvOutOptional", a.dOriKv},
                                                        {"dCmpKvOutOptional", a.dCmpKv}}));
  return checkMemoryRules(kApi,
                          {{"query", a.query},
                           {"dOut", a.dOut},
                           {"out", a.out},
                           {"lse", a.lse},
                           {"oriKvOptional", a.oriKv},
                           {"cmpKvOptional", a.cmpKv},
                           {"oriSparseIndicesOptional", a.oriSparseIndices},
                           {"cmpSparseIndicesOptional", a.cmpSparseIndices},
                           {"cuSeqlensQOptional", a.cuSeqlensQ},
                           {"cuSeqlensOriKvOptional", a.cuSeqlensOriKv},
                           {"cuSeqlensCmpKvOptional", a.cuSeqlensCmpKv},
                           {"sequsedQOptional", a.sequsedQ},
                           {"sequsedOriKvOptional", a.sequsedOriKv},
                           {"sequsedCmpKvOptional", a.sequsedCmpKv},
                           {"cmpResidualKvOptional", a.cmpResidualKv},
                           {"oriTopkLengthOptional", a.oriTopkLength},
                           {"cmpTopkLengthOptional", a.cmpTopkLength},
                           {"sinksOptional", a.sinks},
                           {"metadataOptional", a.metadata}},
                          {{"dQueryOut", a.dQuery},
                           {"dOriKvOutOptional", a.dOriKv},
                           {"dCmpKvOutOptional", a.dCmpKv},
                           {"dSinksOutOptional", a.dSinks},
                           {"oriSoftmaxL1NormOptional", a.oriSoftmaxL1Norm},
                           {"cmpSoftmaxL1NormOptional", a.cmpSoftmaxL1Norm}});
}

}  // namespace gradkit::ops
