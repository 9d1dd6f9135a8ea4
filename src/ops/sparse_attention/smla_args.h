// The arguments of aclnnSparseFlashMla, packed once. Upstream: ops-transformer attention/sparse_flash_mla
// (docs/aclnnSparseFlashMla.md there; here docs/sparse_attention.md).
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"

namespace gradkit::ops {

inline constexpr const char* kSmlaApi = "aclnnSparseFlashMla";

/** One aclnnSparseFlashMla call, as the caller gave it (optional tensors with zero elements count as absent). */
struct SmlaArgs {
  const aclTensor* q;
  const aclTensor* oriKv;
  const aclTensor* cmpKv;
  const aclTensor* oriSparseIndices;
  const aclTensor* cmpSparseIndices;
  const aclTensor* oriBlockTable;
  const aclTensor* cmpBlockTable;
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
  double softmaxScale;
  int64_t cmpRatio;
  int64_t oriMaskMode;
  int64_t cmpMaskMode;
  int64_t oriWinLeft;
  int64_t oriWinRight;
  const char* layoutQ;
  const char* layoutKv;
  int64_t topkValueMode;
  bool returnSoftmaxLse;
  const aclTensor* attnOut;
  const aclTensor* softmaxLse;
};

}  // namespace gradkit::ops
