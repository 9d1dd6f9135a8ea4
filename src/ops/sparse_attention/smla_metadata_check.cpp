// aclnnSparseFlashMla[Grad]Metadata: upstream's order of rules (sparse_flash_mla[_grad]_metadata_check.h: single
// parameters, existence, consistency; then the AI CPU kernel's run-time value checks), each failure
// "<api>: argument '<name>': expected ..., given ...".
//   out parameters: workspaceSize, executor null: 561103 (ACLNN_ERR_INNER_NULLPTR, as upstream); then the gradient's
//            profile (Ascend950 only). Everything else 161002.
//   single:  batchSize, maxSeqlenQ/OriKv/CmpKv >= 0; numHeadsQ in [1, 128]; numHeadsKv 1; (A2/A3) G a power of two;
//            headDim 512; with hasOriKv: oriTopk >= 0, the ori mask mode and windows per profile; with hasCmpKv:
//            cmpTopk >= 0 (A2/A3 <= 8192), the cmp mask mode, cmpRatio per profile; layouts non-null and valid, kv
//            equal to q unless PA_BBND (the gradient: BSND or TND, equal); BSND q: maxSeqlenQ > 0, BSND kv: the used
//            sides' max seqlen > 0. gradkit adds upper bounds where upstream keeps the value in int32 and its batch
//            limit (docs/sparse_attention.md, "Checks, in upstream's order"). Upstream's numHeadsQ % numHeadsKv, G in
//            [1, 128] and core-count rules cannot fail once numHeadsKv is 1 and the profile's counts are 24 / 32
//            (static_assert below).
//   existence ("exists" = non-null, rank > 0, dim 0 > 0): cu_seqlens for TND, seqused for PA_BBND kv, topk lengths
//            for sparse mask mode 0, the residual for cmpRatio != 1 with cmp mask mode 3, metadata.
//   consistency: (A2/A3) no cmp topk length; each existing tensor's rank and INT32; metadata [1024] INT32; the batch
//            (seqused -> TND cu_seqlens - 1 -> batchSize) of q, ori and cmp equal; TND cu_seqlens vs seqused; topk
//            length dims; residual length.
// Then gradkit's: data pointers, private formats, memory rules; then the values (upstream's AI CPU order): cu_seqlens
// from 0 and non-decreasing, seqused in [0, max seqlen (BSND) or the cu_seqlens length], residual in [0, cmpRatio),
// topk lengths >= 0 with one per query row read; and at most kSmlaMetaMaxRows query rows.
#include "ops/sparse_attention/smla_metadata_check.h"

#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor_copy.h"
#include "opapi/tensor_rules.h"
#include "ops/sparse_attention/smla_metadata_problem.h"
#include "ops/sparse_attention/smla_metadata_rules.h"
#include "runtime/profile.h"
#include "runtime/runtime.h"

namespace gradkit::ops {
namespace {

constexpr aclnnStatus kInvalid = ACLNN_ERR_PARAM_INVALID;
constexpr int64_t kInt32Max = INT32_MAX;
const char* const kInt32 = "upstream keeps it in int32";

static_assert(
    rt::aicCores(rt::Soc::Ascend950) <= kSmlaAicEntries && rt::aivCores(rt::Soc::Ascend950) <= kSmlaAivEntries &&
        rt::aicCores(rt::Soc::Ascend910B) <= kSmlaAicEntries && rt::aivCores(rt::Soc::Ascend910B) <= kSmlaAivEntries &&
        rt::aicCores(rt::Soc::Ascend910_93) > 1,
    "upstream's core-count rules (AIC in [1, 36], AIV in [1, 72], not 1 for 128 heads) hold for every profile");

/** The arguments with their names, and what the rules ask about them. */
struct Call {
  const SmlaMetaArgs& a;
  bool forward, a5;  // a5: Ascend950 rules (always for the gradient)
  SmlaInput cuQ, cuOri, cuCmp, usedQ, usedOri, usedCmp, residual, oriTopkLen, cmpTopkLen, metadata;
  bool tndQ() const { return smlaIsLayout(a.layoutQ, "TND"); }
  bool tndKv() const { return smlaIsLayout(a.layoutKv, "TND"); }
  bool bsndKv() const { return smlaIsLayout(a.layoutKv, "BSND"); }
  bool pagedKv() const { return smlaIsLayout(a.layoutKv, "PA_BBND"); }
  bool oriTopkLenUsed() const { return a.hasOriKv && a.oriTopk != 0 && a.oriMaskMode == 0; }
  bool cmpTopkLenUsed() const { return a.hasCmpKv && a.cmpTopk != 0 && a.cmpMaskMode == 0; }
};

Call callOf(const SmlaMetaArgs& a) {
  const bool forward = a.op == SmlaMetaOp::Forward;
  return {a,
          forward,
          !forward || rt::currentSoc() == rt::Soc::Ascend950,
          {"cuSeqlensQOptional", a.cuSeqlensQ},
          {"cuSeqlensOriKvOptional", a.cuSeqlensOriKv},
          {"cuSeqlensCmpKvOptional", a.cuSeqlensCmpKv},
          {"sequsedQOptional", a.sequsedQ},
          {"sequsedOriKvOptional", a.sequsedOriKv},
          {"sequsedCmpKvOptional", a.sequsedCmpKv},
          {"cmpResidualKvOptional", a.cmpResidualKv},
          {"oriTopkLengthOptional", a.oriTopkLength},
          {"cmpTopkLengthOptional", a.cmpTopkLength},
          {"metaData", a.metadata}};
}

aclnnStatus invalidValue(const Call& c, const char* name, const std::string& expected, int64_t given) {
  return fail(kInvalid, c.a.api(), name, expected, std::to_string(given));
}

aclnnStatus checkHeads(const Call& c) {
  const SmlaMetaArgs& a = c.a;
  const char* api = a.api();
  GRADKIT_RETURN_IF_ERROR(checkSmlaRange(api, "numHeadsQ", a.numHeadsQ, 1, 128, "upstream's range"));
  if (a.numHeadsKv != 1) return invalidValue(c, "numHeadsKv", "1", a.numHeadsKv);
  const int64_t g = a.numHeadsQ;  // numHeadsQ / numHeadsKv
  if (!c.a5 && (g & (g - 1)) != 0) {
    return invalidValue(c, "numHeadsQ", "numHeadsQ / numHeadsKv a power of two in [1, 128] (Atlas A2/A3)", g);
  }
  if (a.headDim != 512) return invalidValue(c, "headDim", "512", a.headDim);
  return ACLNN_SUCCESS;
}

aclnnStatus checkWindow(const Call& c, const char* name, int64_t value, int64_t low) {
  return checkSmlaRange(c.a.api(), name, value, low, kInt32Max,
                        low < 0 ? "-1 = unbounded; gradkit: the main op reads it as int32" : "DSpark on Atlas A2/A3");
}

aclnnStatus checkOriSide(const Call& c) {
  const SmlaMetaArgs& a = c.a;
  const char* api = a.api();
  GRADKIT_RETURN_IF_ERROR(checkSmlaRange(api, "oriTopk", a.oriTopk, 0, kInt32Max, kInt32));
  if (!c.a5 && a.oriTopk != 0 && a.hasCmpKv) {
    return invalidValue(c, "oriTopk", "0 when hasCmpKv is true (Atlas A2/A3: ori top-k only without cmp kv)",
                        a.oriTopk);
  }
  if (c.a5) {
    if (a.oriMaskMode != 0 && a.oriMaskMode != 3 && a.oriMaskMode != 4) {
      return invalidValue(c, "oriMaskMode", "0, 3 or 4", a.oriMaskMode);
    }
    GRADKIT_RETURN_IF_ERROR(checkWindow(c, "oriWinLeft", a.oriWinLeft, -1));
    return checkWindow(c, "oriWinRight", a.oriWinRight, -1);
  }
  if (a.oriTopk != 0) {  // A2/A3 DSpark: SWA with ori top-k
    if (a.oriMaskMode != 0) return invalidValue(c, "oriMaskMode", "0 (Atlas A2/A3 with oriTopk != 0)", a.oriMaskMode);
    GRADKIT_RETURN_IF_ERROR(checkWindow(c, "oriWinLeft", a.oriWinLeft, 0));
    return checkWindow(c, "oriWinRight", a.oriWinRight, 0);
  }
  if (a.oriMaskMode != 4) return invalidValue(c, "oriMaskMode", "4 (Atlas A2/A3 without ori top-k)", a.oriMaskMode);
  if (a.oriWinLeft != 127) return invalidValue(c, "oriWinLeft", "127 (Atlas A2/A3 without ori top-k)", a.oriWinLeft);
  if (a.oriWinRight != 0) return invalidValue(c, "oriWinRight", "0 (Atlas A2/A3 without ori top-k)", a.oriWinRight);
  return ACLNN_SUCCESS;
}

aclnnStatus checkCmpSide(const Call& c) {
  const SmlaMetaArgs& a = c.a;
  const char* api = a.api();
  GRADKIT_RETURN_IF_ERROR(
      checkSmlaRange(api, "cmpTopk", a.cmpTopk, 0, c.a5 ? kInt32Max : 8192, c.a5 ? kInt32 : "Atlas A2/A3 limit"));
  if (c.a5 ? a.cmpMaskMode != 0 && a.cmpMaskMode != 3 : a.cmpMaskMode != 3) {
    return invalidValue(c, "cmpMaskMode", c.a5 ? "0 or 3" : "3 (Atlas A2/A3)", a.cmpMaskMode);
  }
  if (c.a5) return checkSmlaRange(api, "cmpRatio", a.cmpRatio, 1, 128, "upstream's range with hasCmpKv");
  if (a.cmpTopk > 0 && a.cmpRatio != 1 && a.cmpRatio != 2 && a.cmpRatio != 4) {
    return invalidValue(c, "cmpRatio", "1, 2 or 4 (Atlas A2/A3 CSA, cmpTopk > 0)", a.cmpRatio);
  }
  if (a.cmpTopk == 0 && a.cmpRatio != 128) {
    return invalidValue(c, "cmpRatio", "128 (Atlas A2/A3 HCA, cmpTopk 0)", a.cmpRatio);
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkLayouts(const Call& c) {
  const SmlaMetaArgs& a = c.a;
  const char* api = a.api();
  if (a.layoutQ == nullptr) return fail(kInvalid, api, "layoutQOptional", "\"BSND\" or \"TND\"", "nullptr");
  if (a.layoutKv == nullptr) {
    return fail(kInvalid, api, "layoutKvOptional",
                c.forward ? "\"BSND\", \"TND\" or \"PA_BBND\"" : "\"BSND\" or \"TND\"", "nullptr");
  }
  if (!smlaIsLayout(a.layoutQ, "TND") && !smlaIsLayout(a.layoutQ, "BSND")) {
    return fail(kInvalid, api, "layoutQOptional", "\"BSND\" or \"TND\"", std::string("\"") + a.layoutQ + "\"");
  }
  if (!c.tndKv() && !c.bsndKv() && !(c.forward && c.pagedKv())) {
    return fail(kInvalid, api, "layoutKvOptional",
                c.forward ? "\"BSND\", \"TND\" or \"PA_BBND\"" : "\"BSND\" or \"TND\"",
                std::string("\"") + a.layoutKv + "\"");
  }
  if (!c.pagedKv() && std::string(a.layoutQ) != a.layoutKv) {
    return fail(kInvalid, api, "layoutKvOptional",
                std::string("layoutQOptional's \"") + a.layoutQ + "\"" + (c.forward ? " (unless PA_BBND)" : ""),
                std::string("\"") + a.layoutKv + "\"");
  }
  if (smlaIsLayout(a.layoutQ, "BSND") && a.maxSeqlenQ <= 0) {
    return invalidValue(c, "maxSeqlenQ", "> 0 with layout BSND (the S of q)", a.maxSeqlenQ);
  }
  if (a.hasOriKv && c.bsndKv() && a.maxSeqlenOriKv <= 0) {
    return invalidValue(c, "maxSeqlenOriKv", "> 0 with hasOriKv and kv layout BSND (the S of ori kv)",
                        a.maxSeqlenOriKv);
  }
  if (a.hasCmpKv && c.bsndKv() && a.maxSeqlenCmpKv <= 0) {
    return invalidValue(c, "maxSeqlenCmpKv", "> 0 with hasCmpKv and kv layout BSND (the S of cmp kv)",
                        a.maxSeqlenCmpKv);
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkSingle(const Call& c) {
  const SmlaMetaArgs& a = c.a;
  const char* api = a.api();
  GRADKIT_RETURN_IF_ERROR(
      checkSmlaRange(api, "batchSize", a.batchSize, 0, kSmlaMetaMaxBatch, "upstream: >= 0; gradkit's batch limit"));
  GRADKIT_RETURN_IF_ERROR(checkSmlaRange(api, "maxSeqlenQ", a.maxSeqlenQ, 0, kInt32Max, kInt32));
  GRADKIT_RETURN_IF_ERROR(checkSmlaRange(api, "maxSeqlenOriKv", a.maxSeqlenOriKv, 0, kInt32Max, kInt32));
  GRADKIT_RETURN_IF_ERROR(checkSmlaRange(api, "maxSeqlenCmpKv", a.maxSeqlenCmpKv, 0, kInt32Max, kInt32));
  GRADKIT_RETURN_IF_ERROR(checkHeads(c));
  if (a.hasOriKv) GRADKIT_RETURN_IF_ERROR(checkOriSide(c));
  if (a.hasCmpKv) GRADKIT_RETURN_IF_ERROR(checkCmpSide(c));
  return checkLayouts(c);
}

aclnnStatus checkExistence(const Call& c) {
  const SmlaMetaArgs& a = c.a;
  const char* api = a.api();
  if (c.tndQ()) GRADKIT_RETURN_IF_ERROR(checkSmlaExists(api, c.cuQ, "layout of q TND"));
  if (a.hasOriKv) {
    if (c.tndKv()) GRADKIT_RETURN_IF_ERROR(checkSmlaExists(api, c.cuOri, "hasOriKv and kv layout TND"));
    if (c.forward && c.pagedKv() && (!c.a5 || a.oriMaskMode != 0 || a.oriTopk == 0)) {
      GRADKIT_RETURN_IF_ERROR(checkSmlaExists(
          api, c.usedOri, c.a5 ? "kv layout PA_BBND unless ori mask mode 0 with ori top-k" : "kv layout PA_BBND"));
    }
    if (c.oriTopkLenUsed()) GRADKIT_RETURN_IF_ERROR(checkSmlaExists(api, c.oriTopkLen, "oriTopk != 0, mask mode 0"));
  }
  if (a.hasCmpKv) {
    if (c.tndKv()) GRADKIT_RETURN_IF_ERROR(checkSmlaExists(api, c.cuCmp, "hasCmpKv and kv layout TND"));
    if (c.forward && c.pagedKv() && (!c.a5 || a.cmpMaskMode != 0 || a.cmpTopk == 0)) {
      GRADKIT_RETURN_IF_ERROR(checkSmlaExists(
          api, c.usedCmp, c.a5 ? "kv layout PA_BBND unless cmp mask mode 0 with cmp top-k" : "kv layout PA_BBND"));
    }
    if (a.cmpRatio != 1 && a.cmpMaskMode == 3) {
      GRADKIT_RETURN_IF_ERROR(checkSmlaExists(api, c.residual, "cmpRatio != 1 with cmp mask mode 3"));
    }
    if (c.cmpTopkLenUsed()) GRADKIT_RETURN_IF_ERROR(checkSmlaExists(api, c.cmpTopkLen, "cmpTopk != 0, mask mode 0"));
  }
  return checkSmlaExists(api, c.metadata, "the output");
}

/** A used topk-length tensor's dims: BSND [query batch, maxSeqlenQ, numHeadsKv], TND [., numHeadsKv]. */
aclnnStatus checkTopkLengthDims(const Call& c, const SmlaInput& t, const SmlaBatch& query) {
  const aclTensor& x = *t.tensor;
  const std::vector<int64_t> expected = c.tndQ() ? std::vector<int64_t>{x.viewDims[0], c.a.numHeadsKv}
                                                 : std::vector<int64_t>{query.count, c.a.maxSeqlenQ, c.a.numHeadsKv};
  const char* why = c.tndQ() ? "[T1, numHeadsKv]" : "[B, maxSeqlenQ, numHeadsKv] with B the query batch";
  return checkShapeIs(c.a.api(), t.name, x, expected, why);
}

aclnnStatus checkConsistency(const Call& c, SmlaBatch* query) {
  const SmlaMetaArgs& a = c.a;
  const char* api = a.api();
  auto present = [](SmlaInput t) { return SmlaInput{t.name, smlaPresent(t.tensor)}; };
  if (!c.a5 && smlaExists(a.cmpTopkLength)) {
    return fail(kInvalid, api, c.cmpTopkLen.name, "nullptr or an empty tensor (reserved on Atlas A2/A3)",
                "shape " + a.cmpTopkLength->shapeString());
  }
  GRADKIT_RETURN_IF_ERROR(checkSmlaLengthTensor(api, present(c.cuQ)));
  GRADKIT_RETURN_IF_ERROR(checkSmlaLengthTensor(api, present(c.usedQ)));
  if (a.hasOriKv) {
    GRADKIT_RETURN_IF_ERROR(checkSmlaLengthTensor(api, present(c.cuOri)));
    GRADKIT_RETURN_IF_ERROR(checkSmlaLengthTensor(api, present(c.usedOri)));
    if (c.oriTopkLenUsed()) GRADKIT_RETURN_IF_ERROR(checkSmlaTopkLengthTensor(api, present(c.oriTopkLen), c.tndQ()));
  }
  if (a.hasCmpKv) {
    GRADKIT_RETURN_IF_ERROR(checkSmlaLengthTensor(api, present(c.cuCmp)));
    GRADKIT_RETURN_IF_ERROR(checkSmlaLengthTensor(api, present(c.usedCmp)));
    GRADKIT_RETURN_IF_ERROR(checkSmlaLengthTensor(api, present(c.residual)));
    if (c.cmpTopkLenUsed()) GRADKIT_RETURN_IF_ERROR(checkSmlaTopkLengthTensor(api, present(c.cmpTopkLen), c.tndQ()));
  }
  GRADKIT_RETURN_IF_ERROR(checkSmlaMetadataTensor(api, c.metadata, kSmlaMetadataWords, true));

  *query = smlaBatchOf(c.usedQ, c.cuQ, c.tndQ(), a.batchSize);
  GRADKIT_RETURN_IF_ERROR(checkSmlaBatchLimit(api, *query));
  if (c.tndQ() && smlaExists(a.sequsedQ)) GRADKIT_RETURN_IF_ERROR(checkSmlaCuMatchesSeqused(api, c.cuQ, c.usedQ));
  if (a.hasOriKv) {
    GRADKIT_RETURN_IF_ERROR(
        checkSmlaSameBatch(api, *query, smlaBatchOf(c.usedOri, c.cuOri, c.tndKv(), a.batchSize), "ori kv"));
    if (c.tndKv() && smlaExists(a.sequsedOriKv)) {
      GRADKIT_RETURN_IF_ERROR(checkSmlaCuMatchesSeqused(api, c.cuOri, c.usedOri));
    }
    if (c.oriTopkLenUsed()) GRADKIT_RETURN_IF_ERROR(checkTopkLengthDims(c, c.oriTopkLen, *query));
  }
  if (a.hasCmpKv) {
    GRADKIT_RETURN_IF_ERROR(
        checkSmlaSameBatch(api, *query, smlaBatchOf(c.usedCmp, c.cuCmp, c.tndKv(), a.batchSize), "cmp kv"));
    if (c.tndKv() && smlaExists(a.sequsedCmpKv)) {
      GRADKIT_RETURN_IF_ERROR(checkSmlaCuMatchesSeqused(api, c.cuCmp, c.usedCmp));
    }
    if (smlaExists(a.cmpResidualKv) && a.cmpResidualKv->viewDims[0] != query->count) {
      return fail(kInvalid, api, c.residual.name,
                  std::to_string(query->count) + " elements (the query batch, " + query->from + ")",
                  "shape " + a.cmpResidualKv->shapeString());
    }
    if (c.cmpTopkLenUsed()) GRADKIT_RETURN_IF_ERROR(checkTopkLengthDims(c, c.cmpTopkLen, *query));
  }
  return ACLNN_SUCCESS;
}

/** The tensors the call reads (those that exist) and writes, for gradkit's pointer, format and memory rules. */
aclnnStatus checkMemory(const Call& c) {
  const char* api = c.a.api();
  std::vector<NamedTensor> inputs;
  for (const SmlaInput& t :
       {c.cuQ, c.cuOri, c.cuCmp, c.usedQ, c.usedOri, c.usedCmp, c.residual, c.oriTopkLen, c.cmpTopkLen}) {
    if (smlaExists(t.tensor)) inputs.push_back({t.name, t.tensor});
  }
  const std::vector<NamedTensor> outputs{{c.metadata.name, c.metadata.tensor}};
  GRADKIT_RETURN_IF_ERROR(checkEachHasData(api, inputs));
  GRADKIT_RETURN_IF_ERROR(checkEachHasData(api, outputs));
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormats(api, inputs));
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormats(api, outputs));
  return checkMemoryRules(api, inputs, outputs);
}

/** One kv side's values: cu_seqlens (TND kv), seqused (<= max seqlen for BSND kv, <= the cu length for TND). */
aclnnStatus checkKvValues(const Call& c, const SmlaInput& cu, const SmlaInput& used, int64_t maxSeqlen,
                          const char* maxName) {
  const std::vector<int64_t> cuValues = c.tndKv() ? readInt32Values(smlaPresent(cu.tensor)) : std::vector<int64_t>{};
  GRADKIT_RETURN_IF_ERROR(checkSmlaCuSeqlensValues(c.a.api(), cu.name, cuValues));
  return checkSmlaSequsedValues(c.a.api(), used.name, readInt32Values(smlaPresent(used.tensor)),
                                c.bsndKv() ? maxSeqlen : -1, maxName, cuValues);
}

/** The rows the planner reads of a topk-length tensor: upstream's sum of query lengths, and each batch's last row. */
aclnnStatus checkTopkLengthValues(const Call& c, const SmlaInput& t, const std::vector<SmlaMetaBatch>& rows) {
  int64_t sum = 0, end = 0;
  for (const SmlaMetaBatch& b : rows) {
    sum += b.qRows;
    end = std::max(end, b.rowStart + b.qRows);
  }
  return checkSmlaTopkLengthValues(
      c.a.api(), t, std::max(sum, end),
      "one per query row: " + std::to_string(sum) + " rows, the last read is row " + std::to_string(end - 1));
}

aclnnStatus checkValues(const Call& c) {
  const SmlaMetaArgs& a = c.a;
  const char* api = a.api();
  const std::vector<int64_t> cuQ = c.tndQ() ? readInt32Values(c.cuQ.tensor) : std::vector<int64_t>{};
  GRADKIT_RETURN_IF_ERROR(checkSmlaCuSeqlensValues(api, c.cuQ.name, cuQ));
  GRADKIT_RETURN_IF_ERROR(checkSmlaSequsedValues(api, c.usedQ.name, readInt32Values(smlaPresent(a.sequsedQ)),
                                                 c.tndQ() ? -1 : a.maxSeqlenQ, "maxSeqlenQ", cuQ));
  const SmlaBatch query = smlaBatchOf(c.usedQ, c.cuQ, c.tndQ(), a.batchSize);
  int64_t total = query.count * a.maxSeqlenQ;  // BSND without seqused; at most 2^20 x (2^31 - 1)
  if (smlaExists(a.sequsedQ)) {
    total = 0;
    for (int64_t rows : readInt32Values(a.sequsedQ)) total += rows;
  } else if (c.tndQ()) {
    total = cuQ.back();
  }
  GRADKIT_RETURN_IF_ERROR(checkSmlaRowLimit(api, total, "the query rows of every batch"));
  const std::vector<SmlaMetaBatch> rows =
      smlaQueryBatches(c.cuQ.tensor, a.sequsedQ, c.tndQ(), query.count, a.maxSeqlenQ);
  if (a.hasOriKv) {
    GRADKIT_RETURN_IF_ERROR(checkKvValues(c, c.cuOri, c.usedOri, a.maxSeqlenOriKv, "maxSeqlenOriKv"));
    if (c.oriTopkLenUsed()) GRADKIT_RETURN_IF_ERROR(checkTopkLengthValues(c, c.oriTopkLen, rows));
  }
  if (a.hasCmpKv) {
    GRADKIT_RETURN_IF_ERROR(checkKvValues(c, c.cuCmp, c.usedCmp, a.maxSeqlenCmpKv, "maxSeqlenCmpKv"));
    GRADKIT_RETURN_IF_ERROR(
        checkSmlaResidualValues(api, c.residual.name, readInt32Values(smlaPresent(a.cmpResidualKv)), a.cmpRatio));
    if (c.cmpTopkLenUsed()) GRADKIT_RETURN_IF_ERROR(checkTopkLengthValues(c, c.cmpTopkLen, rows));
  }
  return ACLNN_SUCCESS;
}

}  // namespace

aclnnStatus checkSmlaMetadata(const SmlaMetaArgs& args, const uint64_t* workspaceSize, aclOpExecutor* const* executor) {
  GRADKIT_RETURN_IF_ERROR(checkSmlaOutParams(args.api(), workspaceSize, executor));
  if (args.op == SmlaMetaOp::Grad) GRADKIT_RETURN_IF_ERROR(checkSmlaAscend950Only(args.api()));
  const Call c = callOf(args);
  GRADKIT_RETURN_IF_ERROR(checkSingle(c));
  GRADKIT_RETURN_IF_ERROR(checkExistence(c));
  SmlaBatch query;
  GRADKIT_RETURN_IF_ERROR(checkConsistency(c, &query));
  GRADKIT_RETURN_IF_ERROR(checkMemory(c));
  return checkValues(c);
}

}  // namespace gradkit::ops
