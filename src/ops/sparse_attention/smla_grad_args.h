// The arguments of aclnnSparseFlashMlaGrad, packed once (upstream: ops-transformer attention/sparse_flash_mla_grad).
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "ops/sparse_attention/smla_args.h"

namespace gradkit::ops {

inline constexpr const char* kSmlaGradApi = "aclnnSparseFlashMlaGrad";

/** One aclnnSparseFlashMlaGrad call, as the caller gave it. */
struct SmlaGradArgs {
  const aclTensor* query;
  const aclTensor* dOut;
  const aclTensor* out;
  const aclTensor* lse;
  const aclTensor* oriKv;
  const aclTensor* cmpKv;
  const aclTensor* oriSparseIndices;
  const aclTensor* cmpSparseIndices;
  const aclTensor* cuSeqlensQ;
  const aclTensor* cuSeqlensOriKv;
  const aclTensor* cuSeqlensCmpKv;
  const aclTensor* sequsedQ;
  const aclTensor* sequsedOriKv;
  const aclTensor* sequsedCmpKv;
  const aclTensor* cmpResidualKv;
  const aclTensor* oriTopkLength;
  const aclTensor* cmpTopkLength;
  const aclTensor* sinks;
  const aclTensor* metadata;
  double scaleValue;
  int64_t cmpRatio;
  int64_t oriMaskMode;
  int64_t cmpMaskMode;
  int64_t oriWinLeft;
  int64_t oriWinRight;
  const char* layoutQ;
  const char* layoutKv;
  const aclTensor* dQuery;
  const aclTensor* dOriKv;
  const aclTensor* dCmpKv;
  const aclTensor* dSinks;
  const aclTensor* oriSoftmaxL1Norm;
  const aclTensor* cmpSoftmaxL1Norm;
};

/** The call with its optional tensors (inputs and outputs) of zero elements made absent. */
SmlaGradArgs smlaGradWithEmptyOptionalsAbsent(const SmlaGradArgs& args);

/**
 * The forward's view of the call (q = query, attnOut = out, softmaxLse = lse, no block tables): the size model,
 * the shared rules and the key cursor read it.
 */
SmlaArgs smlaForwardViewOf(const SmlaGradArgs& args);

}  // namespace gradkit::ops
