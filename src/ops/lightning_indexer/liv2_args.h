// The arguments of aclnnLightningIndexerV2 and aclnnLightningIndexerV2Metadata, packed once as the caller gave them.
// Facts and decisions: docs/lightning_indexer_v2.md; upstream's aclnnLightningIndexerV2 doc (ops-transformer
// attention/lightning_indexer_v2/docs).
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"

namespace gradkit::ops {

inline constexpr const char* kLiV2Api = "aclnnLightningIndexerV2";
inline constexpr const char* kLiV2MetadataApi = "aclnnLightningIndexerV2Metadata";

/** One aclnnLightningIndexerV2 call (optional tensors given as 0-dim count as absent: absentIfScalar). */
struct LiV2Args {
  const aclTensor* q;
  const aclTensor* k;
  const aclTensor* w;
  const aclTensor* cuSeqlensQ;       // optional: TND q only
  const aclTensor* cuSeqlensK;       // optional: TND k only
  const aclTensor* sequsedQ;         // optional
  const aclTensor* sequsedK;         // optional; required with PA_BBND
  const aclTensor* cmpResidualK;     // optional; required (Ascend950) when cmpRatio != 1 and maskMode != 0
  const aclTensor* blockTable;       // optional: PA_BBND only
  const aclTensor* outputIdxOffset;  // optional
  const aclTensor* metadata;         // required on Ascend950 (never read), ignored elsewhere
  int64_t topk;
  int64_t maxSeqlenQ;
  const char* layoutQ;
  const char* layoutK;
  int64_t maskMode;
  int64_t cmpRatio;
  int64_t returnValue;
  const aclTensor* sparseIndices;
  const aclTensor* sparseValues;  // written only with returnValue = 1
};

/** One aclnnLightningIndexerV2Metadata call. */
struct LiV2MetadataArgs {
  const aclTensor* cuSeqlensQ;
  const aclTensor* cuSeqlensK;
  const aclTensor* sequsedQ;
  const aclTensor* sequsedK;
  const aclTensor* cmpResidualK;
  int64_t numHeadsQ;
  int64_t numHeadsK;
  int64_t headDim;
  int64_t topk;
  int64_t batchSize;
  int64_t maxSeqlenQ;
  int64_t maxSeqlenK;
  const char* layoutQ;
  const char* layoutK;
  int64_t maskMode;
  int64_t cmpRatio;
  const aclTensor* metadata;
};

}  // namespace gradkit::ops
