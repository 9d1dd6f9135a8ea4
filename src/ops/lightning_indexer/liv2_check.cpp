// aclnnLightningIndexerV2GetWorkspaceSize: docs/lightning_indexer_v2.md "Checks", in upstream's order, every failure
// "<api>: argument '<name>': expected ..., given ...":
//   workspaceSize, executor, then the generated layer: q, k, w, sparseIndices, sparseValues and the layout strings
//   non-null (161001); the op definition's dtypes (q, k FLOAT16 / BFLOAT16 alike, w FLOAT, every optional INT32,
//   sparseIndices INT32, sparseValues FLOAT).
//   Then the tiling checkers (upstream 561002, here 161002 per DECISIONS.md "Check early and clearly"), phase by phase:
//   single parameters (layouts, topk, maskMode, cmpRatio, maxSeqlenQ, returnValue, ranks; the paged cache's block
//   size), existence (metadata on Ascend950, the cu_seqlens each layout needs or forbids, cmpResidualK iff
//   cmpRatio != 1 and maskMode != 0 on Ascend950, blockTable and sequsedK with PA_BBND; conditionally required tensors
//   missing are 161001 as a null pointer), features (N2 = 1, D = 128, N1 in [1, 64], q not empty) and the shapes that
//   must agree.
//   The A2/A3 profiles (GRADKIT_SOC) take upstream's arch22 rules: topk in [1, 2048] or a multiple of 1024 up to
//   8192, no sequsedQ or outputIdxOffset, sequsedK with PA_BBND only; metadata, cmpResidualK and maxSeqlenQ
//   optional (maxSeqlenQ, a hint on Ascend950, is ignored there as by the arch22 tiling).
//   Then gradkit's own: B <= 2^24, private formats, the memory rules, and last the values read from host memory
//   (liv2_check_values.cpp).
#include "ops/lightning_indexer/liv2_check.h"

#include <climits>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "opapi/tensor_rules.h"
#include "ops/lightning_indexer/liv2_check_values.h"
#include "ops/lightning_indexer/liv2_layout.h"
#include "runtime/runtime.h"

namespace gradkit::ops {
namespace {

constexpr const char* kApi = kLiV2Api;

struct Profile {
  const char* name;
  bool ascend950;
};

Profile currentProfile() {
  const rt::Soc soc = rt::currentSoc();
  return {rt::socName(soc), soc == rt::Soc::Ascend950};
}

std::string inProfile(const Profile& profile) { return std::string(" in the ") + profile.name + " profile"; }

std::vector<NamedTensor> optionalsOf(const LiV2Args& a) {
  return {{"cuSeqlensQOptional", a.cuSeqlensQ},
          {"cuSeqlensKOptional", a.cuSeqlensK},
          {"sequsedQOptional", a.sequsedQ},
          {"sequsedKOptional", a.sequsedK},
          {"cmpResidualKOptional", a.cmpResidualK},
          {"blockTableOptional", a.blockTable},
          {"outputIdxOffsetOptional", a.outputIdxOffset},
          {"metadataOptional", a.metadata}};
}

aclnnStatus checkGeneratedLayer(const LiV2Args& a) {
  GRADKIT_RETURN_IF_ERROR(checkEachNotNull(kApi, {{"q", a.q}, {"k", a.k}, {"w", a.w}}));
  GRADKIT_RETURN_IF_ERROR(
      checkEachNotNull(kApi, {{"sparseIndices", a.sparseIndices}, {"sparseValues", a.sparseValues}}));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "layoutQ", a.layoutQ));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "layoutK", a.layoutK));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "q", *a.q, {ACL_FLOAT16, ACL_BF16}));
  GRADKIT_RETURN_IF_ERROR(checkSameDtype(kApi, "k", *a.k, "q", *a.q));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "w", *a.w, {ACL_FLOAT}));
  for (const NamedTensor& t : optionalsOf(a)) {
    if (t.tensor != nullptr) GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, t.name, *t.tensor, {ACL_INT32}));
  }
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "sparseIndices", *a.sparseIndices, {ACL_INT32}));
  return checkDtypeIn(kApi, "sparseValues", *a.sparseValues, {ACL_FLOAT});
}

aclnnStatus checkAttributes(const LiV2Args& a, const Profile& profile) {
  const auto layoutQ = liv2LayoutFromName(a.layoutQ);
  if (!layoutQ || *layoutQ == LiV2Layout::PaBbnd) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "layoutQ", "\"BSND\" or \"TND\"", liv2Quoted(a.layoutQ));
  }
  const auto layoutK = liv2LayoutFromName(a.layoutK);
  if (!layoutK) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "layoutK", "\"BSND\", \"TND\" or \"PA_BBND\"", liv2Quoted(a.layoutK));
  }
  if (*layoutK != LiV2Layout::PaBbnd && *layoutK != *layoutQ) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "layoutK",
                std::string("layoutQ's \"") + a.layoutQ + "\" (the layouts differ only with PA_BBND)",
                liv2Quoted(a.layoutK));
  }
  if (!liv2TopkAllowed(a.topk, profile.ascend950)) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "topk",
                profile.ascend950
                    ? "an integer in [1, 8192]"
                    : "an integer in [1, 2048] or one of 3072, 4096, 5120, 6144, 7168, 8192" + inProfile(profile),
                std::to_string(a.topk));
  }
  if (a.maskMode != 0 && a.maskMode != 3) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "maskMode", "0 (no mask) or 3 (right-down causal)",
                std::to_string(a.maskMode));
  }
  if (a.cmpRatio < 1 || a.cmpRatio > kLiV2MaxCmpRatio) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "cmpRatio", "an integer in [1, 128]", std::to_string(a.cmpRatio));
  }
  if (a.maxSeqlenQ < -1 || a.maxSeqlenQ > INT32_MAX) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "maxSeqlenQ", "-1 (unknown) or a length in [0, 2147483647]",
                std::to_string(a.maxSeqlenQ));
  }
  if (a.returnValue != 0 && a.returnValue != 1) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "returnValue", "0 or 1", std::to_string(a.returnValue));
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkRanks(const LiV2Args& a, LiV2Layout layoutQ, LiV2Layout layoutK) {
  const int64_t rankQ = liv2QueryRank(layoutQ);
  const bool bsnd = layoutQ == LiV2Layout::BSND;
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "q", *a.q, {rankQ}, bsnd ? "BSND [B, S1, N1, D]" : "TND [T1, N1, D]"));
  const char* keyText = layoutK == LiV2Layout::TND    ? "TND [T2, 1, D]"
                        : layoutK == LiV2Layout::BSND ? "BSND [B, S2, 1, D]"
                                                      : "PA_BBND [blockNum, blockSize, 1, D]";
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "k", *a.k, {liv2KeyRank(layoutK)}, keyText));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "w", *a.w, {rankQ - 1}, bsnd ? "[B, S1, N1]" : "[T1, N1]"));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "sparseIndices", *a.sparseIndices, {rankQ}, liv2OutputShapeText(layoutQ)));
  if (a.returnValue == 1) {
    GRADKIT_RETURN_IF_ERROR(
        checkRankIn(kApi, "sparseValues", *a.sparseValues, {rankQ}, liv2OutputShapeText(layoutQ) + " (returnValue 1)"));
  }
  if (a.outputIdxOffset != nullptr) {
    GRADKIT_RETURN_IF_ERROR(
        checkRankIn(kApi, "outputIdxOffsetOptional", *a.outputIdxOffset, {rankQ - 1}, bsnd ? "[B, S1, 1]" : "[T1, 1]"));
  }
  for (const NamedTensor& t :
       {NamedTensor{"cuSeqlensQOptional", a.cuSeqlensQ}, NamedTensor{"cuSeqlensKOptional", a.cuSeqlensK},
        NamedTensor{"sequsedQOptional", a.sequsedQ}, NamedTensor{"sequsedKOptional", a.sequsedK},
        NamedTensor{"cmpResidualKOptional", a.cmpResidualK}}) {
    if (t.tensor != nullptr) GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, t.name, *t.tensor, {1}, "one value per batch"));
  }
  if (layoutK != LiV2Layout::PaBbnd) return ACLNN_SUCCESS;
  if (a.blockTable != nullptr) {
    GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "blockTableOptional", *a.blockTable, {2}, "[B, maxBlocksPerSeq]"));
  }
  const int64_t blockSize = a.k->viewDims[1];
  if (blockSize < 16 || blockSize > 1024 || blockSize % 16 != 0) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "k",
                "a block size (PA_BBND dim 1) that is a multiple of 16 in [16, 1024]",
                "block size " + std::to_string(blockSize) + " (shape " + a.k->shapeString() + ")");
  }
  if (a.k->viewDims[0] <= 0) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "k", "at least one cache block (PA_BBND dim 0 > 0)",
                "shape " + a.k->shapeString());
  }
  return ACLNN_SUCCESS;
}

aclnnStatus missing(const char* name, const std::string& why) {
  return fail(ACLNN_ERR_PARAM_NULLPTR, kApi, name, "a tensor (" + why + ")", "nullptr");
}

aclnnStatus forbidden(const char* name, const std::string& why, const aclTensor& given) {
  return fail(ACLNN_ERR_PARAM_INVALID, kApi, name, "nullptr (" + why + ")", "a tensor of shape " + given.shapeString());
}

aclnnStatus checkExistence(const LiV2Args& a, LiV2Layout layoutQ, LiV2Layout layoutK, const Profile& profile) {
  if (profile.ascend950 && a.metadata == nullptr) {
    return missing("metadataOptional",
                   "required in the Ascend950 profile: the output of aclnnLightningIndexerV2Metadata, 1024 INT32");
  }
  if (layoutK == LiV2Layout::TND && a.cuSeqlensK == nullptr) return missing("cuSeqlensKOptional", "layoutK is TND");
  if (layoutK != LiV2Layout::TND && a.cuSeqlensK != nullptr) {
    return forbidden("cuSeqlensKOptional", std::string("layoutK is ") + liv2LayoutName(layoutK), *a.cuSeqlensK);
  }
  if (layoutQ == LiV2Layout::TND && a.cuSeqlensQ == nullptr) return missing("cuSeqlensQOptional", "layoutQ is TND");
  if (layoutQ != LiV2Layout::TND && a.cuSeqlensQ != nullptr) {
    return forbidden("cuSeqlensQOptional", "layoutQ is BSND", *a.cuSeqlensQ);
  }
  if (profile.ascend950) {
    const bool needed = a.cmpRatio != 1 && a.maskMode != 0;
    if (needed && a.cmpResidualK == nullptr) {
      return missing("cmpResidualKOptional", "cmpRatio != 1 with maskMode 3: the tokens not yet compressed per batch");
    }
    if (!needed && a.cmpResidualK != nullptr) {
      return forbidden("cmpResidualKOptional", "given only when cmpRatio != 1 and maskMode != 0", *a.cmpResidualK);
    }
  }
  const bool paged = layoutK == LiV2Layout::PaBbnd;
  if (paged && a.blockTable == nullptr) return missing("blockTableOptional", "layoutK is PA_BBND");
  if (!paged && a.blockTable != nullptr) {
    return forbidden("blockTableOptional", std::string("layoutK is ") + liv2LayoutName(layoutK), *a.blockTable);
  }
  if (paged && a.sequsedK == nullptr) return missing("sequsedKOptional", "layoutK is PA_BBND");
  if (!profile.ascend950) {
    const std::string only = "exists only in the Ascend950 profile;" + inProfile(profile);
    if (a.sequsedQ != nullptr) return forbidden("sequsedQOptional", "seqused_q " + only, *a.sequsedQ);
    if (a.outputIdxOffset != nullptr) {
      return forbidden("outputIdxOffsetOptional", "output_idx_offset " + only, *a.outputIdxOffset);
    }
    if (!paged && a.sequsedK != nullptr) {
      return forbidden("sequsedKOptional", "seqused_k goes with PA_BBND only" + inProfile(profile), *a.sequsedK);
    }
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkFeatures(const LiV2Args& a, const LiV2Dims& dims) {
  const aclTensor& k = *a.k;
  const int64_t keyHeads = k.viewDims[static_cast<size_t>(k.dim() - 2)];
  if (keyHeads != kLiV2KeyHeads) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "k", "one key head (N2 = 1, dim " + std::to_string(k.dim() - 2) + ")",
                "N2 = " + std::to_string(keyHeads) + " (shape " + k.shapeString() + ")");
  }
  for (const NamedTensor& t : {NamedTensor{"q", a.q}, NamedTensor{"k", a.k}}) {
    const int64_t d = t.tensor->viewDims.back();
    if (d != kLiV2HeadDim) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, t.name, "head dim D (last dim) = 128",
                  "D = " + std::to_string(d) + " (shape " + t.tensor->shapeString() + ")");
    }
  }
  if (dims.heads < 1 || dims.heads > kLiV2MaxHeads) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "q", "N1 (query heads) in [1, 64]",
                "N1 = " + std::to_string(dims.heads) + " (shape " + a.q->shapeString() + ")");
  }
  if (a.q->isEmpty()) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "q", "a non-empty tensor", "empty shape " + a.q->shapeString());
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkBatchSizes(const LiV2Args& a, const LiV2Dims& dims) {
  const std::string b = std::to_string(dims.batch);
  if (dims.layoutQ == LiV2Layout::TND && a.cuSeqlensQ->viewDims[0] < 2) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "cuSeqlensQOptional", "shape [B + 1] with B >= 1",
                "shape " + a.cuSeqlensQ->shapeString());
  }
  if (dims.batch > kLiV2MaxBatch) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, dims.layoutQ == LiV2Layout::TND ? "cuSeqlensQOptional" : "q",
                "at most 16777216 batches (gradkit's limit)", "B = " + b);
  }
  if (dims.layoutK == LiV2Layout::BSND && a.k->viewDims[0] != dims.batch) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "k", "dim 0 = B = " + b + " (the batch of q)",
                "shape " + a.k->shapeString());
  }
  if (dims.layoutK == LiV2Layout::TND) {
    GRADKIT_RETURN_IF_ERROR(
        checkShapeIs(kApi, "cuSeqlensKOptional", *a.cuSeqlensK, {dims.batch + 1}, "[B + 1], as cuSeqlensQOptional"));
  }
  const std::vector<NamedTensor> perBatch = {
      {"sequsedQOptional", a.sequsedQ}, {"sequsedKOptional", a.sequsedK}, {"cmpResidualKOptional", a.cmpResidualK}};
  for (const NamedTensor& t : perBatch) {
    if (t.tensor != nullptr) GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, t.name, *t.tensor, {dims.batch}, "[B]"));
  }
  if (dims.layoutK == LiV2Layout::PaBbnd && a.blockTable->viewDims[0] != dims.batch) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "blockTableOptional", "dim 0 = B = " + b,
                "shape " + a.blockTable->shapeString());
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkShapes(const LiV2Args& a, const LiV2Dims& dims, const Profile& profile) {
  const bool bsnd = dims.layoutQ == LiV2Layout::BSND;
  GRADKIT_RETURN_IF_ERROR(
      checkShapeIs(kApi, "w", *a.w, liv2WeightShape(dims), bsnd ? "[B, S1, N1] of q" : "[T1, N1] of q"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "sparseIndices", *a.sparseIndices, liv2OutputShape(dims),
                                       liv2OutputShapeText(dims.layoutQ) + " with the rows of q"));
  if (a.returnValue == 1) {
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "sparseValues", *a.sparseValues, liv2OutputShape(dims),
                                         liv2OutputShapeText(dims.layoutQ) + " with the rows of q (returnValue 1)"));
  }
  if (a.outputIdxOffset != nullptr) {
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "outputIdxOffsetOptional", *a.outputIdxOffset, liv2OffsetShape(dims),
                                         bsnd ? "[B, S1, 1]: one offset per query row" : "[T1, 1]: one per query row"));
  }
  if (profile.ascend950 && a.metadata->numel() != kLiV2MetadataWords) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "metadataOptional",
                "1024 INT32 elements (the output of aclnnLightningIndexerV2Metadata)",
                std::to_string(a.metadata->numel()) + " elements (shape " + a.metadata->shapeString() + ")");
  }
  return checkBatchSizes(a, dims);
}

std::vector<NamedTensor> inputsOf(const LiV2Args& a, const Profile& profile) {
  std::vector<NamedTensor> inputs = {{"q", a.q}, {"k", a.k}, {"w", a.w}};
  for (const NamedTensor& t : optionalsOf(a)) {
    if (t.tensor == a.metadata && !profile.ascend950) continue;  // ignored: never read
    inputs.push_back(t);
  }
  return inputs;
}

std::vector<NamedTensor> outputsOf(const LiV2Args& a) {
  std::vector<NamedTensor> outputs = {{"sparseIndices", a.sparseIndices}};
  if (a.returnValue == 1) outputs.push_back({"sparseValues", a.sparseValues});
  return outputs;
}

}  // namespace

aclnnStatus checkLightningIndexerV2(const LiV2Args& a, const uint64_t* workspaceSize, aclOpExecutor* const* executor) {
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "executor", executor));
  GRADKIT_RETURN_IF_ERROR(checkGeneratedLayer(a));
  const Profile profile = currentProfile();
  GRADKIT_RETURN_IF_ERROR(checkAttributes(a, profile));
  const LiV2Layout layoutQ = *liv2LayoutFromName(a.layoutQ), layoutK = *liv2LayoutFromName(a.layoutK);
  GRADKIT_RETURN_IF_ERROR(checkRanks(a, layoutQ, layoutK));
  GRADKIT_RETURN_IF_ERROR(checkExistence(a, layoutQ, layoutK, profile));
  const int64_t cuCount = a.cuSeqlensQ != nullptr ? a.cuSeqlensQ->viewDims[0] : 0;
  const int64_t columns = a.blockTable != nullptr ? a.blockTable->viewDims[1] : 0;
  const LiV2Dims dims = liv2DimsOf(layoutQ, layoutK, a.q->viewDims, a.k->viewDims, cuCount, columns, a.topk);
  GRADKIT_RETURN_IF_ERROR(checkFeatures(a, dims));
  GRADKIT_RETURN_IF_ERROR(checkShapes(a, dims, profile));
  std::vector<NamedTensor> all = inputsOf(a, profile);
  all.push_back({"sparseIndices", a.sparseIndices});
  all.push_back({"sparseValues", a.sparseValues});
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormats(kApi, all));
  GRADKIT_RETURN_IF_ERROR(checkMemoryRules(kApi, inputsOf(a, profile), outputsOf(a)));
  // The values read from host memory come last: the reads rely on the shapes and on the memory being live.
  return checkLightningIndexerV2Values(a, dims);
}

}  // namespace gradkit::ops
