// aclnnSparseFlashMlaSoftmaxL1NormMetadata: upstream's order of rules (the strict copy of
// sparse_flash_mla_softmax_l1_norm_metadata_check.h), each failure
// "<api>: argument '<name>': expected ..., given ...".
//   workspaceSize, executor null: 561103; the profile (Ascend950 only). Everything else 161002.
//   single:      batchSize, maxSeqLenQ, maxSeqLenK >= 0; numHeadsQ in [1, 128]; numHeadsK 1; headDim 512; topk >= 0;
//                maskMode 0 or 3; cmpRatio in [1, 128]; layoutQ non-null and BSND/TND, BSND: maxSeqLenQ > 0; layoutK
//                non-null and BSND/TND (layoutQ = layoutK is the main operator's rule, not this one's).
//   existence:   TND q: cuSeqLensQ; TND k: cuSeqLensK; mask mode 0 with topk > 0: topkLength; mask mode 3 with
//                cmpRatio != 1: cmpResidualK; metadata.
//   consistency: each existing tensor's rank and INT32 (topkLength rank 3 BSND / 2 TND); metadata 1-D INT32 [64];
//                the query batch (seqUsedQ -> TND cuSeqLensQ - 1 -> batchSize) > 0 and equal to the key batch;
//                cu_seqlens of B + 1 and residual of B elements (upstream's "seqused of B" cannot fail: seqused gives
//                B).
// gradkit's: upper bounds where upstream keeps a value in int32, the batch limit, batchSize 0 or the batch the tensors
// give (upstream's kernel prefers a positive batchSize, its check the tensors); data pointers, formats, memory rules;
// then the values (cu_seqlens from 0 and non-decreasing, seqused within the lengths, residual in [0, cmpRatio), topk
// lengths >= 0) and at most 2^31 - 1 query rows (the metadata words are int32). Upstream's numHeadsQ % numHeadsK and
// aic_core_num > 0 rules cannot fail here.
#include <climits>
#include <string>
#include <vector>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor_copy.h"
#include "opapi/tensor_rules.h"
#include "ops/sparse_attention/smla_metadata_check.h"
#include "ops/sparse_attention/smla_metadata_problem.h"
#include "ops/sparse_attention/smla_metadata_rules.h"

namespace gradkit::ops {
namespace {

constexpr const char* kApi = kSmlaL1NormMetadataApi;
constexpr aclnnStatus kInvalid = ACLNN_ERR_PARAM_INVALID;
constexpr int64_t kInt32Max = INT32_MAX;
const char* const kInt32 = "upstream keeps it in int32";

struct Call {
  const SmlaL1MetaArgs& a;
  SmlaInput cuQ, cuK, usedQ, usedK, residual, topkLength, metadata;
  bool tndQ() const { return smlaIsLayout(a.layoutQ, "TND"); }
  bool tndK() const { return smlaIsLayout(a.layoutK, "TND"); }
};

aclnnStatus invalidValue(const char* name, const std::string& expected, int64_t given) {
  return fail(kInvalid, kApi, name, expected, std::to_string(given));
}

aclnnStatus checkLayout(const char* name, const char* layout) {
  if (layout == nullptr) return fail(kInvalid, kApi, name, "\"BSND\" or \"TND\"", "nullptr");
  if (smlaIsLayout(layout, "BSND") || smlaIsLayout(layout, "TND")) return ACLNN_SUCCESS;
  return fail(kInvalid, kApi, name, "\"BSND\" or \"TND\"", std::string("\"") + layout + "\"");
}

aclnnStatus checkSingle(const SmlaL1MetaArgs& a) {
  GRADKIT_RETURN_IF_ERROR(
      checkSmlaRange(kApi, "batchSize", a.batchSize, 0, kSmlaMetaMaxBatch, "upstream: >= 0; gradkit's batch limit"));
  GRADKIT_RETURN_IF_ERROR(checkSmlaRange(kApi, "maxSeqLenQ", a.maxSeqLenQ, 0, kInt32Max, kInt32));
  GRADKIT_RETURN_IF_ERROR(checkSmlaRange(kApi, "maxSeqLenK", a.maxSeqLenK, 0, kInt32Max, kInt32));
  GRADKIT_RETURN_IF_ERROR(checkSmlaRange(kApi, "numHeadsQ", a.numHeadsQ, 1, 128, "upstream's range"));
  if (a.numHeadsK != 1) return invalidValue("numHeadsK", "1", a.numHeadsK);
  if (a.headDim != 512) return invalidValue("headDim", "512", a.headDim);
  GRADKIT_RETURN_IF_ERROR(checkSmlaRange(kApi, "topk", a.topk, 0, kInt32Max, kInt32));
  if (a.maskMode != 0 && a.maskMode != 3) return invalidValue("maskMode", "0 or 3", a.maskMode);
  GRADKIT_RETURN_IF_ERROR(checkSmlaRange(kApi, "cmpRatio", a.cmpRatio, 1, 128, "upstream's range"));
  GRADKIT_RETURN_IF_ERROR(checkLayout("layoutQ", a.layoutQ));
  if (smlaIsLayout(a.layoutQ, "BSND") && a.maxSeqLenQ <= 0) {
    return invalidValue("maxSeqLenQ", "> 0 with layoutQ BSND", a.maxSeqLenQ);
  }
  return checkLayout("layoutK", a.layoutK);
}

aclnnStatus checkExistence(const Call& c) {
  const SmlaL1MetaArgs& a = c.a;
  if (c.tndQ()) GRADKIT_RETURN_IF_ERROR(checkSmlaExists(kApi, c.cuQ, "layoutQ TND"));
  if (c.tndK()) GRADKIT_RETURN_IF_ERROR(checkSmlaExists(kApi, c.cuK, "layoutK TND"));
  if (a.maskMode == 0 && a.topk > 0) {
    GRADKIT_RETURN_IF_ERROR(checkSmlaExists(kApi, c.topkLength, "maskMode 0 with sparse indices, topk > 0"));
  }
  if (a.maskMode == 3 && a.cmpRatio != 1) {
    GRADKIT_RETURN_IF_ERROR(checkSmlaExists(kApi, c.residual, "maskMode 3 with cmpRatio != 1"));
  }
  return checkSmlaExists(kApi, c.metadata, "the output");
}

aclnnStatus checkLength(const SmlaInput& t, int64_t expected, const std::string& why) {
  if (!smlaExists(t.tensor) || t.tensor->viewDims[0] == expected) return ACLNN_SUCCESS;
  return fail(kInvalid, kApi, t.name, std::to_string(expected) + " elements (" + why + ")",
              "shape " + t.tensor->shapeString());
}

aclnnStatus checkConsistency(const Call& c, SmlaBatch* query) {
  const SmlaL1MetaArgs& a = c.a;
  auto present = [](SmlaInput t) { return SmlaInput{t.name, smlaPresent(t.tensor)}; };
  for (const SmlaInput& t : {c.cuQ, c.cuK, c.usedQ, c.usedK, c.residual}) {
    GRADKIT_RETURN_IF_ERROR(checkSmlaLengthTensor(kApi, present(t)));
  }
  GRADKIT_RETURN_IF_ERROR(checkSmlaTopkLengthTensor(kApi, present(c.topkLength), !smlaIsLayout(a.layoutQ, "BSND")));
  GRADKIT_RETURN_IF_ERROR(checkSmlaMetadataTensor(kApi, c.metadata, kSmlaL1NormMetadataWords, false));
  *query = smlaBatchOf(c.usedQ, c.cuQ, c.tndQ(), a.batchSize);
  const SmlaBatch key = smlaBatchOf(c.usedK, c.cuK, c.tndK(), a.batchSize);
  GRADKIT_RETURN_IF_ERROR(checkSmlaBatchLimit(kApi, *query));
  if (query->count <= 0) {
    return fail(kInvalid, kApi, query->name, "a batch > 0", std::to_string(query->count) + " (" + query->from + ")");
  }
  GRADKIT_RETURN_IF_ERROR(checkSmlaSameBatch(kApi, *query, key, "key"));
  GRADKIT_RETURN_IF_ERROR(checkLength(c.cuQ, query->count + 1, "the query batch + 1"));
  GRADKIT_RETURN_IF_ERROR(checkLength(c.cuK, key.count + 1, "the key batch + 1"));
  GRADKIT_RETURN_IF_ERROR(checkLength(c.residual, query->count, "the query batch"));
  if (a.batchSize != 0 && a.batchSize != query->count) {  // gradkit's: upstream's check and kernel disagree here
    return invalidValue("batchSize", "0 or the query batch " + std::to_string(query->count) + " (" + query->from + ")",
                        a.batchSize);
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkMemory(const Call& c) {
  std::vector<NamedTensor> inputs;
  for (const SmlaInput& t : {c.cuQ, c.cuK, c.usedQ, c.usedK, c.residual, c.topkLength}) {
    if (smlaExists(t.tensor)) inputs.push_back({t.name, t.tensor});
  }
  const std::vector<NamedTensor> outputs{{c.metadata.name, c.metadata.tensor}};
  GRADKIT_RETURN_IF_ERROR(checkEachHasData(kApi, inputs));
  GRADKIT_RETURN_IF_ERROR(checkEachHasData(kApi, outputs));
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormats(kApi, inputs));
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormats(kApi, outputs));
  return checkMemoryRules(kApi, inputs, outputs);
}

/** One side's cu_seqlens (TND) and seqused values. */
aclnnStatus checkSideValues(const SmlaInput& cu, const SmlaInput& used, bool tnd, int64_t maxSeqLen,
                            const char* maxName) {
  const std::vector<int64_t> cuValues = tnd ? readInt32Values(smlaPresent(cu.tensor)) : std::vector<int64_t>{};
  GRADKIT_RETURN_IF_ERROR(checkSmlaCuSeqlensValues(kApi, cu.name, cuValues));
  return checkSmlaSequsedValues(kApi, used.name, readInt32Values(smlaPresent(used.tensor)), tnd ? -1 : maxSeqLen,
                                maxName, cuValues);
}

aclnnStatus checkValues(const Call& c) {
  const SmlaL1MetaArgs& a = c.a;
  GRADKIT_RETURN_IF_ERROR(checkSideValues(c.cuQ, c.usedQ, c.tndQ(), a.maxSeqLenQ, "maxSeqLenQ"));
  GRADKIT_RETURN_IF_ERROR(checkSideValues(c.cuK, c.usedK, c.tndK(), a.maxSeqLenK, "maxSeqLenK"));
  GRADKIT_RETURN_IF_ERROR(
      checkSmlaResidualValues(kApi, c.residual.name, readInt32Values(smlaPresent(a.cmpResidualK)), a.cmpRatio));
  if (smlaExists(a.topkLength)) GRADKIT_RETURN_IF_ERROR(checkSmlaTopkLengthValues(kApi, c.topkLength, 0, ""));
  const int64_t total = smlaL1TotalRows(a);
  if (total <= kInt32Max) return ACLNN_SUCCESS;
  return failText(
      kInvalid, kApi,
      "at most 2147483647 query rows in all (the metadata words are int32), given " + std::to_string(total));
}

}  // namespace

aclnnStatus checkSmlaL1NormMetadata(const SmlaL1MetaArgs& args, const uint64_t* workspaceSize,
                                    aclOpExecutor* const* executor) {
  GRADKIT_RETURN_IF_ERROR(checkSmlaOutParams(kApi, workspaceSize, executor));
  GRADKIT_RETURN_IF_ERROR(checkSmlaAscend950Only(kApi));
  GRADKIT_RETURN_IF_ERROR(checkSingle(args));
  const Call c{args,
               {"cuSeqLensQOptional", args.cuSeqLensQ},
               {"cuSeqLensKOptional", args.cuSeqLensK},
               {"seqUsedQOptional", args.seqUsedQ},
               {"seqUsedKOptional", args.seqUsedK},
               {"cmpResidualKOptional", args.cmpResidualK},
               {"topkLengthOptional", args.topkLength},
               {"metadata", args.metadata}};
  GRADKIT_RETURN_IF_ERROR(checkExistence(c));
  SmlaBatch query;
  GRADKIT_RETURN_IF_ERROR(checkConsistency(c, &query));
  GRADKIT_RETURN_IF_ERROR(checkMemory(c));
  return checkValues(c);
}

}  // namespace gradkit::ops
