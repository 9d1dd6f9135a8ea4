// aclnnMhcPreSinkhorn and aclnnMhcPreSinkhornBackward, called the way a CANN program does: init, device, stream,
// device memory, tensors, the two phases, synchronize, copy back. B = 1, S = 16 tokens of n = 4 streams of c = 4096
// (the Ascend950 kernel's width), BF16 x: the forward computes hin, hPost and the doubly stochastic hRes and saves
// what the backward needs; the backward turns gradients of hPost and hRes into gradients of the parameters. The
// program checks that hRes is doubly stochastic and compares gradBias and gradAlpha with central finite differences
// of the forward; it exits non-zero on a mismatch.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_mhc_pre_sinkhorn.h"
#include "aclnnop/aclnn_mhc_pre_sinkhorn_backward.h"

static constexpr int64_t kB = 1, kS = 16, kN = 4, kC = 4096, kF = kN * kN + 2 * kN, kIters = 20;
static constexpr int64_t kTokens = kB * kS;
static constexpr double kEps = 1e-6;

// One device buffer and the contiguous ND tensor over it.
struct DeviceTensor {
  void* address = nullptr;
  aclTensor* tensor = nullptr;
  size_t bytes = 0;
};

static int createTensor(const void* host, size_t elementBytes, aclDataType dtype, const std::vector<int64_t>& shape,
                        DeviceTensor* out) {
  int64_t elements = 1;
  for (int64_t dim : shape) elements *= dim;
  out->bytes = static_cast<size_t>(elements) * elementBytes;
  if (aclrtMalloc(&out->address, out->bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return 1;
  if (host != nullptr &&
      aclrtMemcpy(out->address, out->bytes, host, out->bytes, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS) {
    return 1;
  }
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
  out->tensor = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                                shape.size(), out->address);
  return out->tensor == nullptr;
}

static void download(void* host, const DeviceTensor& device) {
  aclrtMemcpy(host, device.bytes, device.address, device.bytes, ACL_MEMCPY_DEVICE_TO_HOST);
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

// BF16 of a float, rounded to nearest even (finite values).
static uint16_t toBf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

struct Layer {
  aclrtStream stream = nullptr;
  DeviceTensor x, phi, alpha, bias, hin, hPost, hRes, hPre, hcBeforeNorm, invRms, sumOut, normOut;
  DeviceTensor gradHin, gradHPost, gradHRes, gradX, gradPhi, gradAlpha, gradBias;

  int forward(bool needBackward) {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    const aclnnStatus planned = aclnnMhcPreSinkhornGetWorkspaceSize(
        x.tensor, phi.tensor, alpha.tensor, bias.tensor, kN, kIters, kEps, kEps, needBackward, hin.tensor, hPost.tensor,
        hRes.tensor, hPre.tensor, hcBeforeNorm.tensor, invRms.tensor, sumOut.tensor, normOut.tensor, &size, &executor);
    return runPlanned(planned, size, executor, stream, aclnnMhcPreSinkhorn, "aclnnMhcPreSinkhorn");
  }
  int backward() {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    const aclnnStatus planned = aclnnMhcPreSinkhornBackwardGetWorkspaceSize(
        gradHin.tensor, gradHPost.tensor, gradHRes.tensor, x.tensor, phi.tensor, alpha.tensor, bias.tensor, hPre.tensor,
        hcBeforeNorm.tensor, invRms.tensor, sumOut.tensor, normOut.tensor, kEps, gradX.tensor, gradPhi.tensor,
        gradAlpha.tensor, gradBias.tensor, &size, &executor);
    return runPlanned(planned, size, executor, stream, aclnnMhcPreSinkhornBackward, "aclnnMhcPreSinkhornBackward");
  }
  // sum(gPost * hPost) + sum(gRes * hRes) of a forward without saved tensors.
  double loss(const std::vector<float>& gPost, const std::vector<float>& gRes) {
    if (forward(false) != 0) return NAN;
    std::vector<float> post(gPost.size()), res(gRes.size());
    download(post.data(), hPost);
    download(res.data(), hRes);
    double total = 0;
    for (size_t i = 0; i < post.size(); ++i) total += static_cast<double>(gPost[i]) * post[i];
    for (size_t i = 0; i < res.size(); ++i) total += static_cast<double>(gRes[i]) * res[i];
    return total;
  }
};

int main() {
  aclInit(nullptr);
  aclrtSetDevice(0);
  Layer l;
  aclrtCreateStream(&l.stream);

  uint64_t state = 2026;  // a small deterministic generator: values in [-1, 1)
  const auto uniform = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>(-1.0 + 2.0 * static_cast<double>(state >> 11) / 9007199254740992.0);
  };
  std::vector<uint16_t> x(kTokens * kN * kC), zeroHin(kTokens * kC, 0);
  for (uint16_t& v : x) v = toBf16(2.0f * uniform());
  std::vector<float> phi(kF * kN * kC), alpha(3), bias(kF), gPost(kTokens * kN), gRes(kTokens * kN * kN);
  for (float& v : phi) v = uniform() / std::sqrt(static_cast<float>(kN * kC));  // upstream's recommended range
  for (float& v : alpha) v = uniform();
  for (float& v : bias) v = 0.5f * uniform();
  for (float& v : gPost) v = uniform();
  for (float& v : gRes) v = uniform();
  const std::vector<int64_t> lead = {kB, kS};
  const auto shape = [&lead](std::vector<int64_t> tail, int64_t steps = 0) {
    std::vector<int64_t> s;
    if (steps > 0) s.push_back(steps);
    s.insert(s.end(), lead.begin(), lead.end());
    s.insert(s.end(), tail.begin(), tail.end());
    return s;
  };
  const aclDataType f32 = ACL_FLOAT, bf16 = ACL_BF16;
  if (createTensor(x.data(), 2, bf16, shape({kN, kC}), &l.x) ||
      createTensor(phi.data(), 4, f32, {kF, kN * kC}, &l.phi) || createTensor(alpha.data(), 4, f32, {3}, &l.alpha) ||
      createTensor(bias.data(), 4, f32, {kF}, &l.bias) || createTensor(nullptr, 2, bf16, shape({kC}), &l.hin) ||
      createTensor(nullptr, 4, f32, shape({kN}), &l.hPost) ||
      createTensor(nullptr, 4, f32, shape({kN * kN}), &l.hRes) || createTensor(nullptr, 4, f32, shape({kN}), &l.hPre) ||
      createTensor(nullptr, 4, f32, shape({kF}), &l.hcBeforeNorm) ||
      createTensor(nullptr, 4, f32, shape({1}), &l.invRms) ||
      createTensor(nullptr, 4, f32, shape({kN}, 2 * kIters), &l.sumOut) ||
      createTensor(nullptr, 4, f32, shape({kN, kN}, 2 * kIters), &l.normOut) ||
      createTensor(zeroHin.data(), 2, bf16, shape({kC}), &l.gradHin) ||
      createTensor(gPost.data(), 4, f32, shape({kN}), &l.gradHPost) ||
      createTensor(gRes.data(), 4, f32, shape({kN, kN}), &l.gradHRes) ||
      createTensor(nullptr, 2, bf16, shape({kN, kC}), &l.gradX) ||
      createTensor(nullptr, 4, f32, {kF, kN * kC}, &l.gradPhi) || createTensor(nullptr, 4, f32, {3}, &l.gradAlpha) ||
      createTensor(nullptr, 4, f32, {kF}, &l.gradBias)) {
    return 1;
  }
  if (l.forward(true) != 0 || l.backward() != 0) return 1;
  std::vector<float> hRes(kTokens * kN * kN), gradAlpha(3), gradBias(kF);
  download(hRes.data(), l.hRes);
  download(gradAlpha.data(), l.gradAlpha);
  download(gradBias.data(), l.gradBias);
  std::printf("hRes[0]:      %f %f %f %f\n", hRes[0], hRes[1], hRes[2], hRes[3]);
  std::printf("gradAlpha:    %f %f %f\n", gradAlpha[0], gradAlpha[1], gradAlpha[2]);

  int mismatches = 0;
  double worstRow = 0, worstColumn = 0;
  for (int64_t t = 0; t < kTokens; ++t) {
    for (int64_t i = 0; i < kN; ++i) {
      double row = 0, column = 0;
      for (int64_t j = 0; j < kN; ++j) {
        row += hRes[(t * kN + i) * kN + j];
        column += hRes[(t * kN + j) * kN + i];
      }
      worstRow = std::fmax(worstRow, std::fabs(row - 1));
      worstColumn = std::fmax(worstColumn, std::fabs(column - 1));
    }
  }
  mismatches += worstColumn > 1e-5 || worstRow > 1e-3;
  std::printf("largest |row sum - 1| %.2e, |column sum - 1| %.2e\n", worstRow, worstColumn);

  // The gradients of bias and alpha (fp32 inputs the forward is smooth in) by central differences (h = 1e-2).
  const float h = 1e-2f;
  double worst = 0;
  const auto probe = [&](std::vector<float>& values, const DeviceTensor& device, size_t i, float analytic) {
    double loss[2];
    for (int side = 0; side < 2; ++side) {
      std::vector<float> moved = values;
      moved[i] += side == 0 ? h : -h;
      aclrtMemcpy(device.address, device.bytes, moved.data(), device.bytes, ACL_MEMCPY_HOST_TO_DEVICE);
      loss[side] = l.loss(gPost, gRes);
    }
    aclrtMemcpy(device.address, device.bytes, values.data(), device.bytes, ACL_MEMCPY_HOST_TO_DEVICE);
    worst = std::fmax(worst, std::fabs((loss[0] - loss[1]) / (2 * h) - analytic));
  };
  for (size_t i = 0; i < bias.size(); ++i) probe(bias, l.bias, i, gradBias[i]);
  for (size_t i = 0; i < alpha.size(); ++i) probe(alpha, l.alpha, i, gradAlpha[i]);
  mismatches += !(worst < 2e-3);
  std::printf("largest |finite difference - gradient| of bias and alpha %.2e\n", worst);
  std::printf(mismatches == 0 ? "hRes is doubly stochastic and the gradients match\n" : "mismatch\n");

  for (DeviceTensor* t :
       {&l.x, &l.phi, &l.alpha, &l.bias, &l.hin, &l.hPost, &l.hRes, &l.hPre, &l.hcBeforeNorm, &l.invRms, &l.sumOut,
        &l.normOut, &l.gradHin, &l.gradHPost, &l.gradHRes, &l.gradX, &l.gradPhi, &l.gradAlpha, &l.gradBias}) {
    aclDestroyTensor(t->tensor);
    aclrtFree(t->address);
  }
  aclrtDestroyStream(l.stream);
  aclrtResetDevice(0);
  aclFinalize();
  return mismatches == 0 ? 0 : 1;
}
