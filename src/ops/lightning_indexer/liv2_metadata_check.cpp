// aclnnLightningIndexerV2MetadataGetWorkspaceSize: docs/lightning_indexer_v2.md "Checks", in upstream's order.
// workspaceSize and executor null: 561103 (upstream's own code); every other rule 161002 with "<api>: argument
// '<name>': expected ..., given ...": the single values, the tensors each layout needs, their ranks, dtypes and batch
// sizes, then (gradkit: upstream's AI-CPU kernel checks them when it runs) the values: cu_seqlens from 0 and
// non-decreasing, seqused in [0, length], cmpResidualK in [0, cmpRatio). An optional tensor counts as given only when
// it is non-null with rank >= 1 and dim 0 > 0 (upstream's rule); otherwise it is ignored. gradkit's limits: the batch
// count and the M blocks the planner walks (liv2_metadata_plan.cpp) bounded, max_seqlen values within int32 (upstream's
// attribute width).
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "opapi/tensor_copy.h"  // readInt32Values
#include "opapi/tensor_rules.h"
#include "ops/lightning_indexer/liv2_check.h"
#include "ops/lightning_indexer/liv2_layout.h"
#include "ops/lightning_indexer/liv2_metadata_plan.h"

namespace gradkit::ops {
namespace {

constexpr const char* kApi = kLiV2MetadataApi;

aclnnStatus invalid(std::string_view name, const std::string& expected, const std::string& given) {
  return fail(ACLNN_ERR_PARAM_INVALID, kApi, name, expected, given);
}

aclnnStatus checkRange(const char* name, int64_t value, int64_t lo, int64_t hi, const std::string& expected) {
  return value >= lo && value <= hi ? ACLNN_SUCCESS : invalid(name, expected, std::to_string(value));
}

aclnnStatus checkSingleValues(const LiV2MetadataArgs& a) {
  GRADKIT_RETURN_IF_ERROR(checkRange("numHeadsQ", a.numHeadsQ, 1, kLiV2MaxHeads, "an integer in [1, 64]"));
  GRADKIT_RETURN_IF_ERROR(checkRange("numHeadsK", a.numHeadsK, 1, 1, "1"));
  GRADKIT_RETURN_IF_ERROR(checkRange("headDim", a.headDim, kLiV2HeadDim, kLiV2HeadDim, "128"));
  GRADKIT_RETURN_IF_ERROR(checkRange("topk", a.topk, 1, kLiV2MaxTopk, "an integer in [1, 8192]"));
  GRADKIT_RETURN_IF_ERROR(checkRange("batchSize", a.batchSize, 0, INT64_MAX, "a value >= 0"));
  GRADKIT_RETURN_IF_ERROR(checkRange("maxSeqlenQ", a.maxSeqlenQ, -1, INT32_MAX, "-1 or a length in [0, 2147483647]"));
  GRADKIT_RETURN_IF_ERROR(checkRange("maxSeqlenK", a.maxSeqlenK, -1, INT32_MAX, "-1 or a length in [0, 2147483647]"));
  if (a.maskMode != 0 && a.maskMode != 3) {
    return invalid("maskMode", "0 (no mask) or 3 (right-down causal)", std::to_string(a.maskMode));
  }
  GRADKIT_RETURN_IF_ERROR(checkRange("cmpRatio", a.cmpRatio, 1, kLiV2MaxCmpRatio, "an integer in [1, 128]"));
  if (a.layoutQ == nullptr) return invalid("layoutQOptional", "\"TND\" or \"BSND\"", "nullptr");
  const auto layoutQ = liv2LayoutFromName(a.layoutQ);
  if (!layoutQ || *layoutQ == LiV2Layout::PaBbnd) {
    return invalid("layoutQOptional", "\"TND\" or \"BSND\"", liv2Quoted(a.layoutQ));
  }
  if (a.layoutK == nullptr) return invalid("layoutKOptional", "\"TND\", \"BSND\" or \"PA_BBND\"", "nullptr");
  const auto layoutK = liv2LayoutFromName(a.layoutK);
  if (!layoutK) {
    return invalid("layoutKOptional", "\"TND\", \"BSND\" or \"PA_BBND\"", liv2Quoted(a.layoutK));
  }
  if (*layoutK != LiV2Layout::PaBbnd && *layoutK != *layoutQ) {
    return invalid("layoutKOptional", std::string("layoutQOptional's \"") + a.layoutQ + "\" (unless PA_BBND)",
                   liv2Quoted(a.layoutK));
  }
  if (*layoutQ == LiV2Layout::BSND && a.maxSeqlenQ <= 0) {
    return invalid("maxSeqlenQ", "S1 > 0, the size of q's axis 1 (layoutQOptional is BSND)",
                   std::to_string(a.maxSeqlenQ));
  }
  if (*layoutK == LiV2Layout::BSND && a.maxSeqlenK <= 0) {
    return invalid("maxSeqlenK", "S2 > 0, the size of k's axis 1 (layoutKOptional is BSND)",
                   std::to_string(a.maxSeqlenK));
  }
  return ACLNN_SUCCESS;
}

aclnnStatus required(const char* name, const std::string& why, const aclTensor* given) {
  return invalid(name, "a tensor with at least one element along dim 0 (" + why + ")",
                 given == nullptr ? "nullptr" : "shape " + given->shapeString());
}

aclnnStatus checkExistence(const LiV2MetadataArgs& a) {
  const LiV2Layout layoutQ = *liv2LayoutFromName(a.layoutQ), layoutK = *liv2LayoutFromName(a.layoutK);
  if (layoutQ == LiV2Layout::TND && !liv2MetadataTensorGiven(a.cuSeqlensQ)) {
    return required("cuSeqlensQOptional", "layoutQOptional is TND", a.cuSeqlensQ);
  }
  if (layoutK == LiV2Layout::TND && !liv2MetadataTensorGiven(a.cuSeqlensK)) {
    return required("cuSeqlensKOptional", "layoutKOptional is TND", a.cuSeqlensK);
  }
  if (layoutK == LiV2Layout::PaBbnd && !liv2MetadataTensorGiven(a.sequsedK)) {
    return required("sequsedKOptional", "layoutKOptional is PA_BBND", a.sequsedK);
  }
  if (a.cmpRatio != 1 && a.maskMode == 3 && !liv2MetadataTensorGiven(a.cmpResidualK)) {
    return required("cmpResidualKOptional", "cmpRatio != 1 with maskMode 3", a.cmpResidualK);
  }
  if (!liv2MetadataTensorGiven(a.metadata)) return required("metadata", "the output, INT32 [1024]", a.metadata);
  return ACLNN_SUCCESS;
}

aclnnStatus checkConsistency(const LiV2MetadataArgs& a) {
  const NamedTensor all[] = {{"cuSeqlensQOptional", a.cuSeqlensQ},     {"cuSeqlensKOptional", a.cuSeqlensK},
                             {"sequsedQOptional", a.sequsedQ},         {"sequsedKOptional", a.sequsedK},
                             {"cmpResidualKOptional", a.cmpResidualK}, {"metadata", a.metadata}};
  for (const NamedTensor& t : all) {
    if (!liv2MetadataTensorGiven(t.tensor)) continue;
    GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, t.name, *t.tensor, {1}, "a 1-d tensor"));
    GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, t.name, *t.tensor, {ACL_INT32}));
  }
  if (a.metadata->viewDims[0] != kLiV2MetadataWords) {
    return invalid("metadata", "1024 elements", std::to_string(a.metadata->viewDims[0]) + " elements");
  }
  const LiV2MetadataBatch q = liv2MetadataQueryBatch(a), k = liv2MetadataKeyBatch(a);
  if (q.batch != k.batch) {
    return invalid(k.source, "a batch size equal to the query side's: " + std::to_string(q.batch) + " from " + q.source,
                   std::to_string(k.batch) + " from " + k.source);
  }
  const bool tndQ = std::strcmp(a.layoutQ, "TND") == 0, tndK = std::strcmp(a.layoutK, "TND") == 0;
  if (tndQ && liv2MetadataTensorGiven(a.sequsedQ) && a.cuSeqlensQ->viewDims[0] - 1 != q.batch) {
    return invalid("cuSeqlensQOptional", "[B + 1] with B = " + std::to_string(q.batch) + " (sequsedQOptional's size)",
                   "shape " + a.cuSeqlensQ->shapeString());
  }
  if (tndK && liv2MetadataTensorGiven(a.sequsedK) && a.cuSeqlensK->viewDims[0] - 1 != k.batch) {
    return invalid("cuSeqlensKOptional", "[B + 1] with B = " + std::to_string(k.batch) + " (sequsedKOptional's size)",
                   "shape " + a.cuSeqlensK->shapeString());
  }
  if (liv2MetadataTensorGiven(a.cmpResidualK) && a.cmpResidualK->viewDims[0] != q.batch) {
    return invalid("cmpResidualKOptional", "[B] with B = " + std::to_string(q.batch) + " from " + q.source,
                   "shape " + a.cmpResidualK->shapeString());
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkPrefixSums(const char* name, const std::vector<int64_t>& cu, int64_t batch) {
  if (cu.empty()) return ACLNN_SUCCESS;
  if (cu[0] != 0)
    return invalid(name, "prefix sums starting at 0", std::string(name) + "[0] = " + std::to_string(cu[0]));
  for (int64_t b = 1; b <= batch && b < static_cast<int64_t>(cu.size()); ++b) {
    if (cu[static_cast<size_t>(b)] < cu[static_cast<size_t>(b - 1)]) {
      return invalid(name, "non-decreasing prefix sums",
                     std::string(name) + "[" + std::to_string(b) + "] = " + std::to_string(cu[static_cast<size_t>(b)]) +
                         " after " + std::to_string(cu[static_cast<size_t>(b - 1)]));
    }
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkUsed(const char* name, const std::vector<int64_t>& used, bool bsnd, int64_t maxSeqlen,
                      const std::vector<int64_t>& cu, const char* maxName) {
  for (size_t b = 0; b < used.size(); ++b) {
    int64_t bound = INT64_MAX;
    std::string boundText;
    if (bsnd) {
      bound = maxSeqlen;
      boundText = std::string(" <= ") + maxName + " = " + std::to_string(maxSeqlen);
    } else if (!cu.empty()) {
      bound = cu[b + 1] - cu[b];
      boundText = " <= the batch's cu_seqlens length " + std::to_string(bound);
    }
    if (used[b] < 0 || used[b] > bound) {
      return invalid(name, "values >= 0" + boundText + " for batch " + std::to_string(b),
                     std::string(name) + "[" + std::to_string(b) + "] = " + std::to_string(used[b]));
    }
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkValues(const LiV2MetadataArgs& a) {
  const LiV2MetadataBatch q = liv2MetadataQueryBatch(a);
  if (q.batch > kLiV2MaxBatch) {
    return invalid(q.source, "at most 16777216 batches (gradkit's limit)", std::to_string(q.batch));
  }
  const bool tndQ = std::strcmp(a.layoutQ, "TND") == 0, tndK = std::strcmp(a.layoutK, "TND") == 0;
  const std::vector<int64_t> cuQ = tndQ ? readInt32Values(liv2MetadataGiven(a.cuSeqlensQ)) : std::vector<int64_t>{};
  const std::vector<int64_t> cuK = tndK ? readInt32Values(liv2MetadataGiven(a.cuSeqlensK)) : std::vector<int64_t>{};
  GRADKIT_RETURN_IF_ERROR(checkPrefixSums("cuSeqlensQOptional", cuQ, q.batch));
  GRADKIT_RETURN_IF_ERROR(checkPrefixSums("cuSeqlensKOptional", cuK, q.batch));
  GRADKIT_RETURN_IF_ERROR(checkUsed("sequsedQOptional", readInt32Values(liv2MetadataGiven(a.sequsedQ)),
                                    std::strcmp(a.layoutQ, "BSND") == 0, a.maxSeqlenQ, cuQ, "maxSeqlenQ"));
  GRADKIT_RETURN_IF_ERROR(checkUsed("sequsedKOptional", readInt32Values(liv2MetadataGiven(a.sequsedK)),
                                    std::strcmp(a.layoutK, "BSND") == 0, a.maxSeqlenK, cuK, "maxSeqlenK"));
  const std::vector<int64_t> residual = readInt32Values(liv2MetadataGiven(a.cmpResidualK));
  for (size_t b = 0; b < residual.size(); ++b) {
    if (residual[b] < 0 || residual[b] >= a.cmpRatio) {
      return invalid("cmpResidualKOptional", "values in [0, cmpRatio) = [0, " + std::to_string(a.cmpRatio) + ")",
                     "cmpResidualKOptional[" + std::to_string(b) + "] = " + std::to_string(residual[b]));
    }
  }
  const int64_t blocks = liv2MetadataRowBlocks(liv2MetadataRequestOf(a));
  if (blocks > kLiV2MetadataMaxRowBlocks) {
    return failText(ACLNN_ERR_PARAM_INVALID, kApi,
                    "the plan would walk " + std::to_string(blocks) + " M blocks, more than gradkit's limit of " +
                        std::to_string(kLiV2MetadataMaxRowBlocks) + " (batches x query rows x heads too large)");
  }
  return ACLNN_SUCCESS;
}

}  // namespace

aclnnStatus checkLightningIndexerV2Metadata(const LiV2MetadataArgs& a, const uint64_t* workspaceSize,
                                            aclOpExecutor* const* executor) {
  if (workspaceSize == nullptr)
    return fail(ACLNN_ERR_INNER_NULLPTR, kApi, "workspaceSize", "a non-null pointer", "nullptr");
  if (executor == nullptr) return fail(ACLNN_ERR_INNER_NULLPTR, kApi, "executor", "a non-null pointer", "nullptr");
  GRADKIT_RETURN_IF_ERROR(checkSingleValues(a));
  GRADKIT_RETURN_IF_ERROR(checkExistence(a));
  GRADKIT_RETURN_IF_ERROR(checkConsistency(a));
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormat(kApi, "metadata", *a.metadata));
  std::vector<NamedTensor> inputs;
  for (const NamedTensor& t :
       {NamedTensor{"cuSeqlensQOptional", a.cuSeqlensQ}, NamedTensor{"cuSeqlensKOptional", a.cuSeqlensK},
        NamedTensor{"sequsedQOptional", a.sequsedQ}, NamedTensor{"sequsedKOptional", a.sequsedK},
        NamedTensor{"cmpResidualKOptional", a.cmpResidualK}}) {
    inputs.push_back({t.name, liv2MetadataGiven(t.tensor)});
  }
  GRADKIT_RETURN_IF_ERROR(checkMemoryRules(kApi, inputs, {{"metadata", a.metadata}}));
  return checkValues(a);
}

}  // namespace gradkit::ops
