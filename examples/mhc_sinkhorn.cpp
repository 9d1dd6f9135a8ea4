// aclnnMhcSinkhorn and aclnnMhcSinkhornBackward, called the way a CANN program does: init, device, stream, device
// memory, tensors, the two phases, synchronize, copy back. T = 64 tokens of n = 4 streams, 20 iterations: the forward
// projects each token's residual logits onto a doubly stochastic matrix and saves its steps, the backward turns a
// gradient of that matrix into a gradient of the logits. The program checks that every column and row sums to 1 and
// compares the gradient of one token with central finite differences of the forward; it exits non-zero on a mismatch.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_mhc_sinkhorn.h"
#include "aclnnop/aclnn_mhc_sinkhorn_backward.h"

static constexpr int64_t kT = 64, kN = 4, kIters = 20;
static constexpr float kEps = 1e-6f;

// One device buffer and the contiguous ND FLOAT tensor over it.
struct DeviceTensor {
  void* address = nullptr;
  aclTensor* tensor = nullptr;
  size_t bytes = 0;
};

static int createTensor(const std::vector<float>& host, const std::vector<int64_t>& shape, DeviceTensor* out) {
  out->bytes = host.size() * sizeof(float);
  if (aclrtMalloc(&out->address, out->bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return 1;
  if (aclrtMemcpy(out->address, out->bytes, host.data(), out->bytes, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS) {
    return 1;
  }
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
  out->tensor = aclCreateTensor(shape.data(), shape.size(), ACL_FLOAT, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                                shape.size(), out->address);
  return out->tensor == nullptr;
}

static void upload(const std::vector<float>& host, const DeviceTensor& device) {
  aclrtMemcpy(device.address, device.bytes, host.data(), device.bytes, ACL_MEMCPY_HOST_TO_DEVICE);
}

static void download(std::vector<float>& host, const DeviceTensor& device) {
  aclrtMemcpy(host.data(), host.size() * sizeof(float), device.address, device.bytes, ACL_MEMCPY_DEVICE_TO_HOST);
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

struct Sinkhorn {
  aclrtStream stream = nullptr;
  DeviceTensor x, output, normOut, sumOut, grad, gradX;

  // The forward on x as uploaded; with `save` the steps go to normOut and sumOut.
  int forward(bool save) {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    const aclnnStatus planned =
        aclnnMhcSinkhornGetWorkspaceSize(x.tensor, kEps, kIters, output.tensor, save ? normOut.tensor : nullptr,
                                         save ? sumOut.tensor : nullptr, &size, &executor);
    return runPlanned(planned, size, executor, stream, aclnnMhcSinkhorn, "aclnnMhcSinkhorn");
  }
  int backward() {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    const aclnnStatus planned = aclnnMhcSinkhornBackwardGetWorkspaceSize(grad.tensor, normOut.tensor, sumOut.tensor,
                                                                         gradX.tensor, &size, &executor);
    return runPlanned(planned, size, executor, stream, aclnnMhcSinkhornBackward, "aclnnMhcSinkhornBackward");
  }
};

int main() {
  aclInit(nullptr);
  aclrtSetDevice(0);
  Sinkhorn s;
  aclrtCreateStream(&s.stream);

  std::vector<float> x(kT * kN * kN), g(x.size()), output(x.size()), gradX(x.size());
  uint64_t state = 2026;  // a small deterministic generator: values in [-2, 2)
  const auto uniform = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>(-2.0 + 4.0 * static_cast<double>(state >> 11) / 9007199254740992.0);
  };
  for (float& v : x) v = uniform();
  for (float& v : g) v = uniform();
  const std::vector<int64_t> matrices = {kT, kN, kN};
  const int64_t normElements = 2 * kIters * kT * kN * 8, sumElements = 2 * kIters * kT * 8;
  if (createTensor(x, matrices, &s.x) || createTensor(output, matrices, &s.output) ||
      createTensor(std::vector<float>(normElements), {normElements}, &s.normOut) ||
      createTensor(std::vector<float>(sumElements), {sumElements}, &s.sumOut) || createTensor(g, matrices, &s.grad) ||
      createTensor(gradX, matrices, &s.gradX)) {
    return 1;
  }
  if (s.forward(true) != 0 || s.backward() != 0) return 1;
  download(output, s.output);
  download(gradX, s.gradX);
  std::printf("output[0]: %f %f %f %f\n", output[0], output[1], output[2], output[3]);
  std::printf("gradX[0]:  %f %f %f %f\n", gradX[0], gradX[1], gradX[2], gradX[3]);

  int mismatches = 0;
  double worstRow = 0, worstColumn = 0;
  for (int64_t t = 0; t < kT; ++t) {
    for (int64_t i = 0; i < kN; ++i) {
      double row = 0, column = 0;
      for (int64_t j = 0; j < kN; ++j) {
        row += output[(t * kN + i) * kN + j];
        column += output[(t * kN + j) * kN + i];
      }
      worstRow = std::fmax(worstRow, std::fabs(row - 1));
      worstColumn = std::fmax(worstColumn, std::fabs(column - 1));
    }
  }
  mismatches += worstColumn > 1e-5 || worstRow > 1e-3;
  std::printf("largest |row sum - 1| %.2e, |column sum - 1| %.2e\n", worstRow, worstColumn);

  // d(sum g * output) / dx of token 0 by central differences of the forward (h = 1e-2: fp32 steps, smooth function).
  const float h = 1e-2f;
  double worstGradient = 0;
  for (int64_t e = 0; e < kN * kN; ++e) {
    double loss[2];
    for (int side = 0; side < 2; ++side) {
      std::vector<float> probe = x;
      probe[e] += side == 0 ? h : -h;
      upload(probe, s.x);
      if (s.forward(false) != 0) return 1;
      download(output, s.output);
      loss[side] = 0;
      for (int64_t k = 0; k < kN * kN; ++k) loss[side] += static_cast<double>(g[k]) * output[k];
    }
    const double difference = (loss[0] - loss[1]) / (2 * h);
    worstGradient = std::fmax(worstGradient, std::fabs(difference - gradX[e]));
  }
  mismatches += worstGradient > 2e-3;
  std::printf("token 0: largest |finite difference - gradX| %.2e\n", worstGradient);
  std::printf(mismatches == 0 ? "the output is doubly stochastic and the gradient matches\n" : "mismatch\n");

  for (DeviceTensor* t : {&s.x, &s.output, &s.normOut, &s.sumOut, &s.grad, &s.gradX}) {
    aclDestroyTensor(t->tensor);
    aclrtFree(t->address);
  }
  aclrtDestroyStream(s.stream);
  aclrtResetDevice(0);
  aclFinalize();
  return mismatches == 0 ? 0 : 1;
}
