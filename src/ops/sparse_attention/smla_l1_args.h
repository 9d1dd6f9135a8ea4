// The arguments of aclnnSparseFlashMlaSoftmaxL1Norm, packed once (ops-transformer
// attention/sparse_flash_mla_softmax_l1_norm), and the sparse MLA problem they describe: the compressed part of an
// aclnnSparseFlashMla call without ori rows (k = cmpKv, maskMode = cmpMaskMode), so the L1 norm shares the forward's
// size model, visibility rule and key cursor.
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "ops/sparse_attention/smla_args.h"

namespace gradkit::ops {

inline constexpr const char* kSmlaL1Api = "aclnnSparseFlashMlaSoftmaxL1Norm";

/** One aclnnSparseFlashMlaSoftmaxL1Norm call, as the caller gave it. */
struct SmlaL1Args {
  const aclTensor* q;
  const aclTensor* k;
  const aclTensor* softmaxLse;
  const aclTensor* sparseIndices;
  const aclTensor* cuSeqlensQ;
  const aclTensor* cuSeqlensK;
  const aclTensor* sequsedQ;
  const aclTensor* sequsedK;
  const aclTensor* cmpResidualK;
  const aclTensor* topkLength;
  const aclTensor* metadata;
  double softmaxScale;
  int64_t maxSeqlenK;
  int64_t cmpRatio;
  int64_t maskMode;
  const char* layoutQ;
  const char* layoutK;
  const aclTensor* softmaxL1Norm;
};

/** The call with its optional tensors of zero elements made absent (upstream: "nullptr or empty"). */
inline SmlaL1Args smlaL1WithEmptyOptionalsAbsent(const SmlaL1Args& args) {
  SmlaL1Args a = args;
  for (const aclTensor** t :
       {&a.sparseIndices, &a.cuSeqlensQ, &a.cuSeqlensK, &a.sequsedQ, &a.sequsedK, &a.cmpResidualK, &a.topkLength}) {
    if (*t != nullptr && (*t)->numel() == 0) *t = nullptr;
  }
  return a;
}

/** The sparse MLA problem of a call: its compressed part, no ori rows, no sinks. */
inline SmlaArgs smlaL1ProblemArgs(const SmlaL1Args& a) {
  SmlaArgs s{};
  s.q = a.q;
  s.cmpKv = a.k;
  s.cmpSparseIndices = a.sparseIndices;
  s.cuSeqlensQ = a.cuSeqlensQ;
  s.cuSeqlensCmpKv = a.cuSeqlensK;
  s.sequsedQ = a.sequsedQ;
  s.sequsedCmpKv = a.sequsedK;
  s.cmpResidualKv = a.cmpResidualK;
  s.cmpTopkLength = a.topkLength;
  s.metadata = a.metadata;
  s.softmaxScale = a.softmaxScale;
  s.cmpRatio = a.cmpRatio;
  s.oriMaskMode = 0;
  s.cmpMaskMode = a.maskMode;
  s.oriWinLeft = -1;
  s.oriWinRight = -1;
  s.layoutQ = a.layoutQ;
  s.layoutKv = a.layoutK;
  s.topkValueMode = 1;
  return s;
}

}  // namespace gradkit::ops
