// aclnnMhcPre, called the way a CANN program does: init, device, stream, device memory, tensors, the two phases,
// synchronize, copy back. TND layout, T = 1024 tokens, N = 4 streams, D = 512, BF16 x, with gamma and the three
// caches (invRms, hMix, hPre) that aclnnMhcPreBackward needs. It prints a few values and checks three tokens
// against a double-precision evaluation of the formulas written out below; it exits non-zero on a mismatch.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_mhc_pre.h"

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

static constexpr int64_t kT = 1024;
static constexpr int64_t kN = 4;
static constexpr int64_t kD = 512;
static constexpr int64_t kK = kN * kD;           // flattened per-token input length
static constexpr int64_t kF = kN * kN + 2 * kN;  // phi rows: pre (N), post (N), res (N*N)
static constexpr double kNormEps = 1e-6;
static constexpr double kHcEps = 1e-6;

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

// Copies host data to new device memory and describes it as a contiguous ND tensor.
template <typename T>
static int createTensor(const std::vector<T>& hostData, const std::vector<int64_t>& shape, void** deviceAddr,
                        aclDataType dataType, aclTensor** tensor) {
  const size_t size = static_cast<size_t>(elementCount(shape)) * sizeof(T);
  aclError ret = aclrtMalloc(deviceAddr, size, ACL_MEM_MALLOC_HUGE_FIRST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
  ret = aclrtMemcpy(*deviceAddr, size, hostData.data(), size, ACL_MEMCPY_HOST_TO_DEVICE);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
  *tensor = aclCreateTensor(shape.data(), shape.size(), dataType, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                            shape.size(), *deviceAddr);
  CHECK_RET(*tensor != nullptr, LOG_PRINT("aclCreateTensor failed: %s\n", aclGetRecentErrMsg()); return -1);
  return 0;
}

template <typename T>
static int copyBack(std::vector<T>& host, const void* device) {
  const size_t size = host.size() * sizeof(T);
  aclError ret = aclrtMemcpy(host.data(), size, device, size, ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result from device to host failed. ERROR: %d\n", ret); return ret);
  return 0;
}

static double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }

// The forward of one token in double precision, from the formulas of docs/mhc.md.
struct TokenReference {
  double invRms;
  std::vector<double> hMix, hPre, hPost, hRes, hIn;
  std::vector<double> hMixScale;  // sum of |x*gamma*phi| per row: the size of the rounding errors to expect
};

static TokenReference referenceToken(const std::vector<uint16_t>& x, const std::vector<float>& phi,
                                     const std::vector<float>& alpha, const std::vector<float>& bias,
                                     const std::vector<float>& gamma, int64_t t) {
  TokenReference r{0.0,
                   std::vector<double>(kF),
                   std::vector<double>(kN),
                   std::vector<double>(kN),
                   std::vector<double>(kN * kN),
                   std::vector<double>(kD),
                   std::vector<double>(kF)};
  std::vector<double> xf(kK);
  double sumSquares = 0;
  for (int64_t k = 0; k < kK; k++) {
    xf[k] = bf16ToFloat(x[t * kK + k]);
    sumSquares += xf[k] * xf[k];
  }
  r.invRms = 1.0 / std::sqrt(sumSquares / kK + kNormEps);  // raw x: gamma is not part of the RMS
  for (int64_t f = 0; f < kF; f++) {
    double sum = 0, scale = 0;
    for (int64_t k = 0; k < kK; k++) {
      const double term = xf[k] * gamma[k] * phi[f * kK + k];
      sum += term;
      scale += std::fabs(term);
    }
    r.hMix[f] = sum;
    r.hMixScale[f] = scale;
  }
  for (int64_t i = 0; i < kN; i++) {
    r.hPre[i] = sigmoid(r.hMix[i] * r.invRms * alpha[0] + bias[i]) + kHcEps;
    r.hPost[i] = 2.0 * sigmoid(r.hMix[kN + i] * r.invRms * alpha[1] + bias[kN + i]);
  }
  for (int64_t j = 0; j < kN * kN; j++) r.hRes[j] = r.hMix[2 * kN + j] * r.invRms * alpha[2] + bias[2 * kN + j];
  for (int64_t d = 0; d < kD; d++) {
    double sum = 0;
    for (int64_t i = 0; i < kN; i++) sum += r.hPre[i] * xf[i * kD + d];
    r.hIn[d] = sum;
  }
  return r;
}

// Counts values farther from the reference than `tolerance` and prints the first few.
static int countWrong(const char* name, int64_t t, const float* got, const std::vector<double>& expected,
                      const std::vector<double>& tolerance) {
  int wrong = 0;
  for (size_t i = 0; i < expected.size(); i++) {
    if (std::fabs(got[i] - expected[i]) <= tolerance[i]) continue;
    if (wrong++ < 3) {
      LOG_PRINT("  %s[token %lld][%zu] = %.9g, expected %.9g (tolerance %.3g)\n", name, static_cast<long long>(t), i,
                got[i], expected[i], tolerance[i]);
    }
  }
  return wrong;
}

int main() {
  int32_t deviceId = 0;
  aclrtStream stream;
  int ret = initRuntime(deviceId, &stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

  // Inputs: x in [-1, 1] (BF16), phi scaled by 1/sqrt(K) so that the pre-activations are of order 1.
  Lcg random{20250101};
  std::vector<uint16_t> xHost(kT * kK);
  for (auto& value : xHost) value = floatToBf16(static_cast<float>(random.uniform(-1, 1)));
  std::vector<float> phiHost(kF * kK);
  for (auto& value : phiHost) value = static_cast<float>(random.uniform(-1, 1) / std::sqrt(static_cast<double>(kK)));
  std::vector<float> alphaHost = {0.8f, 1.1f, 0.9f};
  std::vector<float> biasHost(kF);
  for (auto& value : biasHost) value = static_cast<float>(random.uniform(-0.5, 0.5));
  std::vector<float> gammaHost(kK);
  for (auto& value : gammaHost) value = static_cast<float>(random.uniform(0.5, 1.5));

  std::vector<uint16_t> hInHost(kT * kD, 0);
  std::vector<float> hPostHost(kT * kN, 0), hResHost(kT * kN * kN, 0), invRmsHost(kT, 0), hMixHost(kT * kF, 0),
      hPreHost(kT * kN, 0);

  void* xDevice = nullptr;
  void* phiDevice = nullptr;
  void* alphaDevice = nullptr;
  void* biasDevice = nullptr;
  void* gammaDevice = nullptr;
  void* hInDevice = nullptr;
  void* hPostDevice = nullptr;
  void* hResDevice = nullptr;
  void* invRmsDevice = nullptr;
  void* hMixDevice = nullptr;
  void* hPreDevice = nullptr;
  aclTensor* x = nullptr;
  aclTensor* phi = nullptr;
  aclTensor* alpha = nullptr;
  aclTensor* bias = nullptr;
  aclTensor* gamma = nullptr;
  aclTensor* hIn = nullptr;
  aclTensor* hPost = nullptr;
  aclTensor* hRes = nullptr;
  aclTensor* invRms = nullptr;
  aclTensor* hMix = nullptr;
  aclTensor* hPre = nullptr;
  ret = createTensor(xHost, {kT, kN, kD}, &xDevice, ACL_BF16, &x);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(phiHost, {kF, kK}, &phiDevice, ACL_FLOAT, &phi);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(alphaHost, {3}, &alphaDevice, ACL_FLOAT, &alpha);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(biasHost, {kF}, &biasDevice, ACL_FLOAT, &bias);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(gammaHost, {kN, kD}, &gammaDevice, ACL_FLOAT, &gamma);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(hInHost, {kT, kD}, &hInDevice, ACL_BF16, &hIn);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(hPostHost, {kT, kN}, &hPostDevice, ACL_FLOAT, &hPost);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(hResHost, {kT, kN, kN}, &hResDevice, ACL_FLOAT, &hRes);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(invRmsHost, {kT}, &invRmsDevice, ACL_FLOAT, &invRms);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(hMixHost, {kT, kF}, &hMixDevice, ACL_FLOAT, &hMix);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(hPreHost, {kT, kN}, &hPreDevice, ACL_FLOAT, &hPre);
  CHECK_RET(ret == ACL_SUCCESS, return ret);

  // Phase 1: check and plan.
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnMhcPreGetWorkspaceSize(x, phi, alpha, bias, gamma, kNormEps, kHcEps, hIn, hPost, hRes, invRms, hMix, hPre,
                                    &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnMhcPreGetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
            return ret);
  void* workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
  }
  // Phase 2: enqueue on the stream, then wait.
  ret = aclnnMhcPre(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnMhcPre failed. ERROR: %d\n", ret); return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

  ret = copyBack(hInHost, hInDevice) | copyBack(hPostHost, hPostDevice) | copyBack(hResHost, hResDevice) |
        copyBack(invRmsHost, invRmsDevice) | copyBack(hMixHost, hMixDevice) | copyBack(hPreHost, hPreDevice);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  LOG_PRINT("workspace: %llu bytes\n", static_cast<unsigned long long>(workspaceSize));
  LOG_PRINT("hIn[0][0..3]   = %f %f %f %f\n", bf16ToFloat(hInHost[0]), bf16ToFloat(hInHost[1]), bf16ToFloat(hInHost[2]),
            bf16ToFloat(hInHost[3]));
  LOG_PRINT("hPost[0][0..3] = %f %f %f %f\n", hPostHost[0], hPostHost[1], hPostHost[2], hPostHost[3]);
  LOG_PRINT("hRes[0][0][..] = %f %f %f %f\n", hResHost[0], hResHost[1], hResHost[2], hResHost[3]);
  LOG_PRINT("hPre[0][0..3]  = %f %f %f %f\n", hPreHost[0], hPreHost[1], hPreHost[2], hPreHost[3]);
  LOG_PRINT("invRms[0] = %f, hMix[0][0] = %f\n", invRmsHost[0], hMixHost[0]);

  // Self-check: fp32 outputs within a few fp32 roundings of the double result (relative to the size of the
  // summed terms), hIn within one BF16 rounding.
  int wrong = 0;
  for (int64_t t : {int64_t{0}, int64_t{517}, kT - 1}) {
    const TokenReference r = referenceToken(xHost, phiHost, alphaHost, biasHost, gammaHost, t);
    std::vector<double> tolerance(kF);
    for (int64_t f = 0; f < kF; f++) tolerance[f] = 1e-5 * r.hMixScale[f] + 1e-6;
    wrong += countWrong("hMix", t, &hMixHost[t * kF], r.hMix, tolerance);
    wrong += countWrong("invRms", t, &invRmsHost[t], {r.invRms}, {1e-5 * r.invRms});
    wrong += countWrong("hPre", t, &hPreHost[t * kN], r.hPre, std::vector<double>(kN, 1e-5));
    wrong += countWrong("hPost", t, &hPostHost[t * kN], r.hPost, std::vector<double>(kN, 2e-5));
    std::vector<double> resTolerance(kN * kN);
    for (int64_t j = 0; j < kN * kN; j++) resTolerance[j] = 2e-5 * (r.hMixScale[2 * kN + j] * r.invRms + 1.0);
    wrong += countWrong("hRes", t, &hResHost[t * kN * kN], r.hRes, resTolerance);
    std::vector<float> hInToken(kD);
    std::vector<double> hInTolerance(kD);
    for (int64_t d = 0; d < kD; d++) {
      hInToken[d] = bf16ToFloat(hInHost[t * kD + d]);
      hInTolerance[d] = std::ldexp(std::fabs(r.hIn[d]), -8) + 1e-6;  // half a BF16 ulp, plus fp32 noise
    }
    wrong += countWrong("hIn", t, hInToken.data(), r.hIn, hInTolerance);
  }

  aclDestroyTensor(x);
  aclDestroyTensor(phi);
  aclDestroyTensor(alpha);
  aclDestroyTensor(bias);
  aclDestroyTensor(gamma);
  aclDestroyTensor(hIn);
  aclDestroyTensor(hPost);
  aclDestroyTensor(hRes);
  aclDestroyTensor(invRms);
  aclDestroyTensor(hMix);
  aclDestroyTensor(hPre);
  for (void* device : {xDevice, phiDevice, alphaDevice, biasDevice, gammaDevice, hInDevice, hPostDevice, hResDevice,
                       invRmsDevice, hMixDevice, hPreDevice}) {
    aclrtFree(device);
  }
  if (workspaceSize > 0) aclrtFree(workspaceAddr);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  LOG_PRINT("%s\n", wrong == 0 ? "mhc_pre example: all checked results correct" : "mhc_pre example: WRONG");
  return wrong == 0 ? 0 : 1;
}
