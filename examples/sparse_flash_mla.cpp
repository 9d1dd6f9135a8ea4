// aclnnSparseFlashMlaMetadata then aclnnSparseFlashMla, called the way a CANN program does: init, device, stream,
// device memory, tensors, the two phases, synchronize, copy back. One batch (TND, BF16) of S1 = 3 query rows with
// N1 = 2 heads over S2 = 5 ori rows (causal, oriMaskMode 3) and C = 2 compressed rows (cmpRatio 2, residual 1, CSA:
// top-k lists with a -1 end and an entry the row may not see). Every KV row is a constant vector, so each score is
// known in closed form; the program recomputes out and lse in double from the rules of docs/sparse_attention.md and
// exits non-zero when the operator differs by more than bf16 rounding.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_sparse_flash_mla.h"
#include "aclnnop/aclnn_sparse_flash_mla_metadata.h"

static constexpr int64_t kS1 = 3, kN1 = 2, kD = 512, kS2 = 5, kC = 2, kK2 = 3, kRatio = 2, kResidual = 1;

static uint16_t toBf16(float value) {  // round to nearest even (the values here are exact in bf16)
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof bits);
  return static_cast<uint16_t>((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
}

static float fromBf16(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value = 0.0f;
  std::memcpy(&value, &wide, sizeof value);
  return value;
}

// One device buffer and the contiguous ND tensor over it.
struct DeviceTensor {
  void* address = nullptr;
  aclTensor* tensor = nullptr;
};

template <class T>
static DeviceTensor createTensor(const std::vector<T>& host, const std::vector<int64_t>& shape, aclDataType type) {
  DeviceTensor out;
  const size_t bytes = host.size() * sizeof(T);
  aclrtMalloc(&out.address, bytes, ACL_MEM_MALLOC_HUGE_FIRST);
  aclrtMemcpy(out.address, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE);
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
  out.tensor = aclCreateTensor(shape.data(), shape.size(), type, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                               shape.size(), out.address);
  return out;
}

static int run(aclnnStatus planned, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream,
               aclnnStatus (*second)(void*, uint64_t, aclOpExecutor*, aclrtStream), const char* name) {
  if (planned != ACL_SUCCESS) {
    std::printf("%sGetWorkspaceSize failed: %s\n", name, aclGetRecentErrMsg());
    return 1;
  }
  void* workspace = nullptr;
  if (workspaceSize > 0) aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
  const aclnnStatus ret = second(workspace, workspaceSize, executor, stream);
  aclrtSynchronizeStream(stream);
  if (workspace != nullptr) aclrtFree(workspace);
  if (ret != ACL_SUCCESS) std::printf("%s failed: %s\n", name, aclGetRecentErrMsg());
  return ret != ACL_SUCCESS;
}

int main() {
  aclInit(nullptr);
  aclrtSetDevice(0);
  aclrtStream stream = nullptr;
  aclrtCreateStream(&stream);

  // q[i][n][:] = 0.0625 (i + 1) (n + 1) / 8; ori row j = 0.125 (j + 1); cmp row c = -0.25 (c + 1); scale 1 / 8.
  std::vector<uint16_t> q(kS1 * kN1 * kD), ori(kS2 * kD), cmp(kC * kD), out(q.size(), 0);
  for (int64_t i = 0; i < kS1; ++i) {
    for (int64_t n = 0; n < kN1; ++n) {
      for (int64_t e = 0; e < kD; ++e) q[(i * kN1 + n) * kD + e] = toBf16(0.0625f * (i + 1) * (n + 1) / 8);
    }
  }
  for (int64_t j = 0; j < kS2; ++j) {
    for (int64_t e = 0; e < kD; ++e) ori[j * kD + e] = toBf16(0.125f * (j + 1));
  }
  for (int64_t c = 0; c < kC; ++c) {
    for (int64_t e = 0; e < kD; ++e) cmp[c * kD + e] = toBf16(-0.25f * (c + 1));
  }
  const std::vector<int32_t> indices = {1, 0, -1, 0, 1, 1, 1, 0, 0};  // row 0 may see cmp row 0 only: its 1 is dropped
  const std::vector<int32_t> cuQ = {0, kS1}, cuOri = {0, kS2}, cuCmp = {0, kC}, residual = {kResidual};
  const std::vector<float> sinks = {0.5f, -1.0f};
  std::vector<int32_t> metadata(1024, 0);
  std::vector<float> lse(kS1 * kN1, 0.0f);

  DeviceTensor tq = createTensor(q, {kS1, kN1, kD}, ACL_BF16), tOri = createTensor(ori, {kS2, 1, kD}, ACL_BF16);
  DeviceTensor tCmp = createTensor(cmp, {kC, 1, kD}, ACL_BF16), tIdx = createTensor(indices, {kS1, 1, kK2}, ACL_INT32);
  DeviceTensor tCuQ = createTensor(cuQ, {2}, ACL_INT32), tCuOri = createTensor(cuOri, {2}, ACL_INT32);
  DeviceTensor tCuCmp = createTensor(cuCmp, {2}, ACL_INT32), tRes = createTensor(residual, {1}, ACL_INT32);
  DeviceTensor tSinks = createTensor(sinks, {kN1}, ACL_FLOAT), tMeta = createTensor(metadata, {1024}, ACL_INT32);
  DeviceTensor tOut = createTensor(out, {kS1, kN1, kD}, ACL_BF16), tLse = createTensor(lse, {1, kS1, kN1}, ACL_FLOAT);

  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  const char* layout = "TND";
  aclnnStatus planned = aclnnSparseFlashMlaMetadataGetWorkspaceSize(
      tCuQ.tensor, tCuOri.tensor, tCuCmp.tensor, nullptr, nullptr, nullptr, tRes.tensor, nullptr, nullptr, kN1, 1, kD,
      1, kS1, kS2, kC, 0, kK2, kRatio, 3, 3, -1, -1, layout, layout, true, true, tMeta.tensor, &workspaceSize,
      &executor);
  if (run(planned, workspaceSize, executor, stream, aclnnSparseFlashMlaMetadata, "aclnnSparseFlashMlaMetadata"))
    return 1;

  char layoutQ[] = "TND", layoutKv[] = "TND";
  planned = aclnnSparseFlashMlaGetWorkspaceSize(
      tq.tensor, tOri.tensor, tCmp.tensor, nullptr, tIdx.tensor, nullptr, nullptr, tCuQ.tensor, tCuOri.tensor,
      tCuCmp.tensor, nullptr, nullptr, nullptr, tRes.tensor, nullptr, nullptr, tSinks.tensor, tMeta.tensor, 0.125,
      kRatio, 3, 3, -1, -1, layoutQ, layoutKv, 1, true, tOut.tensor, tLse.tensor, &workspaceSize, &executor);
  if (run(planned, workspaceSize, executor, stream, aclnnSparseFlashMla, "aclnnSparseFlashMla")) return 1;
  aclrtMemcpy(out.data(), out.size() * 2, tOut.address, out.size() * 2, ACL_MEMCPY_DEVICE_TO_HOST);
  aclrtMemcpy(lse.data(), lse.size() * 4, tLse.address, lse.size() * 4, ACL_MEMCPY_DEVICE_TO_HOST);

  int bad = 0;
  for (int64_t i = 0; i < kS1; ++i) {
    // Keys of row i: ori rows [0, S2 - S1 + i + 1), then the listed cmp rows below v = (C r + res - S1 + i + 1) / r.
    std::vector<double> keyValue;
    for (int64_t j = 0; j < kS2 - kS1 + i + 1; ++j) keyValue.push_back(fromBf16(ori[j * kD]));
    const int64_t visible = std::min<int64_t>(kC, (kC * kRatio + kResidual - kS1 + i + 1) / kRatio);
    for (int64_t slot = 0; slot < std::min(kK2, visible); ++slot) {
      const int32_t c = indices[i * kK2 + slot];
      if (c < 0) break;
      if (c < visible) keyValue.push_back(fromBf16(cmp[c * kD]));
    }
    for (int64_t n = 0; n < kN1; ++n) {
      const double qValue = fromBf16(q[(i * kN1 + n) * kD]);
      double sum = std::exp(static_cast<double>(sinks[n])), weighted = 0.0;
      for (double v : keyValue) {
        const double p = std::exp(0.125 * kD * qValue * v);
        sum += p;
        weighted += p * v;
      }
      const double expectOut = weighted / sum, expectLse = std::log(sum);
      const double gotOut = fromBf16(out[(i * kN1 + n) * kD]), gotLse = lse[i * kN1 + n];
      const bool ok = std::fabs(gotOut - expectOut) <= 1e-2 * std::fabs(expectOut) + 1e-3 &&
                      std::fabs(gotLse - expectLse) <= 1e-5 * (1 + std::fabs(expectLse));
      std::printf("row %ld head %ld: %zu keys, out %.6f (expected %.6f), lse %.6f (expected %.6f)%s\n",
                  static_cast<long>(i), static_cast<long>(n), keyValue.size(), gotOut, expectOut, gotLse, expectLse,
                  ok ? "" : "  MISMATCH");
      bad += ok ? 0 : 1;
    }
  }
  for (DeviceTensor* t : {&tq, &tOri, &tCmp, &tIdx, &tCuQ, &tCuOri, &tCuCmp, &tRes, &tSinks, &tMeta, &tOut, &tLse}) {
    aclDestroyTensor(t->tensor);
    aclrtFree(t->address);
  }
  aclrtDestroyStream(stream);
  aclrtResetDevice(0);
  aclFinalize();
  std::printf("%s\n", bad == 0 ? "sparse_flash_mla: ok" : "sparse_flash_mla: FAILED");
  return bad == 0 ? 0 : 1;
}
