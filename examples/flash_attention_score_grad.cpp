// aclnnFlashAttentionScoreGradV2 called the way a CANN program does: BF16 query / key / value / dy in the BSH layout,
// B = 2, N1 = 4 query heads sharing one key/value head (MQA: dk and dv sum over the four), S1 = 40, S2 = 56, D = 64,
// scale 1/sqrt(D), no mask, and dropout with keepProb 0.9 through an external packed mask (UINT8, bit e % 8 of byte
// e / 8 keeps element e = ((b * N1 + n) * S1 + i) * S2 + j). softmax_max / softmax_sum and attention_in are what the
// forward would hand the backward for this input: the program evaluates that forward in double and rounds it as the
// forward's outputs are (fp32 statistics, BF16 attention_in). It prints a few values of dq, dk and dv and checks
// every value against a double-precision evaluation of the backward formulas written out below (fed the same
// rounded statistics and attention_in); it exits non-zero on a mismatch.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
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

static constexpr int64_t kB = 2, kN1 = 4, kN2 = 1, kS1 = 40, kS2 = 56, kD = 64;
static constexpr int64_t kGroup = kN1 / kN2;
static constexpr double kKeepProb = 0.9;

static int64_t elementCount(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

// bfloat16 is the top half of a float; rounding to nearest, ties to even (NaN does not occur here).
static uint16_t floatToBf16(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

static double bf16ToDouble(uint16_t value) {
  const uint32_t bits = static_cast<uint32_t>(value) << 16;
  float result = 0;
  std::memcpy(&result, &bits, sizeof(result));
  return result;
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

// BSH offset of (b, n, s, d) in a tensor of `heads` heads of length `seq`.
static int64_t bsh(int64_t b, int64_t n, int64_t s, int64_t d, int64_t seq, int64_t heads) {
  return (b * seq + s) * heads * kD + n * kD + d;
}

struct Problem {
  std::vector<uint16_t> q, k, v, dy;  // BF16 bit patterns
  std::vector<uint8_t> dropMask;      // packed keep bits
  double scale = 0;
  bool keep(int64_t b, int64_t n, int64_t i, int64_t j) const {
    const int64_t e = ((b * kN1 + n) * kS1 + i) * kS2 + j;
    return (dropMask[static_cast<size_t>(e / 8)] >> (e % 8)) & 1;
  }
  double score(int64_t b, int64_t n, int64_t i, int64_t j) const {
    double dot = 0;
    for (int64_t d = 0; d < kD; d++) {
      dot += bf16ToDouble(q[bsh(b, n, i, d, kS1, kN1)]) * bf16ToDouble(k[bsh(b, n / kGroup, j, d, kS2, kN2)]);
    }
    return dot * scale;
  }
};

// The forward in double (spec fag.md 1.2), rounded as the operator's outputs: softmax_max / softmax_sum fp32 with 8
// equal lanes ([B, N1, S1, 8]), attention_in BF16 in the BSH layout.
static void forward(const Problem& p, std::vector<float>& max, std::vector<float>& sum, std::vector<uint16_t>& out) {
  max.assign(kB * kN1 * kS1 * 8, 0.0f);
  sum.assign(kB * kN1 * kS1 * 8, 0.0f);
  out.assign(kB * kS1 * kN1 * kD, 0);
  for (int64_t b = 0; b < kB; b++) {
    for (int64_t n = 0; n < kN1; n++) {
      for (int64_t i = 0; i < kS1; i++) {
        std::vector<double> s(kS2);
        double top = -INFINITY, total = 0;
        for (int64_t j = 0; j < kS2; j++) top = std::fmax(top, s[j] = p.score(b, n, i, j));
        for (int64_t j = 0; j < kS2; j++) total += std::exp(s[j] - top);
        std::vector<double> o(kD, 0.0);
        for (int64_t j = 0; j < kS2; j++) {
          if (!p.keep(b, n, i, j)) continue;
          const double pd = std::exp(s[j] - top) / total / kKeepProb;
          for (int64_t d = 0; d < kD; d++) o[d] += pd * bf16ToDouble(p.v[bsh(b, n / kGroup, j, d, kS2, kN2)]);
        }
        for (int64_t d = 0; d < kD; d++) out[bsh(b, n, i, d, kS1, kN1)] = floatToBf16(static_cast<float>(o[d]));
        const int64_t row = (b * kN1 + n) * kS1 + i;
        for (int64_t lane = 0; lane < 8; lane++) {
          max[row * 8 + lane] = static_cast<float>(top);
          sum[row * 8 + lane] = static_cast<float>(total);
        }
      }
    }
  }
}

// The backward in double (spec fag.md 1.3) from the given statistics and attention_in: P = exp(S - m) / l,
// dV = Pd^T.dY with Pd = P * keep / keepProb, dP = dY.V^T, Drow = rowsum(dY * attention_in),
// dS = P * (dP * keep / keepProb - Drow), dQ = dS.K * scale, dK = dS^T.Q * scale; dK and dV summed over the group.
struct Grads {
  std::vector<double> dq, dk, dv;
  std::vector<double> dqTerms, dkTerms, dvTerms;  // the sums of the terms' magnitudes, for the tolerance
};

static Grads backward(const Problem& p, const std::vector<float>& max, const std::vector<float>& sum,
                      const std::vector<uint16_t>& attentionIn) {
  Grads g;
  g.dq.assign(kB * kS1 * kN1 * kD, 0.0);
  g.dk.assign(kB * kS2 * kN2 * kD, 0.0);
  g.dv.assign(kB * kS2 * kN2 * kD, 0.0);
  g.dqTerms = g.dq, g.dkTerms = g.dk, g.dvTerms = g.dv;
  for (int64_t b = 0; b < kB; b++) {
    for (int64_t n = 0; n < kN1; n++) {
      const int64_t kvHead = n / kGroup;
      for (int64_t i = 0; i < kS1; i++) {
        const int64_t row = (b * kN1 + n) * kS1 + i;
        double drow = 0;
        for (int64_t d = 0; d < kD; d++) {
          drow += bf16ToDouble(p.dy[bsh(b, n, i, d, kS1, kN1)]) * bf16ToDouble(attentionIn[bsh(b, n, i, d, kS1, kN1)]);
        }
        for (int64_t j = 0; j < kS2; j++) {
          const double prob = std::exp(p.score(b, n, i, j) - max[row * 8]) / sum[row * 8];
          const double keep = p.keep(b, n, i, j) ? 1.0 / kKeepProb : 0.0;
          double dp = 0;
          for (int64_t d = 0; d < kD; d++) {
            const double dy = bf16ToDouble(p.dy[bsh(b, n, i, d, kS1, kN1)]);
            dp += dy * bf16ToDouble(p.v[bsh(b, kvHead, j, d, kS2, kN2)]);
            g.dv[bsh(b, kvHead, j, d, kS2, kN2)] += prob * keep * dy;
            g.dvTerms[bsh(b, kvHead, j, d, kS2, kN2)] += std::fabs(prob * keep * dy);
          }
          const double ds = prob * (dp * keep - drow);
          for (int64_t d = 0; d < kD; d++) {
            const double dqTerm = ds * bf16ToDouble(p.k[bsh(b, kvHead, j, d, kS2, kN2)]) * p.scale;
            const double dkTerm = ds * bf16ToDouble(p.q[bsh(b, n, i, d, kS1, kN1)]) * p.scale;
            g.dq[bsh(b, n, i, d, kS1, kN1)] += dqTerm;
            g.dk[bsh(b, kvHead, j, d, kS2, kN2)] += dkTerm;
            g.dqTerms[bsh(b, n, i, d, kS1, kN1)] += std::fabs(dqTerm);
            g.dkTerms[bsh(b, kvHead, j, d, kS2, kN2)] += std::fabs(dkTerm);
          }
        }
      }
    }
  }
  return g;
}

// A BF16 gradient: within one BF16 ulp of the exact value (the final rounding, plus fp32 and 16-bit operand
// rounding inside the sums), plus 2^-8 of the tensor's root-mean-square for values that cancel near zero, plus one
// BF16 rounding of each term (`terms`: the sum of their magnitudes): a CPU that multiplies bf16 in hardware rounds P
// and dS to bf16 before the products (docs/flash_attention.md, tile paths).
static int countMismatches(const char* name, const std::vector<uint16_t>& got, const std::vector<double>& want,
                           const std::vector<double>& terms) {
  double squares = 0;
  for (double w : want) squares += w * w;
  const double rms = std::sqrt(squares / static_cast<double>(want.size()));
  int mismatches = 0;
  for (size_t i = 0; i < got.size(); i++) {
    const double value = bf16ToDouble(got[i]);
    if (std::fabs(value - want[i]) > std::ldexp(std::fabs(want[i]) + rms + terms[i], -8)) {
      if (mismatches++ < 5) LOG_PRINT("  %s[%zu] = %.6g, expected %.6g\n", name, i, value, want[i]);
    }
  }
  return mismatches;
}

int main() {
  int32_t deviceId = 0;
  aclrtStream stream;
  int ret = initRuntime(deviceId, &stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

  // 1. Inputs: BSH query / dy / attention_in [B, S1, N1 * D], key / value [B, S2, N2 * D] in BF16; the packed mask.
  Problem p;
  Lcg random{20260513};
  const auto bf16Values = [&random](int64_t count, double scale) {
    std::vector<uint16_t> values(static_cast<size_t>(count));
    for (auto& value : values) value = floatToBf16(static_cast<float>(random.uniform(-scale, scale)));
    return values;
  };
  const std::vector<int64_t> qShape = {kB, kS1, kN1 * kD}, kvShape = {kB, kS2, kN2 * kD};
  const std::vector<int64_t> statsShape = {kB, kN1, kS1, 8};
  p.q = bf16Values(elementCount(qShape), 2.0);
  p.k = bf16Values(elementCount(kvShape), 2.0);
  p.v = bf16Values(elementCount(kvShape), 1.0);
  p.dy = bf16Values(elementCount(qShape), 1.0);
  p.scale = 1.0 / std::sqrt(static_cast<double>(kD));
  const int64_t elements = kB * kN1 * kS1 * kS2;
  p.dropMask.assign(static_cast<size_t>((elements + 7) / 8), 0);
  for (int64_t e = 0; e < elements; e++) {
    if (random.uniform(0.0, 1.0) < kKeepProb) p.dropMask[static_cast<size_t>(e / 8)] |= uint8_t(1u << (e % 8));
  }
  std::vector<float> maxHost, sumHost;
  std::vector<uint16_t> attentionInHost;
  forward(p, maxHost, sumHost, attentionInHost);
  std::vector<uint16_t> dqHost(elementCount(qShape), 0), dkHost(elementCount(kvShape), 0);
  std::vector<uint16_t> dvHost(elementCount(kvShape), 0);

  DeviceTensor q, k, v, dy, dropMask, softmaxMax, softmaxSum, attentionIn, dq, dk, dv;
  ret = createTensor(p.q, qShape, ACL_BF16, &q);
  ret = ret ? ret : createTensor(p.k, kvShape, ACL_BF16, &k);
  ret = ret ? ret : createTensor(p.v, kvShape, ACL_BF16, &v);
  ret = ret ? ret : createTensor(p.dy, qShape, ACL_BF16, &dy);
  ret = ret ? ret : createTensor(p.dropMask, {static_cast<int64_t>(p.dropMask.size())}, ACL_UINT8, &dropMask);
  ret = ret ? ret : createTensor(maxHost, statsShape, ACL_FLOAT, &softmaxMax);
  ret = ret ? ret : createTensor(sumHost, statsShape, ACL_FLOAT, &softmaxSum);
  ret = ret ? ret : createTensor(attentionInHost, qShape, ACL_BF16, &attentionIn);
  ret = ret ? ret : createTensor(dqHost, qShape, ACL_BF16, &dq);
  ret = ret ? ret : createTensor(dkHost, kvShape, ACL_BF16, &dk);
  ret = ret ? ret : createTensor(dvHost, kvShape, ACL_BF16, &dv);
  CHECK_RET(ret == ACL_SUCCESS, return ret);

  // 2. The two phases (no mask: sparse_mode 0 and the tokens do not apply; pseType 1 without a pse).
  char layout[] = "BSH";
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnFlashAttentionScoreGradV2GetWorkspaceSize(
      q.tensor, k.tensor, v.tensor, dy.tensor, nullptr, dropMask.tensor, nullptr, nullptr, softmaxMax.tensor,
      softmaxSum.tensor, nullptr, attentionIn.tensor, nullptr, nullptr, nullptr, p.scale, kKeepProb, 65536, 65536, kN1,
      layout, 0, 0, 1, dq.tensor, dk.tensor, dv.tensor, nullptr, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnFlashAttentionScoreGradV2GetWorkspaceSize failed. ERROR: %d (%s)\n",
                                          ret, aclGetRecentErrMsg());
            return ret);
  void* workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
  }
  ret = aclnnFlashAttentionScoreGradV2(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnFlashAttentionScoreGradV2 failed. ERROR: %d\n", ret); return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);
  if (workspaceSize > 0) aclrtFree(workspaceAddr);

  // 3. Results.
  ret = copyBack(dqHost, dq);
  ret = ret ? ret : copyBack(dkHost, dk);
  ret = ret ? ret : copyBack(dvHost, dv);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  LOG_PRINT(
      "FlashAttentionScoreGradV2 (BSH, B=%ld, N1=%ld, N2=%ld, S1=%ld, S2=%ld, D=%ld, BF16, keepProb %.1f), "
      "workspace %lu bytes\n",
      static_cast<long>(kB), static_cast<long>(kN1), static_cast<long>(kN2), static_cast<long>(kS1),
      static_cast<long>(kS2), static_cast<long>(kD), kKeepProb, static_cast<unsigned long>(workspaceSize));
  for (int64_t i = 0; i < 3; i++) {
    LOG_PRINT("dq[%ld] = %f  dk[%ld] = %f  dv[%ld] = %f\n", static_cast<long>(i), bf16ToDouble(dqHost[i]),
              static_cast<long>(i), bf16ToDouble(dkHost[i]), static_cast<long>(i), bf16ToDouble(dvHost[i]));
  }

  const Grads want = backward(p, maxHost, sumHost, attentionInHost);
  int mismatches = countMismatches("dq", dqHost, want.dq, want.dqTerms);
  mismatches += countMismatches("dk", dkHost, want.dk, want.dkTerms);
  mismatches += countMismatches("dv", dvHost, want.dv, want.dvTerms);
  if (mismatches == 0) {
    LOG_PRINT("every value matches the double-precision formulas\n");
  } else {
    LOG_PRINT("%d mismatches\n", mismatches);
  }

  for (DeviceTensor* t : {&q, &k, &v, &dy, &dropMask, &softmaxMax, &softmaxSum, &attentionIn, &dq, &dk, &dv}) {
    destroy(*t);
  }
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return mismatches == 0 ? 0 : 1;
}
