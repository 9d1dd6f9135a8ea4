// The TND (variable length) entry points called the way a CANN program does: aclnnFlashAttentionVarLenScoreV4 and then
// aclnnFlashAttentionUnpaddingScoreGradV4, FP32, three sequences packed along T (query lengths 6, 0, 10; key/value
// lengths 9, 4, 10: a batch without queries is allowed), N1 = 2 query heads sharing one key/value head, D = 16, scale
// 1/sqrt(D), no mask, statistics in the "same_as_input" layout ([T1, N1, 8] in token order). actual_seq_qlen /
// actual_seq_kvlen hold the cumulative end offsets. The backward is fed the forward's own attention_out and
// statistics, as in a training step. The program prints a few values and checks every output of both calls against a
// double-precision evaluation of the formulas written out below; it exits non-zero on a mismatch.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_flash_attention_score.h"
#include "aclnnop/aclnn_flash_attention_score_grad.h"

#define CHECK_RET(cond, ...) \
  do {                       \
    if (!(cond)) {           \
      __VA_ARGS__;           \
    }                        \
  } while (0)

#define LOG_PRINT(...)        \
  do {                        \
    std::printf(__VA_ARGS__); \
  } while (0)

static constexpr int64_t kBatches = 3, kN1 = 2, kN2 = 1, kD = 16;
static constexpr int64_t kGroup = kN1 / kN2;
static const int64_t kSeqQ[kBatches] = {6, 0, 10};  // per-batch query lengths (batch 1 has none)
static const int64_t kSeqKv[kBatches] = {9, 4, 10};

static int64_t elementCount(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

// A small deterministic generator, so that the program needs no library for its data.
struct Lcg {
  uint64_t state;
  double uniform(double low, double high) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return low + (high - low) * static_cast<double>(state >> 11) / 9007199254740992.0;
  }
};

static int initRuntime(int32_t deviceId, aclrtStream* stream) {
  aclError ret = aclInit(nullptr);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return ret);
  ret = aclrtSetDevice(deviceId);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); return ret);
  ret = aclrtCreateStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret); return ret);
  return 0;
}

// A device buffer described as a contiguous ND tensor.
struct DeviceTensor {
  void* device = nullptr;
  aclTensor* tensor = nullptr;
};

// Copies host data to new device memory and describes it as a contiguous ND tensor.
template <typename T>
static int createTensor(const std::vector<T>& hostData, const std::vector<int64_t>& shape, aclDataType dataType,
                        DeviceTensor* out) {
  const size_t size = static_cast<size_t>(elementCount(shape)) * sizeof(T);
  aclError ret = aclrtMalloc(&out->device, size, ACL_MEM_MALLOC_HUGE_FIRST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
  ret = aclrtMemcpy(out->device, size, hostData.data(), size, ACL_MEMCPY_HOST_TO_DEVICE);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
  out->tensor = aclCreateTensor(shape.data(), shape.size(), dataType, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                                shape.size(), out->device);
  CHECK_RET(out->tensor != nullptr, LOG_PRINT("aclCreateTensor failed: %s\n", aclGetRecentErrMsg()); return -1);
  return 0;
}

template <typename T>
static int copyBack(std::vector<T>& host, const DeviceTensor& from) {
  const size_t size = host.size() * sizeof(T);
  aclError ret = aclrtMemcpy(host.data(), size, from.device, size, ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result from device to host failed. ERROR: %d\n", ret); return ret);
  return 0;
}

static void destroy(DeviceTensor& t) {
  aclDestroyTensor(t.tensor);
  aclrtFree(t.device);
}

// Token offsets of each batch's first query / key row.
static int64_t firstRow(const int64_t* lengths, int64_t b) {
  int64_t sum = 0;
  for (int64_t c = 0; c < b; c++) sum += lengths[c];
  return sum;
}

static int64_t total(const int64_t* lengths) { return firstRow(lengths, kBatches); }

// TND offset of (token t, head n, d).
static int64_t tnd(int64_t t, int64_t n, int64_t d, int64_t heads) { return (t * heads + n) * kD + d; }

struct Problem {
  std::vector<float> q, k, v, dy;
  double scale = 0;
  double score(int64_t b, int64_t n, int64_t i, int64_t j) const {
    const int64_t tq = firstRow(kSeqQ, b) + i, tk = firstRow(kSeqKv, b) + j;
    double dot = 0;
    for (int64_t d = 0; d < kD; d++) dot += double(q[tnd(tq, n, d, kN1)]) * k[tnd(tk, n / kGroup, d, kN2)];
    return dot * scale;
  }
};

// Forward in double (spec fag.md 1.2): per batch, head and query row, m = max_j S, l = sum_j exp(S - m),
// O = sum_j exp(S - m) / l * V. Statistics indexed by (token, head).
struct Forward {
  std::vector<double> out, max, sum;
};

static Forward forward(const Problem& p) {
  Forward f;
  f.out.assign(total(kSeqQ) * kN1 * kD, 0.0);
  f.max.assign(total(kSeqQ) * kN1, 0.0);
  f.sum.assign(total(kSeqQ) * kN1, 0.0);
  for (int64_t b = 0; b < kBatches; b++) {
    for (int64_t n = 0; n < kN1; n++) {
      for (int64_t i = 0; i < kSeqQ[b]; i++) {
        const int64_t t = firstRow(kSeqQ, b) + i;
        double top = -INFINITY, l = 0;
        for (int64_t j = 0; j < kSeqKv[b]; j++) top = std::fmax(top, p.score(b, n, i, j));
        for (int64_t j = 0; j < kSeqKv[b]; j++) l += std::exp(p.score(b, n, i, j) - top);
        for (int64_t j = 0; j < kSeqKv[b]; j++) {
          const double prob = std::exp(p.score(b, n, i, j) - top) / l;
          const int64_t tk = firstRow(kSeqKv, b) + j;
          for (int64_t d = 0; d < kD; d++) f.out[tnd(t, n, d, kN1)] += prob * p.v[tnd(tk, n / kGroup, d, kN2)];
        }
        f.max[t * kN1 + n] = top;
        f.sum[t * kN1 + n] = l;
      }
    }
  }
  return f;
}

// Backward in double (spec fag.md 1.3) from the given statistics (lane 0 of [T1, N1, 8]) and attention_in:
// P = exp(S - m) / l, dV = P^T.dY, dS = P * (dY.V^T - rowsum(dY * O)), dQ = dS.K * scale, dK = dS^T.Q * scale.
struct Grads {
  std::vector<double> dq, dk, dv;
};

static Grads backward(const Problem& p, const std::vector<float>& max, const std::vector<float>& sum,
                      const std::vector<float>& attentionIn) {
  Grads g;
  g.dq.assign(p.q.size(), 0.0);
  g.dk.assign(p.k.size(), 0.0);
  g.dv.assign(p.v.size(), 0.0);
  for (int64_t b = 0; b < kBatches; b++) {
    for (int64_t n = 0; n < kN1; n++) {
      for (int64_t i = 0; i < kSeqQ[b]; i++) {
        const int64_t t = firstRow(kSeqQ, b) + i;
        double drow = 0;
        for (int64_t d = 0; d < kD; d++) drow += double(p.dy[tnd(t, n, d, kN1)]) * attentionIn[tnd(t, n, d, kN1)];
        for (int64_t j = 0; j < kSeqKv[b]; j++) {
          const int64_t tk = firstRow(kSeqKv, b) + j;
          const double prob = std::exp(p.score(b, n, i, j) - max[(t * kN1 + n) * 8]) / sum[(t * kN1 + n) * 8];
          double dp = 0;
          for (int64_t d = 0; d < kD; d++) {
            dp += double(p.dy[tnd(t, n, d, kN1)]) * p.v[tnd(tk, n / kGroup, d, kN2)];
            g.dv[tnd(tk, n / kGroup, d, kN2)] += prob * p.dy[tnd(t, n, d, kN1)];
          }
          const double ds = prob * (dp - drow);
          for (int64_t d = 0; d < kD; d++) {
            g.dq[tnd(t, n, d, kN1)] += ds * p.k[tnd(tk, n / kGroup, d, kN2)] * p.scale;
            g.dk[tnd(tk, n / kGroup, d, kN2)] += ds * p.q[tnd(t, n, d, kN1)] * p.scale;
          }
        }
      }
    }
  }
  return g;
}

// An fp32 result: within 1e-5 relative plus 1e-5 of the tensor's root-mean-square (fp32 roundings of 6e-8 on
// sums of a few dozen terms of order one).
static int countMismatches(const char* name, const std::vector<float>& got, const std::vector<double>& want,
                           int64_t stride = 1) {
  double squares = 0;
  for (double w : want) squares += w * w;
  const double rms = std::sqrt(squares / static_cast<double>(std::max<size_t>(want.size(), 1)));
  int mismatches = 0;
  for (size_t i = 0; i < want.size(); i++) {
    const double value = got[i * static_cast<size_t>(stride)];
    if (!(std::fabs(value - want[i]) <= 1e-5 * std::fabs(want[i]) + 1e-5 * rms)) {
      if (mismatches++ < 5) LOG_PRINT("  %s[%zu] = %.9g, expected %.9g\n", name, i, value, want[i]);
    }
  }
  return mismatches;
}

// Runs both phases of one call; returns the first failing status.
template <class Plan, class Run>
static int runBoth(const char* api, aclrtStream stream, Plan plan, Run run) {
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  int ret = plan(&workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("%sGetWorkspaceSize failed. ERROR: %d (%s)\n", api, ret, aclGetRecentErrMsg());
            return ret);
  void* workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
  }
  ret = run(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("%s failed. ERROR: %d\n", api, ret); return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);
  if (workspaceSize > 0) aclrtFree(workspaceAddr);
  return 0;
}

int main() {
  int32_t deviceId = 0;
  aclrtStream stream;
  int ret = initRuntime(deviceId, &stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

  // 1. Inputs: query / dy [T1, N1, D], key / value [T2, N2, D] in FP32; cumulative lengths.
  Problem p;
  Lcg random{20260514};
  const auto values = [&random](int64_t count, double scale) {
    std::vector<float> v(static_cast<size_t>(count));
    for (auto& value : v) value = static_cast<float>(random.uniform(-scale, scale));
    return v;
  };
  const int64_t t1 = total(kSeqQ), t2 = total(kSeqKv);
  const std::vector<int64_t> qShape = {t1, kN1, kD}, kvShape = {t2, kN2, kD}, statsShape = {t1, kN1, 8};
  p.q = values(elementCount(qShape), 2.0);
  p.k = values(elementCount(kvShape), 2.0);
  p.v = values(elementCount(kvShape), 1.0);
  p.dy = values(elementCount(qShape), 1.0);
  p.scale = 1.0 / std::sqrt(static_cast<double>(kD));
  std::vector<int64_t> endsQ, endsKv;
  for (int64_t b = 0; b < kBatches; b++) {
    endsQ.push_back(firstRow(kSeqQ, b + 1));
    endsKv.push_back(firstRow(kSeqKv, b + 1));
  }
  aclIntArray* seqQ = aclCreateIntArray(endsQ.data(), endsQ.size());
  aclIntArray* seqKv = aclCreateIntArray(endsKv.data(), endsKv.size());
  std::vector<float> outHost(elementCount(qShape), 0.0f), maxHost(elementCount(statsShape), 0.0f);
  std::vector<float> sumHost(elementCount(statsShape), 0.0f);
  std::vector<float> dqHost(p.q.size(), 0.0f), dkHost(p.k.size(), 0.0f), dvHost(p.v.size(), 0.0f);

  DeviceTensor q, k, v, dy, out, softmaxMax, softmaxSum, dq, dk, dv;
  ret = createTensor(p.q, qShape, ACL_FLOAT, &q);
  ret = ret ? ret : createTensor(p.k, kvShape, ACL_FLOAT, &k);
  ret = ret ? ret : createTensor(p.v, kvShape, ACL_FLOAT, &v);
  ret = ret ? ret : createTensor(p.dy, qShape, ACL_FLOAT, &dy);
  ret = ret ? ret : createTensor(outHost, qShape, ACL_FLOAT, &out);
  ret = ret ? ret : createTensor(maxHost, statsShape, ACL_FLOAT, &softmaxMax);
  ret = ret ? ret : createTensor(sumHost, statsShape, ACL_FLOAT, &softmaxSum);
  ret = ret ? ret : createTensor(dqHost, qShape, ACL_FLOAT, &dq);
  ret = ret ? ret : createTensor(dkHost, kvShape, ACL_FLOAT, &dk);
  ret = ret ? ret : createTensor(dvHost, kvShape, ACL_FLOAT, &dv);
  CHECK_RET(ret == ACL_SUCCESS, return ret);

  // 2. The forward, then the backward on its outputs (no mask: sparse_mode 0, the tokens do not apply).
  char layout[] = "TND";
  char statsLayout[] = "same_as_input";
  const int64_t window = 2147483647;
  ret = runBoth(
      "aclnnFlashAttentionVarLenScoreV4", stream,
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnFlashAttentionVarLenScoreV4GetWorkspaceSize(
            q.tensor, k.tensor, v.tensor, nullptr, nullptr, nullptr, nullptr, nullptr, seqQ, seqKv, p.scale, 1.0,
            window, window, kN1, layout, 0, 0, statsLayout, softmaxMax.tensor, softmaxSum.tensor, nullptr, out.tensor,
            size, executor);
      },
      aclnnFlashAttentionVarLenScoreV4);
  CHECK_RET(ret == 0, return ret);
  ret = runBoth(
      "aclnnFlashAttentionUnpaddingScoreGradV4", stream,
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnFlashAttentionUnpaddingScoreGradV4GetWorkspaceSize(
            q.tensor, k.tensor, v.tensor, dy.tensor, nullptr, nullptr, nullptr, nullptr, softmaxMax.tensor,
            softmaxSum.tensor, nullptr, out.tensor, nullptr, seqQ, seqKv, p.scale, 1.0, window, window, kN1, layout, 0,
            0, dq.tensor, dk.tensor, dv.tensor, nullptr, statsLayout, size, executor);
      },
      aclnnFlashAttentionUnpaddingScoreGradV4);
  CHECK_RET(ret == 0, return ret);

  // 3. Results.
  ret = copyBack(outHost, out);
  ret = ret ? ret : copyBack(maxHost, softmaxMax);
  ret = ret ? ret : copyBack(sumHost, softmaxSum);
  ret = ret ? ret : copyBack(dqHost, dq);
  ret = ret ? ret : copyBack(dkHost, dk);
  ret = ret ? ret : copyBack(dvHost, dv);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  LOG_PRINT(
      "FlashAttentionVarLenScoreV4 + UnpaddingScoreGradV4 (TND, lengths q 6/0/10, kv 9/4/10, N1=%ld, N2=%ld, "
      "D=%ld, FP32)\n",
      static_cast<long>(kN1), static_cast<long>(kN2), static_cast<long>(kD));
  for (int64_t i = 0; i < 3; i++) {
    LOG_PRINT("attention_out[%ld] = %f  dq[%ld] = %f  dk[%ld] = %f  dv[%ld] = %f\n", static_cast<long>(i), outHost[i],
              static_cast<long>(i), dqHost[i], static_cast<long>(i), dkHost[i], static_cast<long>(i), dvHost[i]);
  }
  LOG_PRINT("token 0 head 0: softmax_max = %f, softmax_sum = %f\n", maxHost[0], sumHost[0]);

  const Forward f = forward(p);
  int mismatches = countMismatches("attention_out", outHost, f.out);
  for (int64_t lane = 0; lane < 8; lane++) {
    mismatches += countMismatches("softmax_max", std::vector<float>(maxHost.begin() + lane, maxHost.end()), f.max, 8);
    mismatches += countMismatches("softmax_sum", std::vector<float>(sumHost.begin() + lane, sumHost.end()), f.sum, 8);
  }
  const Grads g = backward(p, maxHost, sumHost, outHost);
  mismatches += countMismatches("dq", dqHost, g.dq);
  mismatches += countMismatches("dk", dkHost, g.dk);
  mismatches += countMismatches("dv", dvHost, g.dv);
  if (mismatches == 0) {
    LOG_PRINT("every value matches the double-precision formulas\n");
  } else {
    LOG_PRINT("%d mismatches\n", mismatches);
  }

  for (DeviceTensor* t : {&q, &k, &v, &dy, &out, &softmaxMax, &softmaxSum, &dq, &dk, &dv}) destroy(*t);
  aclDestroyIntArray(seqQ);
  aclDestroyIntArray(seqKv);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return mismatches == 0 ? 0 : 1;
}
