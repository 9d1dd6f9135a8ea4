// The SparseLightningIndexerKLLossGrad calls of the resource-failure tests: TND, one batch of 8 query rows over 4
// compressed keys, N1 8, K 16, BF16, no mask (every row selects keys 0..3), metadata zeros (ignored).
#include <cstdint>
#include <vector>

#include "aclnnop/aclnn_sparse_lightning_indexer_kl_loss_grad.h"
#include "aclnnop/aclnn_sparse_lightning_indexer_kl_loss_grad_metadata.h"
#include "api/resource_failure_calls.h"

namespace gradkit_test {
namespace {

constexpr int64_t kKlRows = 8, kKlKeys = 4, kKlHeads = 8, kKlDim = 128, kKlTopk = 16;
char kKlLayout[] = "TND";

std::vector<int32_t> klIndices() {
  std::vector<int32_t> indices(static_cast<size_t>(kKlRows * kKlTopk), -1);
  for (int64_t t = 0; t < kKlRows; ++t) {
    for (int64_t j = 0; j < kKlKeys; ++j) indices[static_cast<size_t>(t * kKlTopk + j)] = static_cast<int32_t>(j);
  }
  return indices;
}

}  // namespace

std::unique_ptr<OpCall> klLossGrad() {
  auto call = std::make_unique<OpCall>();
  aclTensor* q = mhcBf16(*call, {kKlRows, kKlHeads, kKlDim}, 0.25f);
  aclTensor* k = mhcBf16(*call, {kKlKeys, 1, kKlDim}, 0.5f);
  aclTensor* w = mhcFloat(*call, {kKlRows, kKlHeads}, 0.125f);
  aclTensor* indices = int32Input(*call, klIndices(), {kKlRows, 1, kKlTopk});
  aclTensor* target = mhcFloat(*call, {kKlRows, 1, kKlTopk}, 0.0625f);
  aclTensor* cuQ = int32Input(*call, {0, kKlRows});
  aclTensor* cuK = int32Input(*call, {0, kKlKeys});
  aclTensor* metadata = int32Input(*call, std::vector<int32_t>(64, 0));
  aclTensor* dq = shaped(*call, ACL_BF16, sizeof(uint16_t), {kKlRows, kKlHeads, kKlDim}, true);
  aclTensor* dk = shaped(*call, ACL_BF16, sizeof(uint16_t), {kKlKeys, 1, kKlDim}, true);
  aclTensor* dw = mhcFloatOutput(*call, {kKlRows, kKlHeads});
  aclTensor* softmaxOut = mhcFloatOutput(*call, {kKlRows, 1, kKlTopk});
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnSparseLightningIndexerKLLossGradGetWorkspaceSize(q, k, w, indices, target, cuQ, cuK, nullptr, nullptr,
                                                                 nullptr, metadata, kKlLayout, kKlLayout, 0, 1, dq, dk,
                                                                 dw, softmaxOut, size, executor);
  };
  call->secondPhase = aclnnSparseLightningIndexerKLLossGrad;
  return call;
}

std::unique_ptr<OpCall> klLossGradMetadata() {
  auto call = std::make_unique<OpCall>();
  aclTensor* cuQ = int32Input(*call, {0, kKlRows});
  aclTensor* cuK = int32Input(*call, {0, kKlKeys});
  aclTensor* metadata = shaped(*call, ACL_INT32, sizeof(int32_t), {64}, true);
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnSparseLightningIndexerKLLossGradMetadataGetWorkspaceSize(
        cuQ, cuK, nullptr, nullptr, nullptr, 0, kKlRows, kKlKeys, kKlHeads, 1, kKlDim, kKlTopk, kKlLayout, kKlLayout, 0,
        1, metadata, size, executor);
  };
  call->secondPhase = aclnnSparseLightningIndexerKLLossGradMetadata;
  return call;
}

}  // namespace gradkit_test
