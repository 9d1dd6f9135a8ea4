// aclnnSparseFlashMlaMetadata, aclnnSparseFlashMla, aclnnSparseFlashMlaGradMetadata, then aclnnSparseFlashMlaGrad,
// called the way a CANN training step does: the forward's out and lse feed the gradient. One batch (TND, BF16) of
// S1 = 3 query rows with N1 = 2 heads over S2 = 5 ori rows (causal, oriMaskMode 3) and C = 2 compressed rows
// (cmpRatio 2, residual 1, CSA: top-k lists with a -1 end, an entry the row may not see and a duplicate). Every KV row
// and every dOut row is a constant vector, so each score, P, dP and dS is known in closed form: the program recomputes
// dq, dOriKv, dCmpKv, dSinks and the cmp softmax L1 norm in double from the formulas of
// include/aclnnop/aclnn_sparse_flash_mla_grad.h (using the forward's out and lse as the operator does) and exits
// non-zero when the operator differs by more than bf16 rounding.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_sparse_flash_mla.h"
#include "aclnnop/aclnn_sparse_flash_mla_grad.h"
#include "aclnnop/aclnn_sparse_flash_mla_grad_metadata.h"
#include "aclnnop/aclnn_sparse_flash_mla_metadata.h"

static constexpr int64_t kS1 = 3, kN1 = 2, kD = 512, kS2 = 5, kC = 2, kK2 = 3, kRatio = 2, kResidual = 1;
static constexpr double kScale = 0.125;

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

/** got within `tolerance` of expected; prints a mismatch. */
static int check(const char* what, int64_t a, int64_t b, double got, double expected, double tolerance) {
  if (std::fabs(got - expected) <= tolerance) return 0;
  std::printf("%s [%ld][%ld]: %.6g, expected %.6g  MISMATCH\n", what, static_cast<long>(a), static_cast<long>(b), got,
              expected);
  return 1;
}

int main() {
  aclInit(nullptr);
  aclrtSetDevice(0);
  aclrtStream stream = nullptr;
  aclrtCreateStream(&stream);

  // q[i][n][:] = 0.0625 (i + 1) (n + 1) / 8; ori row j = 0.125 (j + 1); cmp row c = -0.25 (c + 1);
  // dOut[i][n][:] = 0.5 - 0.25 (i + n).
  std::vector<uint16_t> q(kS1 * kN1 * kD), dOut(q.size()), ori(kS2 * kD), cmp(kC * kD), out(q.size(), 0);
  for (int64_t i = 0; i < kS1; ++i) {
    for (int64_t n = 0; n < kN1; ++n) {
      for (int64_t e = 0; e < kD; ++e) {
        q[(i * kN1 + n) * kD + e] = toBf16(0.0625f * (i + 1) * (n + 1) / 8);
        dOut[(i * kN1 + n) * kD + e] = toBf16(0.5f - 0.25f * static_cast<float>(i + n));
      }
    }
  }
  for (int64_t j = 0; j < kS2; ++j) {
    for (int64_t e = 0; e < kD; ++e) ori[j * kD + e] = toBf16(0.125f * (j + 1));
  }
  for (int64_t c = 0; c < kC; ++c) {
    for (int64_t e = 0; e < kD; ++e) cmp[c * kD + e] = toBf16(-0.25f * (c + 1));
  }
  // Row 0 reads one slot (its threshold is 1) and drops its 1; row 1 lists cmp row 1 twice (its gradient counts
  // twice); the third slot is past every row's threshold (2), never read.
  const std::vector<int32_t> indices = {1, 0, -1, 1, 1, 0, 1, 0, 0};
  const std::vector<int32_t> cuQ = {0, kS1}, cuOri = {0, kS2}, cuCmp = {0, kC}, residual = {kResidual};
  const std::vector<float> sinks = {0.5f, -1.0f};
  std::vector<int32_t> metadata(1024, 0), gradMetadata(1024, 0);
  std::vector<float> lse(kS1 * kN1, 0.0f), dSinks(kN1, 0.0f), cmpL1(kS1 * kK2, 0.0f);
  std::vector<uint16_t> dq(q.size(), 0), dOri(ori.size(), 0), dCmp(cmp.size(), 0);

  DeviceTensor tq = createTensor(q, {kS1, kN1, kD}, ACL_BF16), tOri = createTensor(ori, {kS2, 1, kD}, ACL_BF16);
  DeviceTensor tCmp = createTensor(cmp, {kC, 1, kD}, ACL_BF16), tIdx = createTensor(indices, {kS1, 1, kK2}, ACL_INT32);
  DeviceTensor tCuQ = createTensor(cuQ, {2}, ACL_INT32), tCuOri = createTensor(cuOri, {2}, ACL_INT32);
  DeviceTensor tCuCmp = createTensor(cuCmp, {2}, ACL_INT32), tRes = createTensor(residual, {1}, ACL_INT32);
  DeviceTensor tSinks = createTensor(sinks, {kN1}, ACL_FLOAT), tMeta = createTensor(metadata, {1024}, ACL_INT32);
  DeviceTensor tGradMeta = createTensor(gradMetadata, {1024}, ACL_INT32);
  DeviceTensor tOut = createTensor(out, {kS1, kN1, kD}, ACL_BF16), tLse = createTensor(lse, {1, kS1, kN1}, ACL_FLOAT);
  DeviceTensor tdOut = createTensor(dOut, {kS1, kN1, kD}, ACL_BF16), tdq = createTensor(dq, {kS1, kN1, kD}, ACL_BF16);
  DeviceTensor tdOri = createTensor(dOri, {kS2, 1, kD}, ACL_BF16), tdCmp = createTensor(dCmp, {kC, 1, kD}, ACL_BF16);
  DeviceTensor tdSinks = createTensor(dSinks, {kN1}, ACL_FLOAT), tL1 = createTensor(cmpL1, {kS1, 1, kK2}, ACL_FLOAT);

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
      tCuCmp.tensor, nullptr, nullptr, nullptr, tRes.tensor, nullptr, nullptr, tSinks.tensor, tMeta.tensor, kScale,
      kRatio, 3, 3, -1, -1, layoutQ, layoutKv, 1, true, tOut.tensor, tLse.tensor, &workspaceSize, &executor);
  if (run(planned, workspaceSize, executor, stream, aclnnSparseFlashMla, "aclnnSparseFlashMla")) return 1;
  planned = aclnnSparseFlashMlaGradMetadataGetWorkspaceSize(tCuQ.tensor, tCuOri.tensor, tCuCmp.tensor, nullptr, nullptr,
                                                            nullptr, tRes.tensor, nullptr, nullptr, kN1, 1, kD, 1, kS1,
                                                            kS2, kC, 0, kK2, kRatio, 3, 3, -1, -1, layout, layout, true,
                                                            true, tGradMeta.tensor, &workspaceSize, &executor);
  if (run(planned, workspaceSize, executor, stream, aclnnSparseFlashMlaGradMetadata, "aclnnSparseFlashMlaGradMetadata"))
    return 1;
  planned = aclnnSparseFlashMlaGradGetWorkspaceSize(
      tq.tensor, tdOut.tensor, tOut.tensor, tLse.tensor, tOri.tensor, tCmp.tensor, nullptr, tIdx.tensor, tCuQ.tensor,
      tCuOri.tensor, tCuCmp.tensor, nullptr, nullptr, nullptr, tRes.tensor, nullptr, nullptr, tSinks.tensor,
      tGradMeta.tensor, kScale, kRatio, 3, 3, -1, -1, layoutQ, layoutKv, tdq.tensor, tdOri.tensor, tdCmp.tensor,
      tdSinks.tensor, nullptr, tL1.tensor, &workspaceSize, &executor);
  if (run(planned, workspaceSize, executor, stream, aclnnSparseFlashMlaGrad, "aclnnSparseFlashMlaGrad")) return 1;
  const auto back = [](auto& host, const DeviceTensor& t) {
    const size_t bytes = host.size() * sizeof(host[0]);
    aclrtMemcpy(host.data(), bytes, t.address, bytes, ACL_MEMCPY_DEVICE_TO_HOST);
  };
  back(out, tOut), back(lse, tLse), back(dq, tdq), back(dOri, tdOri), back(dCmp, tdCmp), back(dSinks, tdSinks);
  back(cmpL1, tL1);

  // The closed form: every vector is constant, so q . k = D q v and the per-row sums reduce to the keys' values.
  std::vector<double> expectDq(kS1 * kN1, 0.0), expectOri(kS2, 0.0), expectCmp(kC, 0.0), expectSinks(kN1, 0.0);
  std::vector<double> expectL1(kS1 * kK2, 0.0);
  for (int64_t i = 0; i < kS1; ++i) {
    struct Key {
      bool cmp;
      int64_t row, slot;
    };
    std::vector<Key> keys;  // ori rows [0, S2 - S1 + i + 1), then the listed cmp rows below the threshold
    for (int64_t j = 0; j < kS2 - kS1 + i + 1; ++j) keys.push_back({false, j, -1});
    const int64_t visible = std::min<int64_t>(kC, (kC * kRatio + kResidual - kS1 + i + 1) / kRatio);
    for (int64_t slot = 0; slot < std::min(kK2, visible); ++slot) {
      const int32_t c = indices[i * kK2 + slot];
      if (c < 0) break;
      if (c < visible) keys.push_back({true, c, slot});
    }
    for (int64_t n = 0; n < kN1; ++n) {
      const int64_t row = i * kN1 + n;
      const double qv = fromBf16(q[row * kD]), g = fromBf16(dOut[row * kD]), o = fromBf16(out[row * kD]);
      const double rowLse = lse[row], dRow = kD * g * o;
      double pdp = 0.0;
      for (const Key& key : keys) {
        const double v = fromBf16(key.cmp ? cmp[key.row * kD] : ori[key.row * kD]);
        const double p = std::exp(kScale * kD * qv * v - rowLse), dp = kD * g * v, ds = p * (dp - dRow);
        pdp += p * dp;
        expectDq[row] += kScale * ds * v;
        (key.cmp ? expectCmp : expectOri)[key.row] += kScale * ds * qv + p * g;
        if (key.cmp) expectL1[i * kK2 + key.slot] += p / kN1;
      }
      expectSinks[n] -= std::exp(sinks[n] - rowLse) * pdp;
    }
  }
  const auto tolerance = [](const std::vector<double>& v) {
    double top = 0.0;
    for (double x : v) top = std::max(top, std::fabs(x));
    return 1e-2 * top + 1e-6;
  };
  int bad = 0;
  for (int64_t row = 0; row < kS1 * kN1; ++row) {
    for (int64_t e = 0; e < kD; ++e) {
      bad += check("dq", row, e, fromBf16(dq[row * kD + e]), expectDq[row], tolerance(expectDq));
    }
  }
  for (int64_t j = 0; j < kS2; ++j) {
    for (int64_t e = 0; e < kD; ++e) {
      bad += check("dOriKv", j, e, fromBf16(dOri[j * kD + e]), expectOri[j], tolerance(expectOri));
    }
  }
  for (int64_t c = 0; c < kC; ++c) {
    for (int64_t e = 0; e < kD; ++e) {
      bad += check("dCmpKv", c, e, fromBf16(dCmp[c * kD + e]), expectCmp[c], tolerance(expectCmp));
    }
  }
  for (int64_t n = 0; n < kN1; ++n) bad += check("dSinks", n, 0, dSinks[n], expectSinks[n], tolerance(expectSinks));
  for (int64_t s = 0; s < kS1 * kK2; ++s) {
    bad += check("cmpSoftmaxL1Norm", s / kK2, s % kK2, cmpL1[s], expectL1[s], 1e-4);
  }
  for (int64_t i = 0; i < kS1; ++i) {
    std::printf("row %ld: dq %.6f %.6f (expected %.6f %.6f), cmp L1 %.4f %.4f %.4f\n", static_cast<long>(i),
                fromBf16(dq[(i * kN1) * kD]), fromBf16(dq[(i * kN1 + 1) * kD]), expectDq[i * kN1],
                expectDq[i * kN1 + 1], cmpL1[i * kK2], cmpL1[i * kK2 + 1], cmpL1[i * kK2 + 2]);
  }
  for (int64_t j = 0; j < kS2; ++j) {
    std::printf("ori row %ld: dKV %.6f (expected %.6f)\n", static_cast<long>(j), fromBf16(dOri[j * kD]), expectOri[j]);
  }
  for (int64_t c = 0; c < kC; ++c) {
    std::printf("cmp row %ld: dKV %.6f (expected %.6f)\n", static_cast<long>(c), fromBf16(dCmp[c * kD]), expectCmp[c]);
  }
  std::printf("dSinks %.6f %.6f (expected %.6f %.6f)\n", dSinks[0], dSinks[1], expectSinks[0], expectSinks[1]);
  for (DeviceTensor* t : {&tq, &tOri, &tCmp, &tIdx, &tCuQ, &tCuOri, &tCuCmp, &tRes, &tSinks, &tMeta, &tGradMeta, &tOut,
                          &tLse, &tdOut, &tdq, &tdOri, &tdCmp, &tdSinks, &tL1}) {
    aclDestroyTensor(t->tensor);
    aclrtFree(t->address);
  }
  aclrtDestroyStream(stream);
  aclrtResetDevice(0);
  aclFinalize();
  std::printf("%s\n", bad == 0 ? "sparse_flash_mla_grad: ok" : "sparse_flash_mla_grad: FAILED");
  return bad == 0 ? 0 : 1;
}
