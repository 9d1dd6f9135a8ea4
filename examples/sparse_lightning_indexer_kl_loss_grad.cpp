// aclnnSparseLightningIndexerKLLossGradMetadata and aclnnSparseLightningIndexerKLLossGrad, called the way a CANN
// program does: init, device, stream, device memory, tensors, the metadata op, the two phases, synchronize, copy back.
// TND, one batch of 3 query rows over 2 compressed keys (cmpRatio 4, 1 residual token: 9 tokens seen), right-down
// causal: row 0 sees key 0, rows 1 and 2 see keys 0 and 1. N1 = 2 heads, D = 128 with only the first two coordinates
// non-zero, FLOAT16: q-heads (1, 0) and (0, 1), w = (1, 2), keys (1, 1) and (2, -1), p = (1/2, 1/2) on the valid
// slots, so rows 1 and 2 are the worked example of tests/core/test_kl_loss_grad_golden.cpp: y = (0.7310586, 0.2689414),
// dw = (-0.2310586, 0.2310586), dq = ((-0.2310586, 0.4621172), (0.4621172, 0.4621172)); row 0 has one valid slot
// (y = 1, no gradient: dI = 1 * 1/2 - 1/2 = 0). dk sums rows 1 and 2: k0 (0.4621172, 0.9242344), k1 (-0.4621172, 0).
// The program checks every output element and exits non-zero on a mismatch.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_sparse_lightning_indexer_kl_loss_grad.h"
#include "aclnnop/aclnn_sparse_lightning_indexer_kl_loss_grad_metadata.h"

static constexpr int64_t kRows = 3, kKeys = 2, kHeads = 2, kDim = 128, kTopk = 2;

// One device buffer and the contiguous ND tensor over it.
struct DeviceTensor {
  void* address = nullptr;
  aclTensor* tensor = nullptr;
  size_t bytes = 0;
};

template <class T>
static int createTensor(const std::vector<T>& host, const std::vector<int64_t>& shape, aclDataType dtype,
                        DeviceTensor* out) {
  out->bytes = host.size() * sizeof(T);
  if (aclrtMalloc(&out->address, out->bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return 1;
  aclrtMemcpy(out->address, out->bytes, host.data(), out->bytes, ACL_MEMCPY_HOST_TO_DEVICE);
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
  out->tensor = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                                shape.size(), out->address);
  return out->tensor == nullptr;
}

template <class T>
static std::vector<T> download(const DeviceTensor& device) {
  std::vector<T> host(device.bytes / sizeof(T));
  aclrtMemcpy(host.data(), device.bytes, device.address, device.bytes, ACL_MEMCPY_DEVICE_TO_HOST);
  return host;
}

static uint16_t toHalf(float value) {  // exact for the values used here (small integers)
  if (value == 0.0f) return 0;
  const uint16_t sign = value < 0 ? 0x8000 : 0;
  int exponent = 0;
  const float mantissa = std::frexp(std::fabs(value), &exponent);  // [0.5, 1)
  return static_cast<uint16_t>(sign | ((exponent + 14) << 10) | (static_cast<int>(mantissa * 2048) & 0x3FF));
}

static float fromHalf(uint16_t bits) {
  const int exponent = (bits >> 10) & 0x1F, mantissa = bits & 0x3FF;
  const float value = exponent == 0 ? std::ldexp(static_cast<float>(mantissa), -24)
                                    : std::ldexp(static_cast<float>(mantissa | 0x400), exponent - 25);
  return (bits & 0x8000) ? -value : value;
}

static int failures = 0;
static void expect(const char* what, int64_t i, double got, double want, double tolerance) {
  if (std::fabs(got - want) <= tolerance) return;
  std::printf("MISMATCH %s[%ld]: got %.7f, expected %.7f\n", what, static_cast<long>(i), got, want);
  ++failures;
}

// Runs a planned executor with a workspace of the size the first phase asked for.
static int runPlanned(aclnnStatus planned, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream,
                      aclnnStatus (*run)(void*, uint64_t, aclOpExecutor*, aclrtStream), const char* name) {
  if (planned != ACL_SUCCESS) {
    std::printf("%sGetWorkspaceSize failed: %s\n", name, aclGetRecentErrMsg());
    return 1;
  }
  void* workspace = nullptr;
  if (workspaceSize > 0) aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
  const aclnnStatus ret = run(workspace, workspaceSize, executor, stream);
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

  std::vector<uint16_t> q(kRows * kHeads * kDim, 0), k(kKeys * kDim, 0);
  for (int64_t t = 0; t < kRows; ++t) {
    q[(t * kHeads + 0) * kDim + 0] = toHalf(1.0f);  // head 0: (1, 0)
    q[(t * kHeads + 1) * kDim + 1] = toHalf(1.0f);  // head 1: (0, 1)
  }
  k[0] = toHalf(1.0f), k[1] = toHalf(1.0f);             // key 0: (1, 1)
  k[kDim] = toHalf(2.0f), k[kDim + 1] = toHalf(-1.0f);  // key 1: (2, -1)
  const std::vector<float> w = {1, 2, 1, 2, 1, 2};
  const std::vector<int32_t> indices = {0, -1, 0, 1, 0, 1};  // row 0 sees one key
  const std::vector<float> p = {1.0f, 0.0f, 0.5f, 0.5f, 0.5f, 0.5f};
  const std::vector<int32_t> cuQ = {0, kRows}, cuK = {0, kKeys}, residual = {1};

  DeviceTensor tq, tk, tw, ti, tp, tcq, tck, tres, tmeta, tdq, tdk, tdw, tso;
  int bad = createTensor(q, {kRows, kHeads, kDim}, ACL_FLOAT16, &tq);
  bad |= createTensor(k, {kKeys, 1, kDim}, ACL_FLOAT16, &tk);
  bad |= createTensor(w, {kRows, kHeads}, ACL_FLOAT, &tw);
  bad |= createTensor(indices, {kRows, 1, kTopk}, ACL_INT32, &ti);
  bad |= createTensor(p, {kRows, 1, kTopk}, ACL_FLOAT, &tp);
  bad |= createTensor(cuQ, {2}, ACL_INT32, &tcq);
  bad |= createTensor(cuK, {2}, ACL_INT32, &tck);
  bad |= createTensor(residual, {1}, ACL_INT32, &tres);
  bad |= createTensor(std::vector<int32_t>(64, 0), {64}, ACL_INT32, &tmeta);
  bad |= createTensor(std::vector<uint16_t>(q.size(), 0xFFFF), {kRows, kHeads, kDim}, ACL_FLOAT16, &tdq);
  bad |= createTensor(std::vector<uint16_t>(k.size(), 0xFFFF), {kKeys, 1, kDim}, ACL_FLOAT16, &tdk);
  bad |= createTensor(std::vector<float>(w.size(), -1.0f), {kRows, kHeads}, ACL_FLOAT, &tdw);
  bad |= createTensor(std::vector<float>(p.size(), -1.0f), {kRows, 1, kTopk}, ACL_FLOAT, &tso);
  if (bad != 0) {
    std::printf("tensor creation failed: %s\n", aclGetRecentErrMsg());
    return 1;
  }
  char layout[] = "TND";
  const int64_t maskMode = 3, cmpRatio = 4;

  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus status = aclnnSparseLightningIndexerKLLossGradMetadataGetWorkspaceSize(
      tcq.tensor, tck.tensor, nullptr, nullptr, tres.tensor, 1, kRows, kKeys, kHeads, 1, kDim, kTopk, layout, layout,
      maskMode, cmpRatio, tmeta.tensor, &size, &executor);
  if (runPlanned(status, size, executor, stream, aclnnSparseLightningIndexerKLLossGradMetadata,
                 "aclnnSparseLightningIndexerKLLossGradMetadata") != 0) {
    return 1;
  }
  const std::vector<int32_t> metadata = download<int32_t>(tmeta);
  std::printf("metadata: TOTAL_NUM %d USED_CORE_NUM %d\n", metadata[0], metadata[4]);
  expect("metadata", 0, metadata[0], kRows, 0);

  status = aclnnSparseLightningIndexerKLLossGradGetWorkspaceSize(
      tq.tensor, tk.tensor, tw.tensor, ti.tensor, tp.tensor, tcq.tensor, tck.tensor, nullptr, nullptr, tres.tensor,
      tmeta.tensor, layout, layout, maskMode, cmpRatio, tdq.tensor, tdk.tensor, tdw.tensor, tso.tensor, &size,
      &executor);
  if (runPlanned(status, size, executor, stream, aclnnSparseLightningIndexerKLLossGrad,
                 "aclnnSparseLightningIndexerKLLossGrad") != 0) {
    return 1;
  }

  const double d = 0.2310586, y0 = 0.7310586, y1 = 0.2689414, half = 2e-3;  // FLOAT16 dS and outputs
  const std::vector<float> so = download<float>(tso), dw = download<float>(tdw);
  const std::vector<double> wantY = {1, 0, y0, y1, y0, y1}, wantDw = {0, 0, -d, d, -d, d};
  for (int64_t i = 0; i < 6; ++i) expect("softmaxOut", i, so[i], wantY[i], 1e-6);
  for (int64_t i = 0; i < 6; ++i) expect("dw", i, dw[i], wantDw[i], 1e-6);
  const std::vector<uint16_t> dq = download<uint16_t>(tdq), dk = download<uint16_t>(tdk);
  for (int64_t i = 0; i < static_cast<int64_t>(dq.size()); ++i) {
    const int64_t t = i / (kHeads * kDim), h = (i / kDim) % kHeads, e = i % kDim;
    double want = 0;
    if (t > 0 && e < 2) want = h == 0 ? (e == 0 ? -d : 2 * d) : 2 * d;
    expect("dq", i, fromHalf(dq[i]), want, half);
  }
  const double wantK[4] = {2 * d, 4 * d, -2 * d, 0};
  for (int64_t i = 0; i < static_cast<int64_t>(dk.size()); ++i) {
    const int64_t key = i / kDim, e = i % kDim;
    expect("dk", i, fromHalf(dk[i]), e < 2 ? wantK[key * 2 + e] : 0.0, half);
  }
  std::printf("softmaxOut row 1: %.7f %.7f\n", so[2], so[3]);
  std::printf("dw row 1: %.7f %.7f\n", dw[2], dw[3]);
  std::printf("dq row 1: head 0 (%.4f, %.4f), head 1 (%.4f, %.4f)\n", fromHalf(dq[kHeads * kDim]),
              fromHalf(dq[kHeads * kDim + 1]), fromHalf(dq[kHeads * kDim + kDim]),
              fromHalf(dq[kHeads * kDim + kDim + 1]));
  std::printf("dk: key 0 (%.4f, %.4f), key 1 (%.4f, %.4f)\n", fromHalf(dk[0]), fromHalf(dk[1]), fromHalf(dk[kDim]),
              fromHalf(dk[kDim + 1]));

  for (DeviceTensor* t : {&tq, &tk, &tw, &ti, &tp, &tcq, &tck, &tres, &tmeta, &tdq, &tdk, &tdw, &tso}) {
    aclDestroyTensor(t->tensor);
    aclrtFree(t->address);
  }
  aclrtDestroyStream(stream);
  aclrtResetDevice(0);
  aclFinalize();
  std::printf(failures == 0 ? "sparse_lightning_indexer_kl_loss_grad: OK\n"
                            : "sparse_lightning_indexer_kl_loss_grad: %d mismatches\n",
              failures);
  return failures == 0 ? 0 : 1;
}
