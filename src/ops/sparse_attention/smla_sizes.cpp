#include "ops/sparse_attention/smla_sizes.h"

#include <cstring>

#include "opapi/tensor.h"
#include "opapi/tensor_copy.h"

namespace gradkit::ops {
namespace {

const aclTensor* absentIfEmpty(const aclTensor* t) { return t != nullptr && t->numel() == 0 ? nullptr : t; }

/** Rows of batch b: from the prefix sums, else `perBatch`. */
int64_t rowsOf(const std::vector<int64_t>& cu, int64_t perBatch, int64_t b) {
  return cu.empty() ? perBatch : cu[b + 1] - cu[b];
}

}  // namespace

std::optional<SmlaLayout> smlaLayoutOf(const char* name) {
  if (name == nullptr || std::strcmp(name, "BSND") == 0) return SmlaLayout::Bsnd;
  if (std::strcmp(name, "TND") == 0) return SmlaLayout::Tnd;
  if (std::strcmp(name, "PA_BBND") == 0) return SmlaLayout::PaBbnd;
  return std::nullopt;
}

const char* smlaLayoutName(SmlaLayout layout) {
  switch (layout) {
    case SmlaLayout::Bsnd:
      return "BSND";
    case SmlaLayout::Tnd:
      return "TND";
    case SmlaLayout::PaBbnd:
      return "PA_BBND";
  }
  return "?";
}

SmlaArgs smlaWithEmptyOptionalsAbsent(const SmlaArgs& args) {
  SmlaArgs a = args;
  for (const aclTensor** t :
       {&a.oriKv, &a.cmpKv, &a.oriSparseIndices, &a.cmpSparseIndices, &a.oriBlockTable, &a.cmpBlockTable, &a.cuSeqlensQ,
        &a.cuSeqlensOriKv, &a.cuSeqlensCmpKv, &a.sequsedQ, &a.sequsedOriKv, &a.sequsedCmpKv, &a.cmpResidualKv,
        &a.oriTopkLength, &a.cmpTopkLength, &a.sinks, &a.metadata}) {
    *t = absentIfEmpty(*t);
  }
  if (!a.returnSoftmaxLse) a.softmaxLse = nullptr;  // a placeholder: never checked or written
  return a;
}

SmlaShape smlaShapeOf(const SmlaArgs& args) {
  SmlaShape s;
  s.layoutQ = *smlaLayoutOf(args.layoutQ);
  s.layoutKv = *smlaLayoutOf(args.layoutKv);
  const aclTensor& q = *args.q;
  s.hasCmp = args.cmpKv != nullptr;
  s.n1 = q.viewDims[q.dim() - 2];
  s.d = q.viewDims[q.dim() - 1];
  if (s.layoutQ == SmlaLayout::Bsnd) {
    s.batch = q.viewDims[0];
    s.s1 = q.viewDims[1];
    s.tokens = s.batch * s.s1;
  } else {
    s.batch = args.cuSeqlensQ == nullptr ? 0 : args.cuSeqlensQ->numel() - 1;
    s.tokens = q.viewDims[0];
  }
  return s;
}

int64_t smlaKvRows(const aclTensor& kv, SmlaLayout layout) {
  return layout == SmlaLayout::Tnd ? kv.viewDims[0] : kv.viewDims[1];
}

SmlaLengths smlaLengthsOf(const SmlaArgs& a) {
  SmlaLengths l;
  l.cuQ = readInt32Values(a.cuSeqlensQ);
  l.cuOri = readInt32Values(a.cuSeqlensOriKv);
  l.cuCmp = readInt32Values(a.cuSeqlensCmpKv);
  l.seqQ = readInt32Values(a.sequsedQ);
  l.seqOri = readInt32Values(a.sequsedOriKv);
  l.seqCmp = readInt32Values(a.sequsedCmpKv);
  l.residual = readInt32Values(a.cmpResidualKv);
  return l;
}

std::vector<kernels::SmlaBatch> smlaBatchesOf(const SmlaArgs& a, const SmlaShape& shape, const SmlaLengths& l) {
  const bool paged = shape.layoutKv == SmlaLayout::PaBbnd;
  int64_t oriPerBatch = 0;  // no oriKv (the softmax L1 norm's problem: compressed keys only): no ori rows
  if (a.oriKv != nullptr) {
    oriPerBatch = paged ? a.oriBlockTable->viewDims[1] * smlaKvRows(*a.oriKv, shape.layoutKv)
                        : smlaKvRows(*a.oriKv, shape.layoutKv);
  }
  int64_t cmpPerBatch = 0;
  if (shape.hasCmp) {
    cmpPerBatch = paged ? a.cmpBlockTable->viewDims[1] * smlaKvRows(*a.cmpKv, shape.layoutKv)
                        : smlaKvRows(*a.cmpKv, shape.layoutKv);
  }
  std::vector<kernels::SmlaBatch> batches(static_cast<size_t>(shape.batch));
  for (int64_t b = 0; b < shape.batch; ++b) {
    kernels::SmlaBatch& x = batches[static_cast<size_t>(b)];
    x.qRow0 = l.cuQ.empty() ? b * shape.s1 : l.cuQ[b];
    x.qRows = rowsOf(l.cuQ, shape.s1, b);
    x.s1 = l.seqQ.empty() ? x.qRows : l.seqQ[b];
    x.oriRow0 = l.cuOri.empty() ? 0 : l.cuOri[b];
    x.s2 = l.seqOri.empty() ? rowsOf(l.cuOri, oriPerBatch, b) : l.seqOri[b];
    if (shape.hasCmp) {
      x.cmpRow0 = l.cuCmp.empty() ? 0 : l.cuCmp[b];
      x.c = l.seqCmp.empty() ? rowsOf(l.cuCmp, cmpPerBatch, b) : l.seqCmp[b];
      x.restored = x.c * a.cmpRatio + (l.residual.empty() ? 0 : l.residual[b]);
    }
  }
  return batches;
}

}  // namespace gradkit::ops
