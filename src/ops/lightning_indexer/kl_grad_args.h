// The arguments of aclnnSparseLightningIndexerKLLossGrad and aclnnSparseLightningIndexerKLLossGradMetadata, packed
// once (docs/sparse_lightning_indexer_kl_loss_grad.md). Upstream: ops-transformer
// attention/sparse_lightning_indexer_kl_loss_grad and attention/sparse_lightning_indexer_kl_loss_grad_metadata.
#pragma once

#include <cstdint>

#include "aclnn/aclnn_base.h"
#include "opapi/tensor.h"

namespace gradkit::ops {

inline constexpr const char* kKlGradApi = "aclnnSparseLightningIndexerKLLossGrad";
inline constexpr const char* kKlGradMetadataApi = "aclnnSparseLightningIndexerKLLossGradMetadata";

/** One aclnnSparseLightningIndexerKLLossGrad call, as the caller gave it (0-dim optionals already absent). */
struct KlGradArgs {
  const aclTensor* q;
  const aclTensor* k;
  const aclTensor* w;
  const aclTensor* sparseIndices;
  const aclTensor* attnSoftmaxL1Norm;
  const aclTensor* cuSeqLensQ;    // optional
  const aclTensor* cuSeqLensK;    // optional
  const aclTensor* seqUsedQ;      // optional
  const aclTensor* seqUsedK;      // optional
  const aclTensor* cmpResidualK;  // optional
  const aclTensor* metadata;      // required on Ascend950; content ignored
  const char* layoutQ;
  const char* layoutK;
  int64_t maskMode;
  int64_t cmpRatio;
  aclTensor* dq;
  aclTensor* dk;
  aclTensor* dw;
  aclTensor* softmaxOut;
};

/** One aclnnSparseLightningIndexerKLLossGradMetadata call (0-dim optionals already absent). */
struct KlGradMetadataArgs {
  const aclTensor* cuSeqLensQ;
  const aclTensor* cuSeqLensK;
  const aclTensor* seqUsedQ;
  const aclTensor* seqUsedK;
  const aclTensor* cmpResidualK;
  int64_t batchSize;
  int64_t maxSeqlenQ;
  int64_t maxSeqlenK;
  int64_t numHeadsQ;
  int64_t numHeadsK;
  int64_t headDim;
  int64_t topk;
  const char* layoutQ;
  const char* layoutK;
  int64_t maskMode;
  int64_t cmpRatio;
  aclTensor* metadata;
};

}  // namespace gradkit::ops
