// aclnnMhcPreBackward fed by aclnnMhcPre, called the way a CANN training step does: the forward writes the caches
// (invRms, hMix, hPre) and hPost, the backward turns the upstream gradients (gradHIn, gradHPost, gradHRes, plus the
// gradXPost of a later op on the same x) into gradX, gradPhi, gradAlpha, gradBias and gradGamma. TND layout,
// T = 1024, N = 4, D = 512, BF16. It prints a few values and checks them against a double-precision evaluation of
// the gradient formulas written out below (fed with the same caches); it exits non-zero on a mismatch.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_mhc_pre.h"
#include "aclnnop/aclnn_mhc_pre_backward.h"

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
static constexpr float kHcEps = 1e-6f;  // the backward must get the forward's hcEps

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

// Runs the planned executor on the stream and waits for it.
static int runAndWait(aclnnStatus (*run)(void*, uint64_t, aclOpExecutor*, aclrtStream), uint64_t workspaceSize,
                      aclOpExecutor* executor, aclrtStream stream, const char* name) {
  void* workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    int ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
  }
  int ret = run(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("%s failed. ERROR: %d\n", name, ret); return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);
  if (workspaceSize > 0) aclrtFree(workspaceAddr);
  return 0;
}

// What the backward's self-check needs: the host copies of every input and of the forward's caches.
struct Problem {
  std::vector<uint16_t> x, gradHIn, gradXPost;
  std::vector<float> phi, alpha, gamma, gradHPost, gradHRes, invRms, hMix, hPre, hPost;
};

// The gradient of one token with respect to the pre-activations z = w * alpha + bias (length F), from the saved
// forward outputs: sigma' is rebuilt from hPre - hcEps and hPost / 2, as the kernels of upstream do.
static std::vector<double> preActivationGradient(const Problem& p, int64_t t) {
  std::vector<double> dz(kF);
  for (int64_t i = 0; i < kN; i++) {
    double gradPre = 0;  // d loss / d hPre[i] = gradHIn . x[i, :]
    for (int64_t d = 0; d < kD; d++) {
      gradPre += static_cast<double>(bf16ToFloat(p.gradHIn[t * kD + d])) * bf16ToFloat(p.x[t * kK + i * kD + d]);
    }
    const double s = static_cast<double>(p.hPre[t * kN + i]) - kHcEps;
    dz[i] = gradPre * s * (1 - s);
    const double post = p.hPost[t * kN + i];
    dz[kN + i] = p.gradHPost[t * kN + i] * post * (1 - post / 2);
  }
  for (int64_t j = 0; j < kN * kN; j++) dz[2 * kN + j] = p.gradHRes[t * kN * kN + j];
  return dz;
}

static double alphaOfRow(const Problem& p, int64_t f) { return p.alpha[f < kN ? 0 : (f < 2 * kN ? 1 : 2)]; }

// d loss / d hMix of one token (the matmul output), and d loss / d invRms.
static std::vector<double> mixGradient(const Problem& p, int64_t t, double* gradInvRms) {
  const std::vector<double> dz = preActivationGradient(p, t);
  std::vector<double> dm(kF);
  *gradInvRms = 0;
  for (int64_t f = 0; f < kF; f++) {
    const double dw = dz[f] * alphaOfRow(p, f);
    *gradInvRms += dw * p.hMix[t * kF + f];
    dm[f] = dw * p.invRms[t];
  }
  return dm;
}

// gradX of one token in double (before the final rounding to BF16), and the size of its terms.
static void referenceGradX(const Problem& p, int64_t t, std::vector<double>* gradX, std::vector<double>* scale) {
  double gradInvRms = 0;
  const std::vector<double> dm = mixGradient(p, t, &gradInvRms);
  const double r = p.invRms[t];
  const double rmsCoefficient = -gradInvRms * r * r * r / kK;  // through invRms, on the raw x
  for (int64_t k = 0; k < kK; k++) {
    double dxg = 0, dxgScale = 0;  // d loss / d (x * gamma) = dm . phi[:, k]
    for (int64_t f = 0; f < kF; f++) {
      dxg += dm[f] * p.phi[f * kK + k];
      dxgScale += std::fabs(dm[f] * p.phi[f * kK + k]);
    }
    const double xk = bf16ToFloat(p.x[t * kK + k]);
    const double viaHIn = static_cast<double>(bf16ToFloat(p.gradHIn[t * kD + k % kD])) * p.hPre[t * kN + k / kD];
    const double viaRms = xk * rmsCoefficient;
    const double viaMix = p.gamma[k] * dxg;
    const double post = bf16ToFloat(p.gradXPost[t * kK + k]);
    (*gradX)[k] = viaHIn + viaRms + viaMix + post;
    (*scale)[k] = std::fabs(viaHIn) + std::fabs(viaRms) + p.gamma[k] * dxgScale + std::fabs(post);
  }
}

// A value and the sum of the magnitudes of its terms (what fp32 rounding errors scale with).
struct Sum {
  double value = 0;
  double scale = 0;
  void add(double term) {
    value += term;
    scale += std::fabs(term);
  }
};

static int checkValue(const char* name, float got, const Sum& expected, double relative) {
  const double tolerance = relative * expected.scale + 1e-30;
  if (std::fabs(got - expected.value) <= tolerance) return 0;
  LOG_PRINT("  %s = %.9g, expected %.9g (tolerance %.3g)\n", name, got, expected.value, tolerance);
  return 1;
}

int main() {
  int32_t deviceId = 0;
  aclrtStream stream;
  int ret = initRuntime(deviceId, &stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

  Problem p;
  Lcg random{424242};
  p.x.resize(kT * kK);
  for (auto& value : p.x) value = floatToBf16(static_cast<float>(random.uniform(-1, 1)));
  p.phi.resize(kF * kK);
  for (auto& value : p.phi) value = static_cast<float>(random.uniform(-1, 1) / std::sqrt(static_cast<double>(kK)));
  p.alpha = {0.8f, 1.1f, 0.9f};
  std::vector<float> bias(kF);
  for (auto& value : bias) value = static_cast<float>(random.uniform(-0.5, 0.5));
  p.gamma.resize(kK);
  for (auto& value : p.gamma) value = static_cast<float>(random.uniform(0.5, 1.5));

  // 1. The forward, with the caches the backward needs.
  DeviceTensor x, phi, alpha, biasTensor, gamma, hIn, hPost, hRes, invRms, hMix, hPre;
  ret = createTensor(p.x, {kT, kN, kD}, ACL_BF16, &x) | createTensor(p.phi, {kF, kK}, ACL_FLOAT, &phi) |
        createTensor(p.alpha, {3}, ACL_FLOAT, &alpha) | createTensor(bias, {kF}, ACL_FLOAT, &biasTensor) |
        createTensor(p.gamma, {kN, kD}, ACL_FLOAT, &gamma) |
        createTensor(std::vector<uint16_t>(kT * kD), {kT, kD}, ACL_BF16, &hIn) |
        createTensor(std::vector<float>(kT * kN), {kT, kN}, ACL_FLOAT, &hPost) |
        createTensor(std::vector<float>(kT * kN * kN), {kT, kN, kN}, ACL_FLOAT, &hRes) |
        createTensor(std::vector<float>(kT), {kT}, ACL_FLOAT, &invRms) |
        createTensor(std::vector<float>(kT * kF), {kT, kF}, ACL_FLOAT, &hMix) |
        createTensor(std::vector<float>(kT * kN), {kT, kN}, ACL_FLOAT, &hPre);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnMhcPreGetWorkspaceSize(x.tensor, phi.tensor, alpha.tensor, biasTensor.tensor, gamma.tensor, kNormEps,
                                    kHcEps, hIn.tensor, hPost.tensor, hRes.tensor, invRms.tensor, hMix.tensor,
                                    hPre.tensor, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnMhcPreGetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
            return ret);
  ret = runAndWait(aclnnMhcPre, workspaceSize, executor, stream, "aclnnMhcPre");
  CHECK_RET(ret == ACL_SUCCESS, return ret);

  // 2. The gradients arriving from above: of hIn (BF16), hPost, hRes (FP32), and a gradXPost to add in.
  p.gradHIn.resize(kT * kD);
  for (auto& value : p.gradHIn) value = floatToBf16(static_cast<float>(random.uniform(-1, 1)));
  p.gradHPost.resize(kT * kN);
  for (auto& value : p.gradHPost) value = static_cast<float>(random.uniform(-1, 1));
  p.gradHRes.resize(kT * kN * kN);
  for (auto& value : p.gradHRes) value = static_cast<float>(random.uniform(-1, 1));
  p.gradXPost.resize(kT * kK);
  for (auto& value : p.gradXPost) value = floatToBf16(static_cast<float>(random.uniform(-0.25, 0.25)));
  DeviceTensor gradHIn, gradHPost, gradHRes, gradXPost, gradX, gradPhi, gradAlpha, gradBias, gradGamma;
  ret = createTensor(p.gradHIn, {kT, kD}, ACL_BF16, &gradHIn) |
        createTensor(p.gradHPost, {kT, kN}, ACL_FLOAT, &gradHPost) |
        createTensor(p.gradHRes, {kT, kN, kN}, ACL_FLOAT, &gradHRes) |
        createTensor(p.gradXPost, {kT, kN, kD}, ACL_BF16, &gradXPost) |
        createTensor(std::vector<uint16_t>(kT * kK), {kT, kN, kD}, ACL_BF16, &gradX) |
        createTensor(std::vector<float>(kF * kK), {kF, kK}, ACL_FLOAT, &gradPhi) |
        createTensor(std::vector<float>(3), {3}, ACL_FLOAT, &gradAlpha) |
        createTensor(std::vector<float>(kF), {kF}, ACL_FLOAT, &gradBias) |
        createTensor(std::vector<float>(kK), {kN, kD}, ACL_FLOAT, &gradGamma);
  CHECK_RET(ret == ACL_SUCCESS, return ret);

  // 3. The backward: phase 1 checks and plans, phase 2 runs.
  ret = aclnnMhcPreBackwardGetWorkspaceSize(
      x.tensor, phi.tensor, alpha.tensor, gradHIn.tensor, gradHPost.tensor, gradHRes.tensor, invRms.tensor, hMix.tensor,
      hPre.tensor, hPost.tensor, gamma.tensor, gradXPost.tensor, kHcEps, gradX.tensor, gradPhi.tensor, gradAlpha.tensor,
      gradBias.tensor, gradGamma.tensor, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnMhcPreBackwardGetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
            return ret);
  ret = runAndWait(aclnnMhcPreBackward, workspaceSize, executor, stream, "aclnnMhcPreBackward");
  CHECK_RET(ret == ACL_SUCCESS, return ret);

  p.invRms.resize(kT);
  p.hMix.resize(kT * kF);
  p.hPre.resize(kT * kN);
  p.hPost.resize(kT * kN);
  std::vector<uint16_t> gradXHost(kT * kK);
  std::vector<float> gradPhiHost(kF * kK), gradAlphaHost(3), gradBiasHost(kF), gradGammaHost(kK);
  ret = copyBack(p.invRms, invRms) | copyBack(p.hMix, hMix) | copyBack(p.hPre, hPre) | copyBack(p.hPost, hPost) |
        copyBack(gradXHost, gradX) | copyBack(gradPhiHost, gradPhi) | copyBack(gradAlphaHost, gradAlpha) |
        copyBack(gradBiasHost, gradBias) | copyBack(gradGammaHost, gradGamma);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  LOG_PRINT("backward workspace: %llu bytes\n", static_cast<unsigned long long>(workspaceSize));
  LOG_PRINT("gradX[0][0][0..3] = %f %f %f %f\n", bf16ToFloat(gradXHost[0]), bf16ToFloat(gradXHost[1]),
            bf16ToFloat(gradXHost[2]), bf16ToFloat(gradXHost[3]));
  LOG_PRINT("gradPhi[0][0..3]  = %f %f %f %f\n", gradPhiHost[0], gradPhiHost[1], gradPhiHost[2], gradPhiHost[3]);
  LOG_PRINT("gradAlpha         = %f %f %f\n", gradAlphaHost[0], gradAlphaHost[1], gradAlphaHost[2]);
  LOG_PRINT("gradBias[0..3]    = %f %f %f %f\n", gradBiasHost[0], gradBiasHost[1], gradBiasHost[2], gradBiasHost[3]);
  LOG_PRINT("gradGamma[0][0..3] = %f %f %f %f\n", gradGammaHost[0], gradGammaHost[1], gradGammaHost[2],
            gradGammaHost[3]);

  // 4. Self-check. gradX of three tokens: within half a BF16 ulp of the double value, plus fp32 noise. The sums
  // over tokens (gradBias, gradAlpha, a few gradPhi and gradGamma elements): within 1e-5 of the sum of |terms|.
  int wrong = 0;
  for (int64_t t : {int64_t{0}, int64_t{333}, kT - 1}) {
    std::vector<double> expected(kK), scale(kK);
    referenceGradX(p, t, &expected, &scale);
    for (int64_t k = 0; k < kK; k++) {
      const double got = bf16ToFloat(gradXHost[t * kK + k]);
      const double tolerance = std::ldexp(std::fabs(expected[k]), -8) + 1e-6 * scale[k];
      if (std::fabs(got - expected[k]) > tolerance && wrong++ < 5) {
        LOG_PRINT("  gradX[%lld][%lld] = %.9g, expected %.9g\n", static_cast<long long>(t), static_cast<long long>(k),
                  got, expected[k]);
      }
    }
  }
  std::vector<Sum> biasSum(kF), alphaSum(3);
  const int64_t phiChecks[][2] = {{0, 0}, {5, 1000}, {kN + 1, 17}, {kF - 1, kK - 1}};
  const int64_t gammaChecks[] = {0, 777, kK - 1};
  std::vector<Sum> phiSum(4), gammaSum(3);
  for (int64_t t = 0; t < kT; t++) {
    const std::vector<double> dz = preActivationGradient(p, t);
    double unusedGradInvRms = 0;
    const std::vector<double> dm = mixGradient(p, t, &unusedGradInvRms);
    for (int64_t f = 0; f < kF; f++) {
      biasSum[f].add(dz[f]);
      alphaSum[f < kN ? 0 : (f < 2 * kN ? 1 : 2)].add(dz[f] * p.hMix[t * kF + f] * p.invRms[t]);
    }
    for (int c = 0; c < 4; c++) {
      const int64_t f = phiChecks[c][0], k = phiChecks[c][1];
      phiSum[c].add(dm[f] * bf16ToFloat(p.x[t * kK + k]) * p.gamma[k]);
    }
    for (int c = 0; c < 3; c++) {
      const int64_t k = gammaChecks[c];
      double dxg = 0;
      for (int64_t f = 0; f < kF; f++) dxg += dm[f] * p.phi[f * kK + k];
      gammaSum[c].add(bf16ToFloat(p.x[t * kK + k]) * dxg);
    }
  }
  for (int64_t f = 0; f < kF; f++) wrong += checkValue("gradBias", gradBiasHost[f], biasSum[f], 1e-5);
  for (int b = 0; b < 3; b++) wrong += checkValue("gradAlpha", gradAlphaHost[b], alphaSum[b], 1e-5);
  for (int c = 0; c < 4; c++) {
    wrong += checkValue("gradPhi", gradPhiHost[phiChecks[c][0] * kK + phiChecks[c][1]], phiSum[c], 1e-5);
  }
  for (int c = 0; c < 3; c++) wrong += checkValue("gradGamma", gradGammaHost[gammaChecks[c]], gammaSum[c], 1e-5);

  for (const DeviceTensor* t :
       {&x,    &phi,     &alpha,     &biasTensor, &gamma,     &hIn,   &hPost,   &hRes,      &invRms,   &hMix,
        &hPre, &gradHIn, &gradHPost, &gradHRes,   &gradXPost, &gradX, &gradPhi, &gradAlpha, &gradBias, &gradGamma}) {
    aclDestroyTensor(t->tensor);
    aclrtFree(t->device);
  }
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  LOG_PRINT("%s\n",
            wrong == 0 ? "mhc_pre_backward example: all checked results correct" : "mhc_pre_backward example: WRONG");
  return wrong == 0 ? 0 : 1;
}
