// aclnnCompressorGrad called the way the seed's example does: C4A (D = 512, coff = 2, cmpRatio = 4), BSH layout with
// B = 1, S = 4, H = 4096, BF16, start_pos = [0]. softmaxScore and kv are what the forward (aclnnCompressor with
// gradEnabled) hands the backward for this input: the block's 8 rows interleaved (even = the previous block through
// wkv/wgate rows [0, D), odd = this block through rows [D, 2D)); with start_pos 0 the previous block lies before
// position 0, so its rows are padding (score 0, kv 0). The program prints a few values of each gradient and checks
// every value against a double-precision evaluation of the formulas written out below; it exits non-zero on a
// mismatch.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_compressor_grad.h"

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

static constexpr int64_t kB = 1;
static constexpr int64_t kS = 4;
static constexpr int64_t kH = 4096;
static constexpr int64_t kD = 512;
static constexpr int64_t kCoff = 2;
static constexpr int64_t kCmpRatio = 4;
static constexpr int64_t kC = kCoff * kD;                                  // rows of wkv / wgate
static constexpr int64_t kN = kCoff * kCmpRatio;                           // rows of one compressed block
static constexpr int64_t kRows = kB * ((kS + kCmpRatio - 1) / kCmpRatio);  // compressed rows
static constexpr int64_t kT = kB * kS;

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

static float bf16ToFloat(uint16_t value) {
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

// The inputs in their stored types.
struct Problem {
  std::vector<uint16_t> x, wkv, wgate, dCmpKv;
  std::vector<float> ape, softmaxScore, kv;
};

static double widenAt(const std::vector<uint16_t>& v, int64_t i) { return bf16ToFloat(v[static_cast<size_t>(i)]); }

// x[t] . w[c] in double.
static double dot(const Problem& p, const std::vector<uint16_t>& w, int64_t t, int64_t c) {
  double sum = 0;
  for (int64_t h = 0; h < kH; h++) sum += widenAt(p.x, t * kH + h) * widenAt(w, c * kH + h);
  return sum;
}

// What the forward exports for its one block (start_pos 0, block 0): row 2r is the previous block's position r
// (before position 0: padding), row 2r + 1 is token r through channels [D, 2D): kv = x.wkv, score = x.wgate + ape[r],
// then a softmax over the 8 rows per channel.
static void forwardIntermediates(Problem& p) {
  p.softmaxScore.assign(kRows * kN * kD, 0.0f);
  p.kv.assign(kRows * kN * kD, 0.0f);
  for (int64_t d = 0; d < kD; d++) {
    double score[kCmpRatio], top = -1e300;
    for (int64_t r = 0; r < kCmpRatio; r++) {
      score[r] = dot(p, p.wgate, r, kD + d) + p.ape[r * kC + kD + d];
      top = std::fmax(top, score[r]);
      p.kv[(2 * r + 1) * kD + d] = static_cast<float>(dot(p, p.wkv, r, kD + d));
    }
    double sum = 0;
    for (int64_t r = 0; r < kCmpRatio; r++) sum += std::exp(score[r] - top);
    for (int64_t r = 0; r < kCmpRatio; r++) {
      p.softmaxScore[(2 * r + 1) * kD + d] = static_cast<float>(std::exp(score[r] - top) / sum);
    }
  }
}

// The gradients in double (spec 4.2): dK = dC * S, dZ = S * (dC * K - sum_n S_n * dC * K_n) per channel; token r gets
// dK, dZ of row 2r + 1 in channels [D, 2D) (no block reads it through [0, D): there is no next block), dApe row r
// gets dZ; then dX = dNewKv . wkv + dNewScore . wgate, dWkv = dNewKv^T . x, dWgate = dNewScore^T . x.
struct Reference {
  std::vector<double> dX, dWkv, dWgate, dApe;
  std::vector<double> dXScale, dWScale;  // sums of |terms|: what fp32 rounding errors scale with
};

static Reference reference(const Problem& p) {
  Reference ref;
  std::vector<double> newKv(kT * kC, 0.0), newScore(kT * kC, 0.0);
  ref.dApe.assign(kCmpRatio * kC, 0.0);
  for (int64_t d = 0; d < kD; d++) {
    const double dc = widenAt(p.dCmpKv, d);
    double weighted = 0;
    for (int64_t n = 0; n < kN; n++) weighted += static_cast<double>(p.softmaxScore[n * kD + d]) * p.kv[n * kD + d];
    for (int64_t r = 0; r < kCmpRatio; r++) {
      const int64_t n = 2 * r + 1;
      const double s = p.softmaxScore[n * kD + d];
      newKv[r * kC + kD + d] = dc * s;
      newScore[r * kC + kD + d] = s * dc * (p.kv[n * kD + d] - weighted);
      ref.dApe[r * kC + kD + d] = newScore[r * kC + kD + d];
    }
  }
  ref.dX.assign(kT * kH, 0.0);
  ref.dXScale.assign(kT * kH, 0.0);
  for (int64_t t = 0; t < kT; t++) {
    for (int64_t c = 0; c < kC; c++) {
      for (int64_t h = 0; h < kH; h++) {
        const double a = newKv[t * kC + c] * widenAt(p.wkv, c * kH + h);
        const double b = newScore[t * kC + c] * widenAt(p.wgate, c * kH + h);
        ref.dX[t * kH + h] += a + b;
        ref.dXScale[t * kH + h] += std::fabs(a) + std::fabs(b);
      }
    }
  }
  ref.dWkv.assign(kC * kH, 0.0);
  ref.dWgate.assign(kC * kH, 0.0);
  ref.dWScale.assign(2 * kC * kH, 0.0);
  for (int64_t c = 0; c < kC; c++) {
    for (int64_t h = 0; h < kH; h++) {
      for (int64_t t = 0; t < kT; t++) {
        const double x = widenAt(p.x, t * kH + h);
        ref.dWkv[c * kH + h] += newKv[t * kC + c] * x;
        ref.dWgate[c * kH + h] += newScore[t * kC + c] * x;
        ref.dWScale[c * kH + h] += std::fabs(newKv[t * kC + c] * x);
        ref.dWScale[(kC + c) * kH + h] += std::fabs(newScore[t * kC + c] * x);
      }
    }
  }
  return ref;
}

// A BF16 result: within one BF16 rounding of the exact value plus one BF16 rounding of each term (the sum of their
// magnitudes is `scale`): a CPU that multiplies bf16 in hardware rounds the routed gradient to bf16 before the
// products (docs/compressor.md), as upstream does; elsewhere the terms carry only fp32 rounding.
static int countBf16Mismatches(const char* name, const std::vector<uint16_t>& got, const std::vector<double>& want,
                               const double* scale) {
  int mismatches = 0;
  for (size_t i = 0; i < got.size(); i++) {
    const double value = bf16ToFloat(got[i]);
    const double tolerance = std::ldexp(std::fabs(want[i]) + scale[i], -8) + 1e-30;
    if (std::fabs(value - want[i]) > tolerance) {
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

  Problem p;
  Lcg random{20260401};
  const auto bf16Values = [&random](int64_t count, double scale) {
    std::vector<uint16_t> v(static_cast<size_t>(count));
    for (auto& value : v) value = floatToBf16(static_cast<float>(random.uniform(-scale, scale)));
    return v;
  };
  p.x = bf16Values(kT * kH, 1.0);
  p.wkv = bf16Values(kC * kH, 2.0 / std::sqrt(static_cast<double>(kH)));
  p.wgate = bf16Values(kC * kH, 2.0 / std::sqrt(static_cast<double>(kH)));
  p.dCmpKv = bf16Values(kRows * kD, 1.0);
  p.ape.resize(kCmpRatio * kC);
  for (auto& value : p.ape) value = static_cast<float>(random.uniform(-0.5, 0.5));
  forwardIntermediates(p);

  // 1. Tensors, as in the seed: x [B, S, H], dCmpKv [B, ceil(S/cr), D], softmaxScore / kv [B, ceil(S/cr), N, D].
  const std::vector<int64_t> xShape = {kB, kS, kH}, wShape = {kC, kH}, dCmpKvShape = {kB, kRows / kB, kD};
  const std::vector<int64_t> blockShape = {kB, kRows / kB, kN, kD}, startPosShape = {kB}, dApeShape = {kCmpRatio, kC};
  DeviceTensor x, wkv, wgate, dCmpKv, softmaxScore, kv, startPos, dX, dWkv, dWgate, dApe;
  std::vector<uint16_t> dXHost(kT * kH), dWkvHost(kC * kH), dWgateHost(kC * kH);
  std::vector<float> dApeHost(kCmpRatio * kC);
  ret = createTensor(p.x, xShape, ACL_BF16, &x);
  ret = ret ? ret : createTensor(p.wkv, wShape, ACL_BF16, &wkv);
  ret = ret ? ret : createTensor(p.wgate, wShape, ACL_BF16, &wgate);
  ret = ret ? ret : createTensor(p.dCmpKv, dCmpKvShape, ACL_BF16, &dCmpKv);
  ret = ret ? ret : createTensor(p.softmaxScore, blockShape, ACL_FLOAT, &softmaxScore);
  ret = ret ? ret : createTensor(p.kv, blockShape, ACL_FLOAT, &kv);
  ret = ret ? ret : createTensor(std::vector<int32_t>(kB, 0), startPosShape, ACL_INT32, &startPos);
  ret = ret ? ret : createTensor(dXHost, xShape, ACL_BF16, &dX);
  ret = ret ? ret : createTensor(dWkvHost, wShape, ACL_BF16, &dWkv);
  ret = ret ? ret : createTensor(dWgateHost, wShape, ACL_BF16, &dWgate);
  ret = ret ? ret : createTensor(dApeHost, dApeShape, ACL_FLOAT, &dApe);
  CHECK_RET(ret == ACL_SUCCESS, return ret);

  // 2. The two phases.
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnCompressorGradGetWorkspaceSize(x.tensor, wkv.tensor, wgate.tensor, dCmpKv.tensor, softmaxScore.tensor,
                                            kv.tensor, nullptr, nullptr, startPos.tensor, kCmpRatio, kCoff, dX.tensor,
                                            dWkv.tensor, dWgate.tensor, dApe.tensor, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnCompressorGradGetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
            return ret);
  void* workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
  }
  ret = aclnnCompressorGrad(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnCompressorGrad failed. ERROR: %d\n", ret); return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);
  if (workspaceSize > 0) aclrtFree(workspaceAddr);

  // 3. Results.
  ret = copyBack(dXHost, dX);
  ret = ret ? ret : copyBack(dWkvHost, dWkv);
  ret = ret ? ret : copyBack(dWgateHost, dWgate);
  ret = ret ? ret : copyBack(dApeHost, dApe);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  LOG_PRINT("CompressorGrad C4A (B=%ld, S=%ld, H=%ld, D=%ld, coff=%ld, cmpRatio=%ld, BF16), workspace %lu bytes\n",
            static_cast<long>(kB), static_cast<long>(kS), static_cast<long>(kH), static_cast<long>(kD),
            static_cast<long>(kCoff), static_cast<long>(kCmpRatio), static_cast<unsigned long>(workspaceSize));
  for (int64_t i = 0; i < 3; i++) LOG_PRINT("dX[%ld] = %f\n", static_cast<long>(i), bf16ToFloat(dXHost[i]));
  // Rows [0, D) of the weights see no gradient (no block reads a token through the previous-block projection).
  for (int64_t i : {int64_t{0}, kD * kH, kD * kH + 1}) {
    LOG_PRINT("dWkv[%ld] = %f  dWgate[%ld] = %f\n", static_cast<long>(i), bf16ToFloat(dWkvHost[i]),
              static_cast<long>(i), bf16ToFloat(dWgateHost[i]));
  }
  for (int64_t i : {int64_t{0}, kD, kD + 1}) LOG_PRINT("dApe[%ld] = %f\n", static_cast<long>(i), dApeHost[i]);

  const Reference ref = reference(p);
  int mismatches = countBf16Mismatches("dX", dXHost, ref.dX, ref.dXScale.data());
  mismatches += countBf16Mismatches("dWkv", dWkvHost, ref.dWkv, ref.dWScale.data());
  mismatches += countBf16Mismatches("dWgate", dWgateHost, ref.dWgate, ref.dWScale.data() + kC * kH);
  double apeScale = 0;
  for (double v : ref.dApe) apeScale = std::fmax(apeScale, std::fabs(v));
  for (size_t i = 0; i < dApeHost.size(); i++) {
    if (std::fabs(dApeHost[i] - ref.dApe[i]) > 1e-6 * apeScale + 1e-30) {
      if (mismatches++ < 5) LOG_PRINT("  dApe[%zu] = %.9g, expected %.9g\n", i, dApeHost[i], ref.dApe[i]);
    }
  }
  if (mismatches == 0) {
    LOG_PRINT("every value matches the double-precision formulas\n");
  } else {
    LOG_PRINT("%d mismatches\n", mismatches);
  }

  for (DeviceTensor* t : {&x, &wkv, &wgate, &dCmpKv, &softmaxScore, &kv, &startPos, &dX, &dWkv, &dWgate, &dApe}) {
    destroy(*t);
  }
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  return mismatches == 0 ? 0 : 1;
}
