// aclnnSparseLightningIndexerKLLossGrad's checks (docs/sparse_lightning_indexer_kl_loss_grad.md "Checks"; DECISIONS.md
// "For every operator" 1, 2, 5), each failure "<api>: argument '<name>': expected ..., given ...":
//   1. the generated layer: null q, k, w, sparseIndices, attnSoftmaxL1Norm, dq, dk, dw, softmaxOut, layoutQ, layoutK
//      -> 161001; on Ascend950 a null metadataOptional (the tiling requires it) -> 161001; workspaceSize, executor ->
//      161001. The op definition's dtypes: q FLOAT16 / BFLOAT16, k as q, w FLOAT, sparseIndices INT32,
//      attnSoftmaxL1Norm FLOAT, each given optional INT32, dq and dk as q, dw and softmaxOut FLOAT -> 161002.
//   2. the tiling (561002 upstream, 161002 here): layoutQ and layoutK in {TND, BSND} and equal; maskMode 0 or 3;
//      cmpRatio in [1, 128]; on Ascend950 maskMode 3 with cmpRatio != 1 needs cmpResidualKOptional. Ranks of q, k,
//      sparseIndices, attnSoftmaxL1Norm (the layout's) and w; dq, dk, softmaxOut, dw the shapes of q, k,
//      attnSoftmaxL1Norm, w. TND: both cu_seqlens (1-D, B + 1 >= 2 elements, equal sizes). N1 (Ascend950 [1, 128];
//      A2/A3 {8, 16, 32, 64}), N2 = 1, D = 128 for q and k, K (Ascend950 [1, 2048]; A2/A3 512 or 1024 m <= 8192),
//      no empty tensor (B, S1, S2, T1, T2 >= 1). Cross shapes: k, w, sparseIndices, attnSoftmaxL1Norm as q's dims say.
//   3. gradkit's: seqUsedQ/K and cmpResidualK 1-D with B elements; metadata 1-D with 64 elements (A2/A3: required
//      when a seqUsed tensor is given); private formats; memory rules (opapi/tensor_rules.h); then the values
//      (kl_grad_check_values.cpp).
#include "ops/lightning_indexer/kl_grad_check.h"

#include <string>
#include <vector>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor_rules.h"
#include "ops/lightning_indexer/kl_grad_check_values.h"
#include "runtime/runtime.h"

namespace gradkit::ops {
namespace {

constexpr const char* kApi = kKlGradApi;

std::vector<NamedTensor> inputsOf(const KlGradArgs& a) {
  return {{"q", a.q},
          {"k", a.k},
          {"w", a.w},
          {"sparseIndices", a.sparseIndices},
          {"attnSoftmaxL1Norm", a.attnSoftmaxL1Norm}};
}

std::vector<NamedTensor> optionalsOf(const KlGradArgs& a) {
  return {{"cuSeqLensQOptional", a.cuSeqLensQ},     {"cuSeqLensKOptional", a.cuSeqLensK},
          {"seqUsedQOptional", a.seqUsedQ},         {"seqUsedKOptional", a.seqUsedK},
          {"cmpResidualKOptional", a.cmpResidualK}, {"metadataOptional", a.metadata}};
}

std::vector<NamedTensor> outputsOf(const KlGradArgs& a) {
  return {{"dq", a.dq}, {"dk", a.dk}, {"dw", a.dw}, {"softmaxOut", a.softmaxOut}};
}

std::string socText() { return rt::socName(rt::currentSoc()); }

aclnnStatus checkRequired(const KlGradArgs& a, const uint64_t* workspaceSize, aclOpExecutor* const* executor) {
  GRADKIT_RETURN_IF_ERROR(checkEachNotNull(kApi, inputsOf(a)));
  GRADKIT_RETURN_IF_ERROR(checkEachNotNull(kApi, outputsOf(a)));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "layoutQ", a.layoutQ));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "layoutK", a.layoutK));
  if (klProfileIs950() && a.metadata == nullptr) {
    return fail(
        ACLNN_ERR_PARAM_NULLPTR, kApi, "metadataOptional",
        "a metadata tensor (required on Ascend950: the output of aclnnSparseLightningIndexerKLLossGradMetadata)",
        "nullptr");
  }
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "workspaceSize", workspaceSize));
  return checkNotNull(kApi, "executor", executor);
}

aclnnStatus checkDtypes(const KlGradArgs& a) {
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "q", *a.q, {ACL_FLOAT16, ACL_BF16}));
  GRADKIT_RETURN_IF_ERROR(checkSameDtype(kApi, "k", *a.k, "q", *a.q));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "w", *a.w, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "sparseIndices", *a.sparseIndices, {ACL_INT32}));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "attnSoftmaxL1Norm", *a.attnSoftmaxL1Norm, {ACL_FLOAT}));
  for (const NamedTensor& t : optionalsOf(a)) {
    if (t.tensor != nullptr) GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, t.name, *t.tensor, {ACL_INT32}));
  }
  GRADKIT_RETURN_IF_ERROR(checkSameDtype(kApi, "dq", *a.dq, "q", *a.q));
  GRADKIT_RETURN_IF_ERROR(checkSameDtype(kApi, "dk", *a.dk, "q", *a.q));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "dw", *a.dw, {ACL_FLOAT}));
  return checkDtypeIn(kApi, "softmaxOut", *a.softmaxOut, {ACL_FLOAT});
}

aclnnStatus checkAttributes(const KlGradArgs& a) {
  for (const auto& [name, value] : {std::pair{"layoutQ", a.layoutQ}, std::pair{"layoutK", a.layoutK}}) {
    if (!klLayoutFromName(value)) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, name, "\"TND\" or \"BSND\"", std::string("\"") + value + "\"");
    }
  }
  if (*klLayoutFromName(a.layoutQ) != *klLayoutFromName(a.layoutK)) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "layoutK", std::string("the layout of layoutQ (\"") + a.layoutQ + "\")",
                std::string("\"") + a.layoutK + "\"");
  }
  if (a.maskMode != 0 && a.maskMode != 3) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "maskMode", "0 (no mask) or 3 (right-down causal)",
                std::to_string(a.maskMode));
  }
  if (a.cmpRatio < 1 || a.cmpRatio > kKlMaxCmpRatio) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "cmpRatio", "a value in [1, 128]", std::to_string(a.cmpRatio));
  }
  if (klProfileIs950() && a.maskMode == 3 && a.cmpRatio != 1 && a.cmpResidualK == nullptr) {
    return fail(
        ACLNN_ERR_PARAM_INVALID, kApi, "cmpResidualKOptional",
        "a tensor when maskMode is 3 and cmpRatio is not 1 (Ascend950; cmpRatio " + std::to_string(a.cmpRatio) + ")",
        "nullptr");
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkRanks(const KlGradArgs& a, KlLayout layout) {
  const int64_t rank = klLayoutRank(layout);
  const std::string why = std::string("layout ") + klLayoutName(layout) + ": ";
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "q", *a.q, {rank}, why + klShapeLetters(layout, "q")));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "k", *a.k, {rank}, why + klShapeLetters(layout, "k")));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "w", *a.w, {rank - 1}, why + klShapeLetters(layout, "w")));
  for (const NamedTensor& t :
       {NamedTensor{"sparseIndices", a.sparseIndices}, NamedTensor{"attnSoftmaxL1Norm", a.attnSoftmaxL1Norm}}) {
    GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, t.name, *t.tensor, {rank}, why + klShapeLetters(layout, "sparse")));
  }
  GRADKIT_RETURN_IF_ERROR(checkSameShape(kApi, "dq", *a.dq, "q", *a.q));
  GRADKIT_RETURN_IF_ERROR(checkSameShape(kApi, "dk", *a.dk, "k", *a.k));
  GRADKIT_RETURN_IF_ERROR(checkSameShape(kApi, "softmaxOut", *a.softmaxOut, "attnSoftmaxL1Norm", *a.attnSoftmaxL1Norm));
  return checkSameShape(kApi, "dw", *a.dw, "w", *a.w);
}

/** TND: both cu_seqlens present, 1-D, B + 1 >= 2 elements each, the same size. */
aclnnStatus checkCuSeqLens(const KlGradArgs& a) {
  for (const NamedTensor& t :
       {NamedTensor{"cuSeqLensQOptional", a.cuSeqLensQ}, NamedTensor{"cuSeqLensKOptional", a.cuSeqLensK}}) {
    if (t.tensor == nullptr) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, t.name, "a tensor [B + 1] (the layout is TND)", "nullptr");
    }
    GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, t.name, *t.tensor, {1}, "[B + 1]"));
    if (t.tensor->viewDims[0] < 2) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, t.name, "B + 1 >= 2 elements (B >= 1)",
                  "shape " + t.tensor->shapeString());
    }
  }
  return checkSameShape(kApi, "cuSeqLensKOptional", *a.cuSeqLensK, "cuSeqLensQOptional", *a.cuSeqLensQ);
}

aclnnStatus dimFail(const char* name, const aclTensor& t, const std::string& expected, const std::string& given) {
  return fail(ACLNN_ERR_PARAM_INVALID, kApi, name, expected, given + ", shape " + t.shapeString());
}

aclnnStatus checkDims(const KlGradArgs& a, const KlDims& d) {
  const bool bsnd = d.layout == KlLayout::BSND;
  if (bsnd) {
    if (d.batch < 1) return dimFail("q", *a.q, "B (dim 0) >= 1 (empty tensors are not supported)", "B = 0");
    if (d.s1 < 1) return dimFail("q", *a.q, "S1 (dim 1) >= 1 (empty tensors are not supported)", "S1 = 0");
    if (d.s2 < 1) return dimFail("k", *a.k, "S2 (dim 1) >= 1 (empty tensors are not supported)", "S2 = 0");
  } else {
    if (d.s1 < 1) return dimFail("q", *a.q, "T1 (dim 0) >= 1 (empty tensors are not supported)", "T1 = 0");
    if (d.s2 < 1) return dimFail("k", *a.k, "T2 (dim 0) >= 1 (empty tensors are not supported)", "T2 = 0");
  }
  std::string rule;
  if (!klHeadsAllowed(d.n1, &rule)) {
    return dimFail("q", *a.q, rule + " on " + socText(), "N1 = " + std::to_string(d.n1));
  }
  if (d.n2 != 1) return dimFail("k", *a.k, "N2 (dim -2) = 1", "N2 = " + std::to_string(d.n2));
  if (d.dq != kernels::kKlHeadDim) return dimFail("q", *a.q, "D (last dim) = 128", "D = " + std::to_string(d.dq));
  if (d.dk != kernels::kKlHeadDim) return dimFail("k", *a.k, "D (last dim) = 128", "D = " + std::to_string(d.dk));
  if (!klTopkAllowed(d.topk, &rule)) {
    return dimFail("sparseIndices", *a.sparseIndices, rule + " on " + socText(), "K = " + std::to_string(d.topk));
  }
  const std::string letters = std::string(" (layout ") + klLayoutName(d.layout) + ", dims of q";
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "k", *a.k, klKeyShape(d), letters + (bsnd ? ": B)" : ")")));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "w", *a.w, klWeightShape(d), letters + ")"));
  GRADKIT_RETURN_IF_ERROR(
      checkShapeIs(kApi, "sparseIndices", *a.sparseIndices, klSparseShape(d), letters + ", N2 = 1, K its last dim)"));
  return checkShapeIs(kApi, "attnSoftmaxL1Norm", *a.attnSoftmaxL1Norm, klSparseShape(d),
                      " (the shape of sparseIndices)");
}

aclnnStatus checkPerBatch(const KlGradArgs& a, const KlDims& d) {
  for (const NamedTensor& t : {NamedTensor{"seqUsedQOptional", a.seqUsedQ}, NamedTensor{"seqUsedKOptional", a.seqUsedK},
                               NamedTensor{"cmpResidualKOptional", a.cmpResidualK}}) {
    if (t.tensor == nullptr) continue;
    GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, t.name, *t.tensor, {1}, "[B]"));
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, t.name, *t.tensor, {d.batch}, "[B], B = " + std::to_string(d.batch)));
  }
  if (!klProfileIs950() && a.metadata == nullptr && (a.seqUsedQ != nullptr || a.seqUsedK != nullptr)) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "metadataOptional",
                "a metadata tensor when seqUsedQOptional or seqUsedKOptional is given (" + socText() + ")", "nullptr");
  }
  if (a.metadata != nullptr) {
    GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "metadataOptional", *a.metadata, {1}, "[64]"));
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "metadataOptional", *a.metadata, {kKlMetadataSize},
                                         "[64] (aclnnSparseLightningIndexerKLLossGradMetadata's output)"));
  }
  return ACLNN_SUCCESS;
}

}  // namespace

bool klProfileIs950() { return rt::currentSoc() == rt::Soc::Ascend950; }

bool klHeadsAllowed(int64_t heads, std::string* rule) {
  if (klProfileIs950()) {
    *rule = "N1 (dim -2) in [1, 128]";
    return heads >= 1 && heads <= kKlMaxHeads950;
  }
  *rule = "N1 (dim -2) in {8, 16, 32, 64}";
  return heads == 8 || heads == 16 || heads == 32 || heads == 64;
}

bool klTopkAllowed(int64_t topk, std::string* rule) {
  if (klProfileIs950()) {
    *rule = "K (last dim) in [1, 2048]";
    return topk >= 1 && topk <= kKlMaxTopk950;
  }
  *rule = "K (last dim) 512 or a multiple of 1024 up to 8192";
  return topk == 512 || (topk >= 1024 && topk <= kKlMaxTopkA2 && topk % 1024 == 0);
}

KlDims klDimsOfArgs(const KlGradArgs& a) {
  const KlLayout layout = *klLayoutFromName(a.layoutQ);
  const int64_t cuSize = a.cuSeqLensQ != nullptr && a.cuSeqLensQ->dim() == 1 ? a.cuSeqLensQ->viewDims[0] : 0;
  return klDimsOf(layout, a.q->viewDims, a.k->viewDims, a.sparseIndices->viewDims, cuSize);
}

aclnnStatus checkKlGrad(const KlGradArgs& a, const uint64_t* workspaceSize, aclOpExecutor* const* executor) {
  GRADKIT_RETURN_IF_ERROR(checkRequired(a, workspaceSize, executor));
  GRADKIT_RETURN_IF_ERROR(checkDtypes(a));
  GRADKIT_RETURN_IF_ERROR(checkAttributes(a));
  const KlLayout layout = *klLayoutFromName(a.layoutQ);
  GRADKIT_RETURN_IF_ERROR(checkRanks(a, layout));
  if (layout == KlLayout::TND) GRADKIT_RETURN_IF_ERROR(checkCuSeqLens(a));
  const KlDims dims = klDimsOfArgs(a);
  GRADKIT_RETURN_IF_ERROR(checkDims(a, dims));
  GRADKIT_RETURN_IF_ERROR(checkPerBatch(a, dims));
  std::vector<NamedTensor> inputs = inputsOf(a);
  for (const NamedTensor& t : optionalsOf(a)) inputs.push_back(t);
  const std::vector<NamedTensor> outputs = outputsOf(a);
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormats(kApi, inputs));
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormats(kApi, outputs));
  GRADKIT_RETURN_IF_ERROR(checkMemoryRules(kApi, inputs, outputs));
  return checkKlGradValues(a, dims);
}

}  // namespace gradkit::ops
