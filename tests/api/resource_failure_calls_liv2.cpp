// The resource-failure calls of aclnnLightningIndexerV2 and aclnnLightningIndexerV2Metadata (resource_failure_calls.h).
#include <cstdint>
#include <vector>

#include "aclnnop/aclnn_lightning_indexer_v2.h"
#include "aclnnop/aclnn_lightning_indexer_v2_metadata.h"
#include "api/resource_failure_calls.h"

namespace gradkit_test {
namespace {

/** An INT32 input of `shape` holding zeros. */
aclTensor* zeroInts(OpCall& call, const std::vector<int64_t>& shape) {
  aclTensor* tensor = shaped(call, ACL_INT32, sizeof(int32_t), shape, false);
  call.inputs.back()->fill(0);
  return tensor;
}

}  // namespace

/** BSND, B 1, S1 8, N1 4, 16 compressed keys of ratio 4 (residual 0), causal, top 6 with values. */
std::unique_ptr<OpCall> lightningIndexerV2() {
  auto call = std::make_unique<OpCall>();
  aclTensor* q = mhcBf16(*call, {1, 8, 4, 128}, 0.25f);
  aclTensor* k = mhcBf16(*call, {1, 16, 1, 128}, 0.5f);
  aclTensor* w = mhcFloat(*call, {1, 8, 4}, 1.0f);
  aclTensor* residual = zeroInts(*call, {1});
  aclTensor* metadata = zeroInts(*call, {1024});
  aclTensor* indices = shaped(*call, ACL_INT32, sizeof(int32_t), {1, 8, 1, 6}, true);
  aclTensor* values = mhcFloatOutput(*call, {1, 8, 1, 6});
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    char layout[] = "BSND";
    return aclnnLightningIndexerV2GetWorkspaceSize(q, k, w, nullptr, nullptr, nullptr, nullptr, residual, nullptr,
                                                   nullptr, metadata, 6, -1, layout, layout, 3, 4, 1, indices, values,
                                                   size, executor);
  };
  call->secondPhase = aclnnLightningIndexerV2;
  return call;
}

/** The metadata of the call above. */
std::unique_ptr<OpCall> lightningIndexerV2Metadata() {
  auto call = std::make_unique<OpCall>();
  aclTensor* residual = zeroInts(*call, {1});
  aclTensor* metadata = shaped(*call, ACL_INT32, sizeof(int32_t), {1024}, true);
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    char layout[] = "BSND";
    return aclnnLightningIndexerV2MetadataGetWorkspaceSize(nullptr, nullptr, nullptr, nullptr, residual, 4, 1, 128, 6,
                                                           1, 8, 16, layout, layout, 3, 4, metadata, size, executor);
  };
  call->secondPhase = aclnnLightningIndexerV2Metadata;
  return call;
}

}  // namespace gradkit_test
