#include "ops/sparse_attention/smla_metadata_problem.h"

#include <cstdint>
#include <vector>

#include "opapi/tensor_copy.h"
#include "ops/sparse_attention/smla_metadata_rules.h"

namespace gradkit::ops {
namespace {

/** One kv side's length in batch b: seqused, else the cu_seqlens length (TND kv), else unknown or maxSeqlen. */
int64_t kvLength(const std::vector<int64_t>& used, const std::vector<int64_t>& cu, size_t b, bool unknown,
                 int64_t maxSeqlen) {
  if (!used.empty()) return used[b];
  if (!cu.empty()) return cu[b + 1] - cu[b];
  return unknown ? kSmlaUnknownKvLength : maxSeqlen;
}

/** The values of an existing int32 tensor, else none. */
std::vector<int64_t> valuesOf(const aclTensor* t) { return readInt32Values(smlaPresent(t)); }

}  // namespace

std::vector<SmlaMetaBatch> smlaQueryBatches(const aclTensor* cuSeqlensQ, const aclTensor* sequsedQ, bool tndQ,
                                            int64_t batch, int64_t maxSeqlenQ) {
  const std::vector<int64_t> cu = tndQ ? valuesOf(cuSeqlensQ) : std::vector<int64_t>{};
  const std::vector<int64_t> used = valuesOf(sequsedQ);
  std::vector<SmlaMetaBatch> batches(static_cast<size_t>(batch));
  for (size_t b = 0; b < batches.size(); ++b) {
    batches[b].qRows = !used.empty() ? used[b] : !cu.empty() ? cu[b + 1] - cu[b] : maxSeqlenQ;
    batches[b].rowStart = !cu.empty() ? cu[b] : static_cast<int64_t>(b) * maxSeqlenQ;
  }
  return batches;
}

SmlaMetaProblem smlaMetaProblemOf(const SmlaMetaArgs& a, bool ascend950) {
  const bool tndQ = smlaIsLayout(a.layoutQ, "TND");
  const bool tndKv = smlaIsLayout(a.layoutKv, "TND");
  const bool pagedKv = smlaIsLayout(a.layoutKv, "PA_BBND");
  SmlaMetaProblem p;
  p.ascend950 = ascend950;
  p.group = a.numHeadsQ / a.numHeadsKv;
  p.kvHeads = a.numHeadsKv;
  p.hasOri = a.hasOriKv;
  p.hasCmp = a.hasCmpKv;
  p.oriTopk = a.hasOriKv ? a.oriTopk : 0;
  p.cmpTopk = a.hasCmpKv ? a.cmpTopk : 0;
  p.cmpRatio = a.cmpRatio;
  p.oriMaskMode = a.oriMaskMode;
  p.cmpMaskMode = a.cmpMaskMode;
  p.oriWinLeft = a.oriWinLeft;
  p.oriWinRight = a.oriWinRight;

  const SmlaBatch batch = smlaBatchOf({"", a.sequsedQ}, {"", a.cuSeqlensQ}, tndQ, a.batchSize);
  const std::vector<int64_t> none;
  const std::vector<int64_t> cuOri = p.hasOri && tndKv ? valuesOf(a.cuSeqlensOriKv) : none;
  const std::vector<int64_t> usedOri = p.hasOri ? valuesOf(a.sequsedOriKv) : none;
  const std::vector<int64_t> cuCmp = p.hasCmp && tndKv ? valuesOf(a.cuSeqlensCmpKv) : none;
  const std::vector<int64_t> usedCmp = p.hasCmp ? valuesOf(a.sequsedCmpKv) : none;
  const std::vector<int64_t> residual = p.hasCmp ? valuesOf(a.cmpResidualKv) : none;
  // Only the forward planner knows no length (upstream's GetOriS2SeqSize returns UINT32_MAX; the gradient's uses 0).
  const bool forward = a.op == SmlaMetaOp::Forward;
  const bool oriUnknown = forward && p.oriTopk != 0 && (pagedKv || a.maxSeqlenOriKv == 0);
  const bool cmpUnknown = forward && p.cmpTopk != 0 && (pagedKv || a.maxSeqlenCmpKv == 0);

  p.batches = smlaQueryBatches(a.cuSeqlensQ, a.sequsedQ, tndQ, batch.count, a.maxSeqlenQ);
  for (size_t b = 0; b < p.batches.size(); ++b) {
    SmlaMetaBatch& out = p.batches[b];
    if (p.hasOri) out.oriLen = kvLength(usedOri, cuOri, b, oriUnknown, a.maxSeqlenOriKv);
    if (p.hasCmp) out.cmpLen = kvLength(usedCmp, cuCmp, b, cmpUnknown, a.maxSeqlenCmpKv);
    if (!residual.empty()) out.residual = residual[b];
  }
  if (p.oriTopk != 0 && p.oriMaskMode == 0) p.oriTopkLength = valuesOf(a.oriTopkLength);
  if (p.cmpTopk != 0 && p.cmpMaskMode == 0) p.cmpTopkLength = valuesOf(a.cmpTopkLength);
  return p;
}

int64_t smlaL1TotalRows(const SmlaL1MetaArgs& a) {
  const bool tndQ = smlaIsLayout(a.layoutQ, "TND");
  const SmlaBatch batch = smlaBatchOf({"", a.seqUsedQ}, {"", a.cuSeqLensQ}, tndQ, a.batchSize);
  if (smlaExists(a.seqUsedQ)) {
    int64_t total = 0;
    for (int64_t rows : readInt32Values(a.seqUsedQ)) total += rows;
    return total;
  }
  if (tndQ && smlaExists(a.cuSeqLensQ)) return readInt32Values(a.cuSeqLensQ).back();
  return batch.count * a.maxSeqLenQ;
}

}  // namespace gradkit::ops
