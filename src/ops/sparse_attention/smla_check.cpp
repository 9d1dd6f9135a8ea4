// aclnnSparseFlashMla's rules in upstream's order (Ascend950's four-phase checker, with the A2/A3 tiling check's
// narrower limits where the profile says so; docs/sparse_attention.md, "Checks, in order"). Optional tensors of zero
// elements are absent.
#include <climits>
#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "opapi/tensor_rules.h"
#include "ops/sparse_attention/smla_check.h"
#include "runtime/runtime.h"

namespace gradkit::ops {
namespace {

constexpr const char* kApi = kSmlaApi;
constexpr int64_t kMaxRatio = 128;

bool a2a3() { return rt::currentSoc() != rt::Soc::Ascend950; }

aclnnStatus invalid(const char* name, const std::string& expected, const std::string& given) {
  return fail(ACLNN_ERR_PARAM_INVALID, kApi, name, expected, given);
}

std::string text(const char* s) { return s == nullptr ? "nullptr" : std::string("\"") + s + "\""; }

aclnnStatus checkLayouts(const SmlaArgs& a) {
  if (!smlaLayoutOf(a.layoutQ) || (a.layoutQ != nullptr && *smlaLayoutOf(a.layoutQ) == SmlaLayout::PaBbnd)) {
    return invalid("layoutQOptional", "\"BSND\" or \"TND\"", text(a.layoutQ));
  }
  if (!smlaLayoutOf(a.layoutKv))
    return invalid("layoutKvOptional", "\"BSND\", \"TND\" or \"PA_BBND\"", text(a.layoutKv));
  return ACLNN_SUCCESS;
}

aclnnStatus checkIo(const char* name, const aclTensor* t, int64_t rank) { return checkSmlaIo(kApi, name, t, rank); }

aclnnStatus checkInt32(const char* name, const aclTensor* t, int64_t rank, const char* why) {
  return checkSmlaTyped(kApi, name, t, {ACL_INT32}, rank, why);
}

/** Phase 1: each argument alone. */
aclnnStatus checkSingle(const SmlaArgs& a, SmlaLayout layoutQ, SmlaLayout layoutKv) {
  if (!std::isfinite(a.softmaxScale)) return invalid("softmaxScale", "a finite value", std::to_string(a.softmaxScale));
  const int64_t qRank = layoutQ == SmlaLayout::Bsnd ? 4 : 3, kvRank = layoutKv == SmlaLayout::Tnd ? 3 : 4;
  GRADKIT_RETURN_IF_ERROR(checkIo("q", a.q, qRank));
  if (a.q->isEmpty()) return invalid("q", "no dim of 0 (an empty q is not supported)", "shape " + a.q->shapeString());
  GRADKIT_RETURN_IF_ERROR(checkIo("oriKvOptional", a.oriKv, kvRank));
  GRADKIT_RETURN_IF_ERROR(checkIo("cmpKvOptional", a.cmpKv, kvRank));
  GRADKIT_RETURN_IF_ERROR(checkIo("attnOutOut", a.attnOut, qRank));
  const char* lengthsWhy = "1 dim ([B + 1] or [B])";
  GRADKIT_RETURN_IF_ERROR(checkInt32("cuSeqlensQOptional", a.cuSeqlensQ, 1, lengthsWhy));
  GRADKIT_RETURN_IF_ERROR(checkInt32("cuSeqlensOriKvOptional", a.cuSeqlensOriKv, 1, lengthsWhy));
  GRADKIT_RETURN_IF_ERROR(checkInt32("cuSeqlensCmpKvOptional", a.cuSeqlensCmpKv, 1, lengthsWhy));
  GRADKIT_RETURN_IF_ERROR(checkInt32("sequsedQOptional", a.sequsedQ, 1, lengthsWhy));
  GRADKIT_RETURN_IF_ERROR(checkInt32("sequsedOriKvOptional", a.sequsedOriKv, 1, lengthsWhy));
  GRADKIT_RETURN_IF_ERROR(checkInt32("sequsedCmpKvOptional", a.sequsedCmpKv, 1, lengthsWhy));
  GRADKIT_RETURN_IF_ERROR(checkInt32("cmpResidualKvOptional", a.cmpResidualKv, 1, lengthsWhy));
  if (a.cmpRatio < 1 || a.cmpRatio > kMaxRatio) return invalid("cmpRatio", "1 .. 128", std::to_string(a.cmpRatio));
  if (a.topkValueMode != 1)
    return invalid("topkValueMode", "1 (logical token indices)", std::to_string(a.topkValueMode));
  const char* indicesWhy = qRank == 4 ? "[B, S1, 1, K] (layoutQ BSND)" : "[T1, 1, K] (layoutQ TND)";
  GRADKIT_RETURN_IF_ERROR(checkInt32("oriSparseIndicesOptional", a.oriSparseIndices, qRank, indicesWhy));
  GRADKIT_RETURN_IF_ERROR(checkInt32("cmpSparseIndicesOptional", a.cmpSparseIndices, qRank, indicesWhy));
  const char* lengthWhy = qRank == 4 ? "[B, S1, 1] (layoutQ BSND)" : "[T1, 1] (layoutQ TND)";
  GRADKIT_RETURN_IF_ERROR(checkInt32("oriTopkLengthOptional", a.oriTopkLength, qRank - 1, lengthWhy));
  GRADKIT_RETURN_IF_ERROR(checkInt32("cmpTopkLengthOptional", a.cmpTopkLength, qRank - 1, lengthWhy));
  GRADKIT_RETURN_IF_ERROR(checkSmlaModesAndWindows(kApi, a));
  GRADKIT_RETURN_IF_ERROR(checkInt32("oriBlockTableOptional", a.oriBlockTable, 2, "[B, blocks per batch]"));
  GRADKIT_RETURN_IF_ERROR(checkInt32("cmpBlockTableOptional", a.cmpBlockTable, 2, "[B, blocks per batch]"));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "sinksOptional", *a.sinks, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "sinksOptional", *a.sinks, {1}, "[N1]"));
  GRADKIT_RETURN_IF_ERROR(checkInt32("metadataOptional", a.metadata, 1, "[1024]"));
  if (a.softmaxLse != nullptr)
    GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "softmaxLseOutOptional", *a.softmaxLse, {ACL_FLOAT}));
  return ACLNN_SUCCESS;
}

aclnnStatus mustBeAbsent(const char* name, const aclTensor* t, const char* why) {
  if (t == nullptr) return ACLNN_SUCCESS;
  return invalid(name, std::string("nullptr or an empty tensor (") + why + ")", "shape " + t->shapeString());
}

aclnnStatus mustBePresent(const char* name, const aclTensor* t, const char* why) {
  if (t != nullptr) return ACLNN_SUCCESS;
  return invalid(name, std::string("a tensor (") + why + ")", "nullptr or an empty tensor");
}

/** Phase 2: which optional tensors the call's layouts and modes need or forbid. */
aclnnStatus checkExistence(const SmlaArgs& a, const SmlaShape& s) {
  const bool tndQ = s.layoutQ == SmlaLayout::Tnd, tndKv = s.layoutKv == SmlaLayout::Tnd;
  const bool paged = s.layoutKv == SmlaLayout::PaBbnd;
  if (tndQ) GRADKIT_RETURN_IF_ERROR(mustBePresent("cuSeqlensQOptional", a.cuSeqlensQ, "layoutQ TND"));
  if (!tndQ) GRADKIT_RETURN_IF_ERROR(mustBeAbsent("cuSeqlensQOptional", a.cuSeqlensQ, "layoutQ BSND"));
  if (tndKv) {
    GRADKIT_RETURN_IF_ERROR(mustBePresent("cuSeqlensOriKvOptional", a.cuSeqlensOriKv, "layoutKv TND"));
    if (s.hasCmp)
      GRADKIT_RETURN_IF_ERROR(mustBePresent("cuSeqlensCmpKvOptional", a.cuSeqlensCmpKv, "layoutKv TND with cmpKv"));
  } else {
    GRADKIT_RETURN_IF_ERROR(mustBeAbsent("cuSeqlensOriKvOptional", a.cuSeqlensOriKv, "layoutKv not TND"));
    GRADKIT_RETURN_IF_ERROR(mustBeAbsent("cuSeqlensCmpKvOptional", a.cuSeqlensCmpKv, "layoutKv not TND"));
  }
  if (!s.hasCmp) {
    if (a.cmpSparseIndices != nullptr) {
      return invalid("cmpKvOptional", "a tensor (cmpSparseIndicesOptional indexes it)", "nullptr or an empty tensor");
    }
    GRADKIT_RETURN_IF_ERROR(mustBeAbsent("cmpTopkLengthOptional", a.cmpTopkLength, "no cmpKv"));
    GRADKIT_RETURN_IF_ERROR(mustBeAbsent("cmpResidualKvOptional", a.cmpResidualKv, "no cmpKv"));
    GRADKIT_RETURN_IF_ERROR(mustBeAbsent("cmpBlockTableOptional", a.cmpBlockTable, "no cmpKv"));
    GRADKIT_RETURN_IF_ERROR(mustBeAbsent("sequsedCmpKvOptional", a.sequsedCmpKv, "no cmpKv"));
    if (a.cmpRatio != 1) return invalid("cmpRatio", "1 without cmpKv", std::to_string(a.cmpRatio));
  } else {
    const bool residualNeeded = a.cmpMaskMode == 3 && a.cmpRatio != 1;
    if (residualNeeded) {
      GRADKIT_RETURN_IF_ERROR(
          mustBePresent("cmpResidualKvOptional", a.cmpResidualKv, "cmpMaskMode 3 with cmpRatio > 1"));
    } else {
      GRADKIT_RETURN_IF_ERROR(
          mustBeAbsent("cmpResidualKvOptional", a.cmpResidualKv, "only cmpMaskMode 3 with cmpRatio > 1 takes it"));
    }
  }
  const bool oriListedNoMask = a.oriSparseIndices != nullptr && a.oriMaskMode == 0;
  const bool cmpListedNoMask = a.cmpSparseIndices != nullptr && a.cmpMaskMode == 0;
  if (oriListedNoMask) {
    GRADKIT_RETURN_IF_ERROR(
        mustBePresent("oriTopkLengthOptional", a.oriTopkLength, "oriSparseIndices with oriMaskMode 0"));
  } else {
    GRADKIT_RETURN_IF_ERROR(
        mustBeAbsent("oriTopkLengthOptional", a.oriTopkLength, "only oriSparseIndices with oriMaskMode 0 take it"));
  }
  if (cmpListedNoMask && !a2a3()) {
    GRADKIT_RETURN_IF_ERROR(
        mustBePresent("cmpTopkLengthOptional", a.cmpTopkLength, "cmpSparseIndices with cmpMaskMode 0"));
  } else {
    GRADKIT_RETURN_IF_ERROR(
        mustBeAbsent("cmpTopkLengthOptional", a.cmpTopkLength,
                     a2a3() ? "reserved in the A2/A3 profile" : "only cmpSparseIndices with cmpMaskMode 0 take it"));
  }
  if (!paged) {
    GRADKIT_RETURN_IF_ERROR(mustBeAbsent("oriBlockTableOptional", a.oriBlockTable, "layoutKv not PA_BBND"));
    GRADKIT_RETURN_IF_ERROR(mustBeAbsent("cmpBlockTableOptional", a.cmpBlockTable, "layoutKv not PA_BBND"));
  } else {
    GRADKIT_RETURN_IF_ERROR(mustBePresent("oriBlockTableOptional", a.oriBlockTable, "layoutKv PA_BBND"));
    if (s.hasCmp)
      GRADKIT_RETURN_IF_ERROR(mustBePresent("cmpBlockTableOptional", a.cmpBlockTable, "layoutKv PA_BBND with cmpKv"));
    if (!oriListedNoMask) {
      GRADKIT_RETURN_IF_ERROR(mustBePresent("sequsedOriKvOptional", a.sequsedOriKv, "layoutKv PA_BBND"));
    }
    if (s.hasCmp && !(cmpListedNoMask && a.cmpTopkLength != nullptr)) {
      GRADKIT_RETURN_IF_ERROR(mustBePresent("sequsedCmpKvOptional", a.sequsedCmpKv, "layoutKv PA_BBND with cmpKv"));
    }
  }
  if (a.returnSoftmaxLse)
    GRADKIT_RETURN_IF_ERROR(mustBePresent("softmaxLseOutOptional", a.softmaxLse, "returnSoftmaxLse"));
  return ACLNN_SUCCESS;
}

/** Phase 3: combinations of features. */
aclnnStatus checkFeatures(const SmlaArgs& a, const SmlaShape& s) {
  if (s.layoutKv != SmlaLayout::PaBbnd && s.layoutKv != s.layoutQ) {
    return invalid("layoutKvOptional", std::string("layoutQ's ") + smlaLayoutName(s.layoutQ) + " or PA_BBND",
                   smlaLayoutName(s.layoutKv));
  }
  if (a.cmpSparseIndices != nullptr && a.cmpSparseIndices->viewDims.back() <= 0) {
    return invalid("cmpSparseIndicesOptional", "K2 > 0 (its last dim)", "shape " + a.cmpSparseIndices->shapeString());
  }
  if (!a2a3() && a.oriMaskMode != 4 && (a.oriWinLeft != -1 || a.oriWinRight != -1)) {
    return invalid("oriWinLeft", "-1 and oriWinRight -1 unless oriMaskMode is 4 (band)",
                   std::to_string(a.oriWinLeft) + " and " + std::to_string(a.oriWinRight) + " with oriMaskMode " +
                       std::to_string(a.oriMaskMode));
  }
  if (!s.hasCmp && a.cmpMaskMode != 0) return invalid("cmpMaskMode", "0 without cmpKv", std::to_string(a.cmpMaskMode));
  return ACLNN_SUCCESS;
}

}  // namespace

aclnnStatus checkSmlaTyped(const char* api, const char* name, const aclTensor* t,
                           std::initializer_list<aclDataType> types, int64_t rank, const char* why) {
  if (t == nullptr) return ACLNN_SUCCESS;
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, name, *t, types));
  return checkRankIn(api, name, *t, {rank}, why);
}

aclnnStatus checkSmlaIo(const char* api, const char* name, const aclTensor* t, int64_t rank) {
  return checkSmlaTyped(api, name, t, {ACL_FLOAT16, ACL_BF16}, rank,
                        rank == 4 ? "4 dims for this layout" : "3 dims for this layout");
}

aclnnStatus checkSmlaModesAndWindows(const char* api, const SmlaArgs& a) {
  if (a.oriMaskMode != 0 && a.oriMaskMode != 3 && a.oriMaskMode != 4) {
    return fail(ACLNN_ERR_PARAM_INVALID, api, "oriMaskMode", "0 (none), 3 (causal) or 4 (band)",
                std::to_string(a.oriMaskMode));
  }
  if (a.cmpMaskMode != 0 && a.cmpMaskMode != 3) {
    return fail(ACLNN_ERR_PARAM_INVALID, api, "cmpMaskMode", "0 (none) or 3 (causal)", std::to_string(a.cmpMaskMode));
  }
  for (const auto& [name, value] : {std::pair{"oriWinLeft", a.oriWinLeft}, std::pair{"oriWinRight", a.oriWinRight}}) {
    if (value < -1 || value > INT32_MAX) {
      return fail(ACLNN_ERR_PARAM_INVALID, api, name, "-1 (unbounded) or 0 .. 2147483647", std::to_string(value));
    }
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkSmlaShapes(const SmlaArgs& a, const SmlaShape& s);
aclnnStatus checkSmlaProfile(const SmlaArgs& a, const SmlaShape& s);

aclnnStatus checkSparseFlashMla(const SmlaArgs& a, const uint64_t* workspaceSize, aclOpExecutor* const* executor) {
  GRADKIT_RETURN_IF_ERROR(checkEachNotNull(kApi, {{"q", a.q},
                                                  {"oriKvOptional", a.oriKv},
                                                  {"sinksOptional", a.sinks},
                                                  {"metadataOptional", a.metadata},
                                                  {"attnOutOut", a.attnOut}}));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "executor", executor));
  GRADKIT_RETURN_IF_ERROR(checkLayouts(a));
  GRADKIT_RETURN_IF_ERROR(checkSingle(a, *smlaLayoutOf(a.layoutQ), *smlaLayoutOf(a.layoutKv)));
  const SmlaShape shape = smlaShapeOf(a);
  GRADKIT_RETURN_IF_ERROR(checkExistence(a, shape));
  GRADKIT_RETURN_IF_ERROR(checkFeatures(a, shape));
  GRADKIT_RETURN_IF_ERROR(checkSmlaShapes(a, shape));
  GRADKIT_RETURN_IF_ERROR(checkSmlaProfile(a, shape));
  GRADKIT_RETURN_IF_ERROR(checkSmlaValues({kApi, "q"}, a, shape));
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormats(
      kApi, {{"q", a.q}, {"oriKvOptional", a.oriKv}, {"cmpKvOptional", a.cmpKv}, {"attnOutOut", a.attnOut}}));
  return checkMemoryRules(kApi,
                          {{"q", a.q},
                           {"oriKvOptional", a.oriKv},
                           {"cmpKvOptional", a.cmpKv},
                           {"oriSparseIndicesOptional", a.oriSparseIndices},
                           {"cmpSparseIndicesOptional", a.cmpSparseIndices},
                           {"oriBlockTableOptional", a.oriBlockTable},
                           {"cmpBlockTableOptional", a.cmpBlockTable},
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
                          {{"attnOutOut", a.attnOut}, {"softmaxLseOutOptional", a.softmaxLse}});
}

}  // namespace gradkit::ops
