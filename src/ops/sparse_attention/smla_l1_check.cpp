// aclnnSparseFlashMlaSoftmaxL1Norm's rules in upstream's order (the tiling's Validate* functions; upstream's op-api
// adds nothing before them but the null checks), then gradkit's additions (smla_l1_check_values.cpp). Optional tensors
// of zero elements are absent.
#include <cmath>
#include <string>
#include <vector>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "opapi/tensor_rules.h"
#include "ops/sparse_attention/smla_l1_check.h"
#include "ops/sparse_attention/smla_metadata_rules.h"
#include "ops/sparse_attention/smla_sizes.h"

namespace gradkit::ops {
namespace {

constexpr const char* kApi = kSmlaL1Api;
constexpr int64_t kHeadDim = 512, kMaxHeads = 128, kMaxRatio = 128;

aclnnStatus invalid(const char* name, const std::string& expected, const std::string& given) {
  return fail(ACLNN_ERR_PARAM_INVALID, kApi, name, expected, given);
}

std::string text(const char* s) { return s == nullptr ? "nullptr" : std::string("\"") + s + "\""; }
std::string shapeOf(const aclTensor& t) { return "shape " + t.shapeString(); }

bool tnd(const SmlaL1Args& a) { return *smlaLayoutOf(a.layoutQ) == SmlaLayout::Tnd; }

/** Upstream's ValidateLayout: BSND or TND each (null: upstream's default BSND), the same. */
aclnnStatus checkLayouts(const SmlaL1Args& a) {
  const auto q = smlaLayoutOf(a.layoutQ), k = smlaLayoutOf(a.layoutK);
  if (!q || *q == SmlaLayout::PaBbnd) return invalid("layoutQOptional", "\"BSND\" or \"TND\"", text(a.layoutQ));
  if (!k || *k == SmlaLayout::PaBbnd) return invalid("layoutKOptional", "\"BSND\" or \"TND\"", text(a.layoutK));
  if (*q != *k) {
    return invalid("layoutKOptional", std::string("layoutQOptional's ") + smlaLayoutName(*q), smlaLayoutName(*k));
  }
  return ACLNN_SUCCESS;
}

/** Upstream's ValidateDtypes, then q and k of one dtype (the torch API's rule). */
aclnnStatus checkDtypes(const SmlaL1Args& a) {
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "q", *a.q, {ACL_FLOAT16, ACL_BF16}));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "k", *a.k, {ACL_FLOAT16, ACL_BF16}));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "softmaxLse", *a.softmaxLse, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "softmaxL1Norm", *a.softmaxL1Norm, {ACL_FLOAT}));
  for (const auto& [name, t] :
       {std::pair{"sparseIndicesOptional", a.sparseIndices}, std::pair{"cuSeqlensQOptional", a.cuSeqlensQ},
        std::pair{"cuSeqlensKOptional", a.cuSeqlensK}, std::pair{"sequsedQOptional", a.sequsedQ},
        std::pair{"sequsedKOptional", a.sequsedK}, std::pair{"cmpResidualKOptional", a.cmpResidualK},
        std::pair{"topkLengthOptional", a.topkLength}}) {
    if (t != nullptr) GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, name, *t, {ACL_INT32}));
  }
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "metadataOptional", *a.metadata, {ACL_INT32}));
  return checkSameDtype(kApi, "k", *a.k, "q", *a.q);
}

/** Upstream's ValidateInputDims and ValidateAttrRanges. */
aclnnStatus checkRanksAndAttributes(const SmlaL1Args& a) {
  const int64_t rank = tnd(a) ? 3 : 4;
  const char* why = tnd(a) ? "3 dims (layout TND)" : "4 dims (layout BSND)";
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "q", *a.q, {rank}, why));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "k", *a.k, {rank}, why));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "softmaxLse", *a.softmaxLse, {rank}, why));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "metadataOptional", *a.metadata, {1}, "1 dim [64]"));
  if (a.cmpRatio < 1 || a.cmpRatio > kMaxRatio) return invalid("cmpRatio", "1 .. 128", std::to_string(a.cmpRatio));
  if (a.maskMode != 0 && a.maskMode != 3) {
    return invalid("maskMode", "0 (none) or 3 (right-down causal)", std::to_string(a.maskMode));
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkKeyHead(const aclTensor& k) {
  const int64_t rank = k.dim();
  if (k.viewDims[rank - 2] != 1)
    return invalid("k", "N2 = 1 (one key head, dim " + std::to_string(rank - 2) + ")", shapeOf(k));
  if (k.viewDims[rank - 1] != kHeadDim) return invalid("k", "D = 512 (the last dim)", shapeOf(k));
  return ACLNN_SUCCESS;
}

aclnnStatus checkLength1d(const char* name, const aclTensor* t, int64_t elements, const char* why) {
  if (t == nullptr) return ACLNN_SUCCESS;
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, name, *t, {1}, why));
  if (elements >= 0 && t->viewDims[0] != elements) {
    return invalid(name, std::to_string(elements) + " elements (" + why + ")", shapeOf(*t));
  }
  return ACLNN_SUCCESS;
}

/** Upstream's ValidateAndExtractShapes{Tnd,Bsnd}: the key's head, the prefix sums, the batch. */
aclnnStatus checkLayoutShapes(const SmlaL1Args& a, const SmlaShape& s) {
  if (!tnd(a)) {
    if (a.k->viewDims[0] != s.batch) {
      return invalid("k", "dim 0 = B = " + std::to_string(s.batch) + " (q's dim 0)", shapeOf(*a.k));
    }
    GRADKIT_RETURN_IF_ERROR(checkKeyHead(*a.k));
    if (a.cuSeqlensQ != nullptr) {
      return invalid("cuSeqlensQOptional", "nullptr or an empty tensor (layout BSND)", shapeOf(*a.cuSeqlensQ));
    }
    if (a.cuSeqlensK != nullptr) {
      return invalid("cuSeqlensKOptional", "nullptr or an empty tensor (layout BSND)", shapeOf(*a.cuSeqlensK));
    }
    return ACLNN_SUCCESS;
  }
  GRADKIT_RETURN_IF_ERROR(checkKeyHead(*a.k));
  if (a.cuSeqlensQ == nullptr)
    return invalid("cuSeqlensQOptional", "a tensor (layout TND)", "nullptr or an empty tensor");
  if (a.cuSeqlensK == nullptr)
    return invalid("cuSeqlensKOptional", "a tensor (layout TND)", "nullptr or an empty tensor");
  GRADKIT_RETURN_IF_ERROR(checkLength1d("cuSeqlensQOptional", a.cuSeqlensQ, -1, "1 dim [B + 1]"));
  GRADKIT_RETURN_IF_ERROR(checkLength1d("cuSeqlensKOptional", a.cuSeqlensK, -1, "1 dim [B + 1]"));
  return checkLength1d("cuSeqlensKOptional", a.cuSeqlensK, s.batch + 1, "B + 1, as cuSeqlensQOptional");
}

/** Upstream's ValidateShapeRanges and ValidateLseShape. */
aclnnStatus checkHeadsAndLse(const SmlaL1Args& a, const SmlaShape& s) {
  if (s.n1 < 1 || s.n1 > kMaxHeads) return invalid("q", "N1 (heads) of 1 .. 128", shapeOf(*a.q));
  if (s.d != kHeadDim) return invalid("q", "D = 512 (the last dim)", shapeOf(*a.q));
  const std::vector<int64_t> lse =
      tnd(a) ? std::vector<int64_t>{1, s.tokens, s.n1} : std::vector<int64_t>{s.batch, 1, s.s1, s.n1};
  return checkShapeIs(kApi, "softmaxLse", *a.softmaxLse, lse,
                      tnd(a) ? "[N2, T1, G] with N2 = 1, G = N1" : "[B, N2, S1, G] with N2 = 1, G = N1");
}

/** Upstream's ValidateOptionalShapeInputs and ValidateSparseInfo. */
aclnnStatus checkOptionalInputs(const SmlaL1Args& a, const SmlaShape& s) {
  if (a.maskMode == 3 && a.cmpRatio > 1 && a.cmpResidualK == nullptr) {
    return invalid("cmpResidualKOptional", "a tensor (maskMode 3 with cmpRatio > 1)", "nullptr or an empty tensor");
  }
  GRADKIT_RETURN_IF_ERROR(checkLength1d("cmpResidualKOptional", a.cmpResidualK, s.batch, "B, one per batch"));
  GRADKIT_RETURN_IF_ERROR(checkLength1d("sequsedQOptional", a.sequsedQ, s.batch, "B, one per batch"));
  GRADKIT_RETURN_IF_ERROR(checkLength1d("sequsedKOptional", a.sequsedK, s.batch, "B, one per batch"));
  if (a.sparseIndices == nullptr) return ACLNN_SUCCESS;
  const int64_t rank = tnd(a) ? 3 : 4;
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "sparseIndicesOptional", *a.sparseIndices, {rank},
                                      tnd(a) ? "3 dims [T1, N2, K]" : "4 dims [B, S1, N2, K]"));
  if (a.maskMode != 0) return ACLNN_SUCCESS;
  if (a.topkLength == nullptr) {
    return invalid("topkLengthOptional", "a tensor (maskMode 0 with sparseIndicesOptional)",
                   "nullptr or an empty tensor");
  }
  return checkRankIn(kApi, "topkLengthOptional", *a.topkLength, {rank - 1},
                     tnd(a) ? "2 dims [T1, N2]" : "3 dims [B, S1, N2]");
}

}  // namespace

int64_t smlaL1Width(const SmlaL1Args& a) {
  if (a.sparseIndices != nullptr) return a.sparseIndices->viewDims.back();
  return tnd(a) ? a.maxSeqlenK : a.k->viewDims[1];
}

aclnnStatus checkSparseFlashMlaSoftmaxL1Norm(const SmlaL1Args& a, const uint64_t* workspaceSize,
                                             aclOpExecutor* const* executor) {
  GRADKIT_RETURN_IF_ERROR(checkEachNotNull(kApi, {{"q", a.q},
                                                  {"k", a.k},
                                                  {"softmaxLse", a.softmaxLse},
                                                  {"softmaxL1Norm", a.softmaxL1Norm},
                                                  {"metadataOptional", a.metadata}}));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "executor", executor));
  GRADKIT_RETURN_IF_ERROR(checkSmlaAscend950Only(kApi));
  GRADKIT_RETURN_IF_ERROR(checkLayouts(a));
  GRADKIT_RETURN_IF_ERROR(checkDtypes(a));
  GRADKIT_RETURN_IF_ERROR(checkRanksAndAttributes(a));
  const SmlaShape shape = smlaShapeOf(smlaL1ProblemArgs(a));
  GRADKIT_RETURN_IF_ERROR(checkLayoutShapes(a, shape));
  GRADKIT_RETURN_IF_ERROR(checkHeadsAndLse(a, shape));
  GRADKIT_RETURN_IF_ERROR(checkOptionalInputs(a, shape));
  return checkSmlaL1Additions(a);
}

}  // namespace gradkit::ops
