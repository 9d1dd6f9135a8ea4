// aclnnSparseLightningIndexerKLLossGradMetadata's checks, in upstream's order (op_host
// sparse_lightning_indexer_kl_loss_grad_metadata_check.h; docs/sparse_lightning_indexer_kl_loss_grad.md, "Checks"),
// each failure 161002 "<api>: argument '<name>': expected ..., given ...":
//   0. workspaceSize, executor -> 161001 (upstream: 561103 ACLNN_ERR_INNER_NULLPTR; gradkit's null rule, DECISIONS.md
//      "For every operator" 2); on A2/A3 a null metadata -> 161001 (upstream's whole A2/A3 check).
//   1. single values: numHeadsQ (Ascend950 [1, 128]; A2/A3 {8, 16, 32, 64}), numHeadsK = 1, headDim = 128, topk
//      (Ascend950 [1, 2048]; A2/A3 512 or 1024 m <= 8192), batchSize >= 0, maxSeqlenQ >= 0, maxSeqlenK >= 0,
//      maskMode 0 or 3, cmpRatio in [1, 128], layoutQ / layoutK non-null, "TND" or "BSND", equal; BSND -> maxSeqlenQ >
//      0.
//   2. existence ("present": non-null, >= 1 dim, dim 0 > 0): TND -> both cu_seqlens; maskMode 3 and cmpRatio != 1 ->
//      cmpResidualK; metadata.
//   3. consistency: each present optional 1-D INT32; metadata 1-D INT32 of 64 elements; the q batch (seqused_q size,
//      else TND cu_seqlens_q size - 1, else batchSize) equals the k batch (the same on the k side); TND with seqused:
//      cu_seqlens size - 1 = seqused size; cmpResidualK size = the q batch.
//   4. the AI-CPU kernel's rules, here in the first phase: cu_seqlens from 0 and non-decreasing; 0 <= seqused_q <=
//      maxSeqlenQ (BSND) or the batch's length (TND); 0 <= seqused_k (<= maxSeqlenK / the batch's length: gradkit's);
//      0 <= cmpResidualK (< cmpRatio: gradkit's, as the main op); A2/A3 (whose AI-CPU kernel divides the rows over
//      cores): at least one query row.
//   5. gradkit's: private formats, memory rules.
#include <string>
#include <vector>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor_copy.h"
#include "opapi/tensor_rules.h"
#include "ops/lightning_indexer/kl_grad_check.h"
#include "ops/lightning_indexer/kl_grad_metadata.h"
#include "runtime/runtime.h"

namespace gradkit::ops {
namespace {

constexpr const char* kApi = kKlGradMetadataApi;

aclnnStatus invalid(const char* name, const std::string& expected, const std::string& given) {
  return fail(ACLNN_ERR_PARAM_INVALID, kApi, name, expected, given);
}

aclnnStatus checkSingleValues(const KlGradMetadataArgs& a) {
  std::string rule;
  if (!klHeadsAllowed(a.numHeadsQ, &rule)) {
    return invalid("numHeadsQ", rule.substr(rule.find(" in ") + 1) + " (N1)", std::to_string(a.numHeadsQ));
  }
  if (a.numHeadsK != 1) return invalid("numHeadsK", "1", std::to_string(a.numHeadsK));
  if (a.headDim != 128) return invalid("headDim", "128", std::to_string(a.headDim));
  if (!klTopkAllowed(a.topk, &rule)) {
    return invalid("topk", rule.substr(rule.find(')') + 2), std::to_string(a.topk));
  }
  const std::pair<const char*, int64_t> nonNegative[] = {
      {"batchSize", a.batchSize}, {"maxSeqlenQ", a.maxSeqlenQ}, {"maxSeqlenK", a.maxSeqlenK}};
  for (const auto& [name, value] : nonNegative) {
    if (value < 0) return invalid(name, "a value >= 0", std::to_string(value));
  }
  if (a.maskMode != 0 && a.maskMode != 3) {
    return invalid("maskMode", "0 (no mask) or 3 (right-down causal)", std::to_string(a.maskMode));
  }
  if (a.cmpRatio < 1 || a.cmpRatio > kKlMaxCmpRatio) {
    return invalid("cmpRatio", "a value in [1, 128]", std::to_string(a.cmpRatio));
  }
  for (const auto& [name, value] : {std::pair{"layoutQOptional", a.layoutQ}, std::pair{"layoutKOptional", a.layoutK}}) {
    if (value == nullptr) return invalid(name, "\"TND\" or \"BSND\"", "nullptr");
    if (!klLayoutFromName(value)) return invalid(name, "\"TND\" or \"BSND\"", std::string("\"") + value + "\"");
  }
  if (*klLayoutFromName(a.layoutQ) != *klLayoutFromName(a.layoutK)) {
    return invalid("layoutKOptional", std::string("the layout of layoutQOptional (\"") + a.layoutQ + "\")",
                   std::string("\"") + a.layoutK + "\"");
  }
  if (*klLayoutFromName(a.layoutQ) == KlLayout::BSND && a.maxSeqlenQ <= 0) {
    return invalid("maxSeqlenQ", "a value > 0 with layout BSND (S1, q's dim 1)", std::to_string(a.maxSeqlenQ));
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkExistence(const KlGradMetadataArgs& a, bool tnd) {
  if (tnd && !klMetadataPresent(a.cuSeqLensQ)) {
    return invalid("cuSeqLensQOptional", "a tensor [B + 1] (layout TND)", a.cuSeqLensQ ? "an empty tensor" : "nullptr");
  }
  if (tnd && !klMetadataPresent(a.cuSeqLensK)) {
    return invalid("cuSeqLensKOptional", "a tensor [B + 1] (layout TND)", a.cuSeqLensK ? "an empty tensor" : "nullptr");
  }
  if (a.cmpRatio != 1 && a.maskMode == 3 && !klMetadataPresent(a.cmpResidualK)) {
    return invalid(
        "cmpResidualKOptional",
        "a tensor [B] when cmpRatio is not 1 and maskMode is 3 (cmpRatio " + std::to_string(a.cmpRatio) + ")",
        a.cmpResidualK ? "an empty tensor" : "nullptr");
  }
  if (!klMetadataPresent(a.metadata)) {
    return invalid("metadata", "an INT32 tensor [64]", a.metadata ? "an empty tensor" : "nullptr");
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkConsistency(const KlGradMetadataArgs& a, bool tnd) {
  const NamedTensor optionals[] = {{"cuSeqLensQOptional", a.cuSeqLensQ},
                                   {"cuSeqLensKOptional", a.cuSeqLensK},
                                   {"seqUsedQOptional", a.seqUsedQ},
                                   {"seqUsedKOptional", a.seqUsedK},
                                   {"cmpResidualKOptional", a.cmpResidualK}};
  for (const NamedTensor& t : optionals) {
    if (!klMetadataPresent(t.tensor)) continue;
    GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, t.name, *t.tensor, {1}, "a 1-D per-batch tensor"));
    GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, t.name, *t.tensor, {ACL_INT32}));
  }
  GRADKIT_RETURN_IF_ERROR(checkRankIn(kApi, "metadata", *a.metadata, {1}, "[64]"));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(kApi, "metadata", *a.metadata, {ACL_INT32}));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "metadata", *a.metadata, {kKlMetadataSize}, "64 INT32 words"));
  const KlMetadataBatch q = klMetadataQueryBatch(a, tnd), k = klMetadataKeyBatch(a, tnd);
  if (q.batch != k.batch) {
    return invalid(k.source, std::string("a batch of ") + std::to_string(q.batch) + " (from " + q.source + ")",
                   std::to_string(k.batch) + " (from " + k.source + ")");
  }
  if (tnd && klMetadataPresent(a.seqUsedQ) && a.cuSeqLensQ->viewDims[0] - 1 != a.seqUsedQ->viewDims[0]) {
    return invalid("seqUsedQOptional",
                   "size(cuSeqLensQOptional) - 1 = " + std::to_string(a.cuSeqLensQ->viewDims[0] - 1),
                   "shape " + a.seqUsedQ->shapeString());
  }
  if (tnd && klMetadataPresent(a.seqUsedK) && a.cuSeqLensK->viewDims[0] - 1 != a.seqUsedK->viewDims[0]) {
    return invalid("seqUsedKOptional",
                   "size(cuSeqLensKOptional) - 1 = " + std::to_string(a.cuSeqLensK->viewDims[0] - 1),
                   "shape " + a.seqUsedK->shapeString());
  }
  if (klMetadataPresent(a.cmpResidualK) && a.cmpResidualK->viewDims[0] != q.batch) {
    return invalid("cmpResidualKOptional", "[B] with B = " + std::to_string(q.batch) + " (from " + q.source + ")",
                   "shape " + a.cmpResidualK->shapeString());
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkCu(const char* name, const std::vector<int64_t>& cu) {
  if (cu.empty()) return ACLNN_SUCCESS;
  if (cu[0] != 0) return invalid(name, "cu_seqlens[0] = 0", "cu_seqlens[0] = " + std::to_string(cu[0]));
  for (size_t b = 1; b < cu.size(); ++b) {
    if (cu[b] < cu[b - 1]) {
      return invalid(
          name, "non-decreasing values",
          "cu_seqlens[" + std::to_string(b) + "] = " + std::to_string(cu[b]) + " after " + std::to_string(cu[b - 1]));
    }
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkValues(const KlGradMetadataArgs& a, bool tnd) {
  const KlMetadataValues v = klMetadataValues(a, tnd);
  GRADKIT_RETURN_IF_ERROR(checkCu("cuSeqLensQOptional", v.cuQ));
  GRADKIT_RETURN_IF_ERROR(checkCu("cuSeqLensKOptional", v.cuK));
  const struct {
    const char* name;
    const std::vector<int64_t>& used;
    bool query;
  } sides[] = {{"seqUsedQOptional", v.usedQ, true}, {"seqUsedKOptional", v.usedK, false}};
  for (const auto& side : sides) {
    for (size_t b = 0; b < side.used.size(); ++b) {
      const int64_t length = klMetadataAllocated(a, v, tnd, side.query, static_cast<int64_t>(b));
      if (side.used[b] < 0 || side.used[b] > length) {
        return invalid(side.name,
                       "0 <= value <= " + std::string(tnd ? "the batch's cu_seqlens length " : "maxSeqlen ") +
                           std::to_string(length) + " for b = " + std::to_string(b),
                       std::to_string(side.used[b]));
      }
    }
  }
  for (size_t b = 0; b < v.residual.size(); ++b) {
    if (v.residual[b] < 0 || v.residual[b] >= a.cmpRatio) {
      return invalid("cmpResidualKOptional", "0 <= cmp_residual_k[b] < cmpRatio = " + std::to_string(a.cmpRatio),
                     "cmp_residual_k[" + std::to_string(b) + "] = " + std::to_string(v.residual[b]));
    }
  }
  if (!klProfileIs950() && klMetadataQueryRows(a, v, tnd) <= 0) {
    return invalid("seqUsedQOptional", "at least one query row to divide over the cores (the A2/A3 plan)",
                   "0 query rows");
  }
  return ACLNN_SUCCESS;
}

}  // namespace

aclnnStatus checkKlGradMetadata(const KlGradMetadataArgs& a, const uint64_t* workspaceSize,
                                aclOpExecutor* const* executor) {
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "executor", executor));
  if (!klProfileIs950()) GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "metadata", a.metadata));
  GRADKIT_RETURN_IF_ERROR(checkSingleValues(a));
  const bool tnd = *klLayoutFromName(a.layoutQ) == KlLayout::TND;
  GRADKIT_RETURN_IF_ERROR(checkExistence(a, tnd));
  GRADKIT_RETURN_IF_ERROR(checkConsistency(a, tnd));
  const std::vector<NamedTensor> inputs = {{"cuSeqLensQOptional", a.cuSeqLensQ},
                                           {"cuSeqLensKOptional", a.cuSeqLensK},
                                           {"seqUsedQOptional", a.seqUsedQ},
                                           {"seqUsedKOptional", a.seqUsedK},
                                           {"cmpResidualKOptional", a.cmpResidualK}};
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormats(kApi, inputs));
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormat(kApi, "metadata", *a.metadata));
  GRADKIT_RETURN_IF_ERROR(checkMemoryRules(kApi, inputs, {{"metadata", a.metadata}}));
  return checkValues(a, tnd);
}

}  // namespace gradkit::ops
