// The sparse attention metadata calls of the resource-failure table (resource_failure_calls.h).
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "aclnnop/aclnn_sparse_flash_mla.h"
#include "aclnnop/aclnn_sparse_flash_mla_grad.h"
#include "aclnnop/aclnn_sparse_flash_mla_grad_metadata.h"
#include "aclnnop/aclnn_sparse_flash_mla_metadata.h"
#include "aclnnop/aclnn_sparse_flash_mla_softmax_l1_norm.h"
#include "aclnnop/aclnn_sparse_flash_mla_softmax_l1_norm_metadata.h"
#include "api/resource_failure_calls.h"

namespace gradkit_test {
namespace {

/** An INT32 input holding `values`. */
aclTensor* ints(OpCall& call, const std::vector<int32_t>& values) {
  aclTensor* tensor = shaped(call, ACL_INT32, sizeof(int32_t), {static_cast<int64_t>(values.size())}, false);
  std::memcpy(call.inputs.back()->data(), values.data(), values.size() * sizeof(int32_t));
  return tensor;
}

/** The forward or gradient metadata of a TND call: 2 batches, ori band (127, 0), HCA with ratio 4. */
std::unique_ptr<OpCall> metadataCall(bool grad) {
  auto call = std::make_unique<OpCall>();
  aclTensor* cuQ = ints(*call, {0, 3, 8});
  aclTensor* cuOri = ints(*call, {0, 40, 100});
  aclTensor* cuCmp = ints(*call, {0, 10, 15});
  aclTensor* residual = ints(*call, {0, 3});
  aclTensor* metadata = shaped(*call, ACL_INT32, sizeof(int32_t), {1024}, true);
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    auto first = grad ? aclnnSparseFlashMlaGradMetadataGetWorkspaceSize : aclnnSparseFlashMlaMetadataGetWorkspaceSize;
    return first(cuQ, cuOri, cuCmp, nullptr, nullptr, nullptr, residual, nullptr, nullptr, 64, 1, 512, 0, 0, 0, 0, 0, 0,
                 4, 4, 3, 127, 0, "TND", "TND", true, true, metadata, size, executor);
  };
  call->secondPhase = grad ? aclnnSparseFlashMlaGradMetadata : aclnnSparseFlashMlaMetadata;
  return call;
}

}  // namespace

std::unique_ptr<OpCall> sparseFlashMlaMetadata() { return metadataCall(false); }

std::unique_ptr<OpCall> sparseFlashMlaGradMetadata() { return metadataCall(true); }

std::unique_ptr<OpCall> sparseFlashMlaSoftmaxL1NormMetadata() {
  auto call = std::make_unique<OpCall>();
  aclTensor* cuQ = ints(*call, {0, 6, 10});
  aclTensor* cuK = ints(*call, {0, 128, 256});
  aclTensor* metadata = shaped(*call, ACL_INT32, sizeof(int32_t), {64}, true);
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    static char tnd[] = "TND";
    return aclnnSparseFlashMlaSoftmaxL1NormMetadataGetWorkspaceSize(
        cuQ, cuK, nullptr, nullptr, nullptr, nullptr, 0, 0, 0, 8, 1, 512, 0, 1, 0, tnd, tnd, metadata, size, executor);
  };
  call->secondPhase = aclnnSparseFlashMlaSoftmaxL1NormMetadata;
  return call;
}

std::unique_ptr<OpCall> sparseFlashMla() {
  // TND q of 2 batches (3 and 5 rows) with 2 heads over TND KV: band (127, 0) and HCA with ratio 4.
  auto call = std::make_unique<OpCall>();
  aclTensor* q = shaped(*call, ACL_BF16, 2, {8, 2, 512}, false);
  aclTensor* ori = shaped(*call, ACL_BF16, 2, {20, 1, 512}, false);
  aclTensor* cmp = shaped(*call, ACL_BF16, 2, {5, 1, 512}, false);
  aclTensor* cuQ = ints(*call, {0, 3, 8});
  aclTensor* cuOri = ints(*call, {0, 8, 20});
  aclTensor* cuCmp = ints(*call, {0, 2, 5});
  aclTensor* residual = ints(*call, {0, 0});
  aclTensor* sinks = shaped(*call, ACL_FLOAT, 4, {2}, false);
  aclTensor* metadata = ints(*call, std::vector<int32_t>(1024, 0));
  aclTensor* out = shaped(*call, ACL_BF16, 2, {8, 2, 512}, true);
  aclTensor* lse = shaped(*call, ACL_FLOAT, 4, {1, 8, 2}, true);
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    static char tnd[] = "TND";
    return aclnnSparseFlashMlaGetWorkspaceSize(q, ori, cmp, nullptr, nullptr, nullptr, nullptr, cuQ, cuOri, cuCmp,
                                               nullptr, nullptr, nullptr, residual, nullptr, nullptr, sinks, metadata,
                                               0.0442, 4, 4, 3, 127, 0, tnd, tnd, 1, true, out, lse, size, executor);
  };
  call->secondPhase = aclnnSparseFlashMla;
  return call;
}

std::unique_ptr<OpCall> sparseFlashMlaGrad() {
  // The forward's call above, backward: its q, KV and lengths, an out / lse / dOut of small values (any out and lse
  // are valid inputs), sinks, and every gradient output (dq, dOriKv, dCmpKv, dSinks).
  auto call = std::make_unique<OpCall>();
  aclTensor* q = mhcBf16(*call, {8, 2, 512}, 0.25f);
  aclTensor* ori = mhcBf16(*call, {20, 1, 512}, -0.125f);
  aclTensor* cmp = mhcBf16(*call, {5, 1, 512}, 0.5f);
  aclTensor* dOut = mhcBf16(*call, {8, 2, 512}, 0.75f);
  aclTensor* out = mhcBf16(*call, {8, 2, 512}, 0.0625f);
  aclTensor* lse = mhcFloat(*call, {1, 8, 2}, 1.5f);
  aclTensor* cuQ = ints(*call, {0, 3, 8});
  aclTensor* cuOri = ints(*call, {0, 8, 20});
  aclTensor* cuCmp = ints(*call, {0, 2, 5});
  aclTensor* residual = ints(*call, {0, 0});
  aclTensor* sinks = mhcFloat(*call, {2}, 0.5f);
  aclTensor* metadata = ints(*call, std::vector<int32_t>(1024, 0));
  aclTensor* dq = shaped(*call, ACL_BF16, 2, {8, 2, 512}, true);
  aclTensor* dOri = shaped(*call, ACL_BF16, 2, {20, 1, 512}, true);
  aclTensor* dCmp = shaped(*call, ACL_BF16, 2, {5, 1, 512}, true);
  aclTensor* dSinks = mhcFloatOutput(*call, {2});
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    static char tnd[] = "TND";
    return aclnnSparseFlashMlaGradGetWorkspaceSize(q, dOut, out, lse, ori, cmp, nullptr, nullptr, cuQ, cuOri, cuCmp,
                                                   nullptr, nullptr, nullptr, residual, nullptr, nullptr, sinks,
                                                   metadata, 0.0442, 4, 4, 3, 127, 0, tnd, tnd, dq, dOri, dCmp, dSinks,
                                                   nullptr, nullptr, size, executor);
  };
  call->secondPhase = aclnnSparseFlashMlaGrad;
  return call;
}

std::unique_ptr<OpCall> sparseFlashMlaSoftmaxL1Norm() {
  // TND q of 2 batches (3 and 5 rows) with 2 heads over 5 compressed keys (2 and 3), ratio 4, mask 3, dense.
  auto call = std::make_unique<OpCall>();
  aclTensor* q = shaped(*call, ACL_BF16, 2, {8, 2, 512}, false);
  aclTensor* k = shaped(*call, ACL_BF16, 2, {5, 1, 512}, false);
  aclTensor* lse = shaped(*call, ACL_FLOAT, 4, {1, 8, 2}, false);
  aclTensor* cuQ = ints(*call, {0, 3, 8});
  aclTensor* cuK = ints(*call, {0, 2, 5});
  aclTensor* residual = ints(*call, {0, 0});
  aclTensor* metadata = ints(*call, std::vector<int32_t>(64, 0));
  aclTensor* out = shaped(*call, ACL_FLOAT, 4, {8, 1, 3}, true);
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    static char tnd[] = "TND";
    return aclnnSparseFlashMlaSoftmaxL1NormGetWorkspaceSize(q, k, lse, nullptr, cuQ, cuK, nullptr, nullptr, residual,
                                                            nullptr, metadata, 0.0442, 3, 4, 3, tnd, tnd, out, size,
                                                            executor);
  };
  call->secondPhase = aclnnSparseFlashMlaSoftmaxL1Norm;
  return call;
}

}  // namespace gradkit_test
