// aclnnSparseFlashMlaSoftmaxL1Norm called the way a CANN program does: init, device, stream, device memory, tensors,
// the metadata operator, then the two phases, synchronize, copy back.
//
// CSA, TND: one batch of 4 query rows and 2 heads over 8 compressed keys (ratio 4, mask 3, residual 0), so row i sees
// v = floor((8 * 4 - 4 + i + 1) / 4) = 7, 7, 7, 8 keys. Every row lists the keys {0, 1, 1, 9}: the duplicate is its own
// slot, 9 is past every row's keys and is dropped (its slot stays 0). q is 0, so every score is 0, and softmaxLse is
// ln(v): every listed key's probability is 1 / v for both heads, and so is their mean. The program checks every slot
// against that closed form and exits non-zero on a mismatch.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_sparse_flash_mla_softmax_l1_norm.h"
#include "aclnnop/aclnn_sparse_flash_mla_softmax_l1_norm_metadata.h"

struct Device {
  void* address = nullptr;
  aclTensor* tensor = nullptr;
};

template <class T>
static int create(const std::vector<T>& values, const std::vector<int64_t>& shape, aclDataType dtype, Device* out) {
  const size_t bytes = values.size() * sizeof(T);
  if (aclrtMalloc(&out->address, bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return 1;
  if (aclrtMemcpy(out->address, bytes, values.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS) return 1;
  out->tensor = aclCreateTensor(shape.data(), shape.size(), dtype, nullptr, 0, ACL_FORMAT_ND, shape.data(),
                                shape.size(), out->address);
  return out->tensor == nullptr;
}

static int run(aclrtStream stream) {
  const int64_t rows = 4, heads = 2, d = 512, keys = 8, k = 4, ratio = 4;
  const int v[4] = {7, 7, 7, 8};
  std::vector<float> lse(rows * heads);
  for (int64_t r = 0; r < rows; ++r) lse[r * heads] = lse[r * heads + 1] = std::log(static_cast<float>(v[r]));
  const int32_t listed[4] = {0, 1, 1, 9};
  std::vector<int32_t> indices(rows * k);
  for (int64_t e = 0; e < rows * k; ++e) indices[e] = listed[e % k];
  Device q, kv, lseT, idx, cuQ, cuK, residual, metadata, out;
  if (create(std::vector<uint16_t>(rows * heads * d, 0), {rows, heads, d}, ACL_FLOAT16, &q) ||
      create(std::vector<uint16_t>(keys * d, 0x3C00), {keys, 1, d}, ACL_FLOAT16, &kv) ||
      create(lse, {1, rows, heads}, ACL_FLOAT, &lseT) || create(indices, {rows, 1, k}, ACL_INT32, &idx) ||
      create(std::vector<int32_t>{0, 4}, {2}, ACL_INT32, &cuQ) ||
      create(std::vector<int32_t>{0, 8}, {2}, ACL_INT32, &cuK) ||
      create(std::vector<int32_t>{0}, {1}, ACL_INT32, &residual) ||
      create(std::vector<int32_t>(64, 0), {64}, ACL_INT32, &metadata) ||
      create(std::vector<float>(rows * k, -1.0f), {rows, 1, k}, ACL_FLOAT, &out)) {
    std::printf("creating the tensors failed\n");
    return 1;
  }
  char layout[] = "TND";
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus status = aclnnSparseFlashMlaSoftmaxL1NormMetadataGetWorkspaceSize(
      cuQ.tensor, cuK.tensor, nullptr, nullptr, residual.tensor, nullptr, 0, rows, keys, heads, 1, d, k, ratio, 3,
      layout, layout, metadata.tensor, &size, &executor);
  if (status != ACL_SUCCESS || aclnnSparseFlashMlaSoftmaxL1NormMetadata(nullptr, 0, executor, stream) != ACL_SUCCESS) {
    std::printf("metadata failed: %s\n", aclGetRecentErrMsg());
    return 1;
  }
  status = aclnnSparseFlashMlaSoftmaxL1NormGetWorkspaceSize(
      q.tensor, kv.tensor, lseT.tensor, idx.tensor, cuQ.tensor, cuK.tensor, nullptr, nullptr, residual.tensor, nullptr,
      metadata.tensor, 1.0 / std::sqrt(512.0), keys, ratio, 3, layout, layout, out.tensor, &size, &executor);
  if (status != ACL_SUCCESS) {
    std::printf("aclnnSparseFlashMlaSoftmaxL1NormGetWorkspaceSize failed: %s\n", aclGetRecentErrMsg());
    return 1;
  }
  void* workspace = nullptr;
  if (size > 0 && aclrtMalloc(&workspace, size, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return 1;
  if (aclnnSparseFlashMlaSoftmaxL1Norm(workspace, size, executor, stream) != ACL_SUCCESS ||
      aclrtSynchronizeStream(stream) != ACL_SUCCESS) {
    std::printf("aclnnSparseFlashMlaSoftmaxL1Norm failed: %s\n", aclGetRecentErrMsg());
    return 1;
  }
  std::vector<float> result(rows * k);
  aclrtMemcpy(result.data(), result.size() * 4, out.address, result.size() * 4, ACL_MEMCPY_DEVICE_TO_HOST);
  int wrong = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t slot = 0; slot < k; ++slot) {
      const float expected = slot < 3 ? 1.0f / static_cast<float>(v[r]) : 0.0f;
      const float got = result[r * k + slot];
      std::printf("row %lld slot %lld: %.7f (expected %.7f)\n", static_cast<long long>(r), static_cast<long long>(slot),
                  got, expected);
      if (std::fabs(got - expected) > 1e-6f) ++wrong;
    }
  }
  if (workspace != nullptr) aclrtFree(workspace);
  for (Device* t : {&q, &kv, &lseT, &idx, &cuQ, &cuK, &residual, &metadata, &out}) {
    aclDestroyTensor(t->tensor);
    aclrtFree(t->address);
  }
  std::printf(wrong == 0 ? "all slots match\n" : "%d slots differ\n", wrong);
  return wrong == 0 ? 0 : 1;
}

int main() {
  if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 1;
  aclrtStream stream = nullptr;
  if (aclrtCreateStream(&stream) != ACL_SUCCESS) return 1;
  const int result = run(stream);
  aclrtDestroyStream(stream);
  aclrtResetDevice(0);
  aclFinalize();
  return result;
}
