// aclnnFlashAttentionScoreV2 called the way a CANN program does: FP16 query / key / value in the BSND layout, B = 2,
// N1 = 4 query heads sharing N2 = 2 key/value heads (GQA), S1 = S2 = 64, D = 32, scale 1/sqrt(D), causal masking
// through sparse_mode 3 (rightDownCausal) and its compressed [2048, 2048] mask template, pseType 1 without a pse, no
// dropout. It prints a few values of attention_out and the softmax statistics (softmax_max / softmax_sum, each
// replicated over a trailing axis of 8) and checks every value against a double-precision evaluation of the
// attention formulas written out below; it exits non-zero on a mismatch.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_flash_attention_score.h"

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

static constexpr int64_t kB = 2, kN1 = 4, kN2 = 2, kS1 = 64, kS2 = 64, kD = 32;
static constexpr int64_t kGroup = kN1 / kN2;
static constexpr int64_t kTemplate = 2048;  // the compressed causal mask of sparse modes 2-4

static int64_t elementCount(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

// IEEE half precision from a float, rounding to nearest even (finite, normal-range inputs only, as here).
static uint16_t floatToHalf(float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const int32_t exponent = static_cast<int32_t>((bits >> 23) & 0xFF) - 127 + 15;
  uint32_t mantissa = bits & 0x7FFFFFu;
  if (exponent <= 0) return static_cast<uint16_t>(sign);  // below the normal range: not produced by this data
  uint32_t half = sign | (static_cast<uint32_t>(exponent) << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) half++;
  return static_cast<uint16_t>(half);
}

static double halfToDouble(uint16_t value) {
  const int exponent = (value >> 10) & 0x1F;
  const int mantissa = value & 0x3FF;
  double magnitude = exponent == 0 ? std::ldexp(mantissa, -24) : std::ldexp(1024 + mantissa, exponent - 25);
  if (exponent == 31) magnitude = mantissa ? NAN : INFINITY;
  return (value & 0x8000) ? -magnitude : magnitude;
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

// BSND offset of (b, n, s, d) in a tensor of `heads` heads.
static int64_t bsnd(int64_t b, int64_t n, int64_t s, int64_t d, int64_t seq, int64_t heads) {
  return ((b * seq + s) * heads + n) * kD + d;
}

// The forward in double (spec fag.md 1.2): S = Q.K^T * scale, columns j > i + (S2 - S1) masked (rightDownCausal),
// m = max_j S, l = sum_j exp(S - m), O = sum_j exp(S - m) / l * V. Query head n reads key/value head n / G.
struct Reference {
  std::vector<double> out, max, sum;
};

static Reference reference(const std::vector<uint16_t>& q, const std::vector<uint16_t>& k,
                           const std::vector<uint16_t>& v, double scale) {
  Reference ref;
  ref.out.assign(kB * kS1 * kN1 * kD, 0.0);
  for (int64_t b = 0; b < kB; b++) {
    for (int64_t n = 0; n < kN1; n++) {
      for (int64_t i = 0; i < kS1; i++) {
        const int64_t last = i + (kS2 - kS1);  // the last column row i sees
        std::vector<double> score(kS2, 0.0);
        double top = -INFINITY;
        for (int64_t j = 0; j <= last; j++) {
          double dot = 0;
          for (int64_t d = 0; d < kD; d++) {
            dot += halfToDouble(q[bsnd(b, n, i, d, kS1, kN1)]) * halfToDouble(k[bsnd(b, n / kGroup, j, d, kS2, kN2)]);
          }
          score[j] = dot * scale;
          top = std::fmax(top, score[j]);
        }
        double total = 0;
        for (int64_t j = 0; j <= last; j++) total += std::exp(score[j] - top);
        for (int64_t j = 0; j <= last; j++) {
          const double p = std::exp(score[j] - top) / total;
          for (int64_t d = 0; d < kD; d++) {
            ref.out[bsnd(b, n, i, d, kS1, kN1)] += p * halfToDouble(v[bsnd(b, n / kGroup, j, d, kS2, kN2)]);
          }
        }
        ref.max.push_back(top);
        ref.sum.push_back(total);
      }
    }
  }
  return ref;
}

int main() {
  int32_t deviceId = 0;
  aclrtStream stream;
  int ret = initRuntime(deviceId, &stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

  // 1. Inputs: BSND query [B, S1, N1, D], key / value [B, S2, N2, D] in FP16; the causal template (1 = masked).
  Lcg random{20260512};
  const auto halfValues = [&random](int64_t count, double scale) {
    std::vector<uint16_t> values(static_cast<size_t>(count));
    for (auto& value : values) value = floatToHalf(static_cast<float>(random.uniform(-scale, scale)));
    return values;
  };
  const std::vector<int64_t> qShape = {kB, kS1, kN1, kD}, kvShape = {kB, kS2, kN2, kD};
  const std::vector<int64_t> maskShape = {kTemplate, kTemplate}, statsShape = {kB, kN1, kS1, 8};
  const std::vector<uint16_t> qHost = halfValues(elementCount(qShape), 2.0);
  const std::vector<uint16_t> kHost = halfValues(elementCount(kvShape), 2.0);
  const std::vector<uint16_t> vHost = halfValues(elementCount(kvShape), 1.0);
  std::vector<uint8_t> maskHost(kTemplate * kTemplate, 0);
  for (int64_t r = 0; r < kTemplate; r++) {
    for (int64_t c = r + 1; c < kTemplate; c++) maskHost[r * kTemplate + c] = 1;
  }
  std::vector<uint16_t> outHost(elementCount(qShape), 0);
  std::vector<float> maxHost(elementCount(statsShape), 0.0f), sumHost(elementCount(statsShape), 0.0f);

  DeviceTensor q, k, v, mask, out, softmaxMax, softmaxSum;
  ret = createTensor(qHost, qShape, ACL_FLOAT16, &q);
  ret = ret ? ret : createTensor(kHost, kvShape, ACL_FLOAT16, &k);
  ret = ret ? ret : createTensor(vHost, kvShape, ACL_FLOAT16, &v);
  ret = ret ? ret : createTensor(maskHost, maskShape, ACL_UINT8, &mask);
  ret = ret ? ret : createTensor(outHost, qShape, ACL_FLOAT16, &out);
  ret = ret ? ret : createTensor(maxHost, statsShape, ACL_FLOAT, &softmaxMax);
  ret = ret ? ret : createTensor(sumHost, statsShape, ACL_FLOAT, &softmaxSum);
  CHECK_RET(ret == ACL_SUCCESS, return ret);

  // 2. The two phases. Sparse mode 3 ignores pre/next tokens (the band is the causal one).
  const double scaleValue = 1.0 / std::sqrt(static_cast<double>(kD));
  char layout[] = "BSND";
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnFlashAttentionScoreV2GetWorkspaceSize(q.tensor, k.tensor, v.tensor, nullptr, nullptr, nullptr, mask.tensor,
                                                   nullptr, nullptr, nullptr, scaleValue, 1.0, 2147483647, 2147483647,
                                                   kN1, layout, 0, 3, 1, softmaxMax.tensor, softmaxSum.tensor, nullptr,
                                                   out.tensor, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnFlashAttentionScoreV2GetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
            return ret);
  void* workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
  }
  ret = aclnnFlashAttentionScoreV2(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnFlashAttentionScoreV2 failed. ERROR: %d\n", ret); return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);
  if (workspaceSize > 0) aclrtFree(workspaceAddr);

  // 3. Results.
  ret = copyBack(outHost, out);
  ret = ret ? ret : copyBack(maxHost, softmaxMax);
  ret = ret ? ret : copyBack(sumHost, softmaxSum);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  LOG_PRINT(
      "FlashAttentionScoreV2 (BSND, B=%ld, N1=%ld, N2=%ld, S1=S2=%ld, D=%ld, FP16, sparse_mode 3), workspace %lu "
      "bytes\n",
      static_cast<long>(kB), static_cast<long>(kN1), static_cast<long>(kN2), static_cast<long>(kS1),
      static_cast<long>(kD), static_cast<unsigned long>(workspaceSize));
  for (int64_t i = 0; i < 3; i++)
    LOG_PRINT("attention_out[%ld] = %f\n", static_cast<long>(i), halfToDouble(outHost[i]));
  for (int64_t row : {int64_t{0}, int64_t{1}, kS1 - 1}) {
    LOG_PRINT("row %ld: softmax_max = %f, softmax_sum = %f\n", static_cast<long>(row), maxHost[row * 8],
              sumHost[row * 8]);
  }

  // Gates: attention_out is an fp32 result rounded once to FP16: within one FP16 ulp of the exact value (half an
  // ulp of rounding, the rest for fp32 noise near a rounding boundary) plus 1e-4 for values that cancel near zero.
  // The statistics are fp32: within 1e-5 relative. Each of the 8 lanes of a row holds the same value.
  const Reference ref = reference(qHost, kHost, vHost, scaleValue);
  int mismatches = 0;
  for (size_t i = 0; i < outHost.size(); i++) {
    const double got = halfToDouble(outHost[i]), want = ref.out[i];
    if (std::fabs(got - want) > std::ldexp(std::fabs(want), -10) + 1e-4) {
      if (mismatches++ < 5) LOG_PRINT("  attention_out[%zu] = %.6g, expected %.6g\n", i, got, want);
    }
  }
  for (size_t row = 0; row < ref.max.size(); row++) {
    for (int64_t lane = 0; lane < 8; lane++) {
      const double gotMax = maxHost[row * 8 + lane], gotSum = sumHost[row * 8 + lane];
      if (std::fabs(gotMax - ref.max[row]) > 1e-5 * std::fabs(ref.max[row]) + 1e-6 ||
          std::fabs(gotSum - ref.sum[row]) > 1e-5 * ref.sum[row]) {
        if (mismatches++ < 5) {
          LOG_PRINT("  row %zu lane %ld: max %.9g sum %.9g, expected %.9g %.9g\n", row, static_cast<long>(lane), gotMax,
                    gotSum, ref.max[row], ref.sum[row]);
        }
      }
    }
  }
  if (mismatches == 0) {
    LOG_PRINT("every value matches the double-precision formulas\n");
  } else {
    LOG_PRINT("%d mismatches\n", mismatches);
  }

  for (DeviceTensor* t : {&q, &k, &v, &mask, &out, &softmaxMax, &softmaxSum}) destroy(*t);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return mismatches == 0 ? 0 : 1;
}
