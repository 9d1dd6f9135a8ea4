#include "ops/sparse_attention/smla_grad_args.h"

#include "opapi/tensor.h"

namespace gradkit::ops {

SmlaGradArgs smlaGradWithEmptyOptionalsAbsent(const SmlaGradArgs& args) {
  SmlaGradArgs a = args;
  for (const aclTensor** t : {&a.oriKv,         &a.cmpKv,          &a.oriSparseIndices, &a.cmpSparseIndices,
                              &a.cuSeqlensQ,    &a.cuSeqlensOriKv, &a.cuSeqlensCmpKv,   &a.sequsedQ,
                              &a.sequsedOriKv,  &a.sequsedCmpKv,   &a.cmpResidualKv,    &a.oriTopkLength,
                              &a.cmpTopkLength, &a.sinks,          &a.metadata,         &a.dOriKv,
                              &a.dCmpKv,        &a.dSinks,         &a.oriSoftmaxL1Norm, &a.cmpSoftmaxL1Norm}) {
    if (*t != nullptr && (*t)->numel() == 0) *t = nullptr;
  }
  return a;
}

SmlaArgs smlaForwardViewOf(const SmlaGradArgs& a) {
  return SmlaArgs{a.query,
                  a.oriKv,
                  a.cmpKv,
                  a.oriSparseIndices,
                  a.cmpSparseIndices,
                  nullptr,
                  nullptr,
                  a.cuSeqlensQ,
                  a.cuSeqlensOriKv,
                  a.cuSeqlensCmpKv,
                  a.sequsedQ,
                  a.sequsedOriKv,
                  a.sequsedCmpKv,
                  a.cmpResidualKv,
                  a.oriTopkLength,
                  a.cmpTopkLength,
                  a.sinks,
                  a.metadata,
                  a.scaleValue,
                  a.cmpRatio,
                  a.oriMaskMode,
                  a.cmpMaskMode,
                  a.oriWinLeft,
                  a.oriWinRight,
                  a.layoutQ,
                  a.layoutKv,
                  1,
                  true,
                  a.out,
                  a.lse};
}

}  // namespace gradkit::ops
