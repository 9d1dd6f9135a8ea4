// aclnnBlockAttentionResiduals and aclnnBlockAttentionResidualsGrad, called the way a CANN program does: init,
// device, stream, device memory, tensors, the two phases, synchronize, copy back. T = 8 tokens, N = 4 finished blocks
// plus the partial block, H = 256, FP32: the forward mixes each token's block-level residuals by a softmax of their
// RMS-normed scores and saves invNorm and probs; the backward returns the gradients of all four inputs. The program
// checks that every token's probabilities sum to 1 and compares gradients of the two weight vectors and of one
// value with central finite differences of the forward; it exits non-zero on a mismatch.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_block_attention_residuals.h"
#include "aclnnop/aclnn_block_attention_residuals_grad.h"

static constexpr int64_t kT = 8, kN = 4, kH = 256, kValues = kN + 1;
static constexpr double kEps = 1e-6;

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

struct Residuals {
  aclrtStream stream = nullptr;
  DeviceTensor partial, blocks, proj, norm, hidden, invNorm, probs;
  DeviceTensor gradHidden, gradPartial, gradBlocks, gradProj, gradNorm;

  int forward(bool needBackward) {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    const aclnnStatus planned = aclnnBlockAttentionResidualsGetWorkspaceSize(
        partial.tensor, blocks.tensor, proj.tensor, norm.tensor, -1, kEps, needBackward, hidden.tensor,
        needBackward ? invNorm.tensor : nullptr, needBackward ? probs.tensor : nullptr, &size, &executor);
    return runPlanned(planned, size, executor, stream, aclnnBlockAttentionResiduals, "aclnnBlockAttentionResiduals");
  }
  int backward() {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    const aclnnStatus planned = aclnnBlockAttentionResidualsGradGetWorkspaceSize(
        partial.tensor, blocks.tensor, proj.tensor, norm.tensor, gradHidden.tensor, invNorm.tensor, probs.tensor, -1,
        gradPartial.tensor, gradBlocks.tensor, gradProj.tensor, gradNorm.tensor, &size, &executor);
    return runPlanned(planned, size, executor, stream, aclnnBlockAttentionResidualsGrad,
                      "aclnnBlockAttentionResidualsGrad");
  }
};

int main() {
  aclInit(nullptr);
  aclrtSetDevice(0);
  Residuals r;
  aclrtCreateStream(&r.stream);

  uint64_t state = 2026;  // a small deterministic generator: values in [-1, 1)
  const auto uniform = [&state] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<float>(-1.0 + 2.0 * static_cast<double>(state >> 11) / 9007199254740992.0);
  };
  std::vector<float> partial(kT * kH), blocks(kT * kN * kH), proj(kH), norm(kH), g(kT * kH);
  for (float& v : partial) v = uniform();
  for (float& v : blocks) v = 2.0f * uniform();
  for (float& v : proj) v = 0.2f * uniform();
  for (float& v : norm) v = 1.0f + 0.1f * uniform();
  for (float& v : g) v = uniform();
  std::vector<float> hidden(kT * kH), saved(kT * kValues), gradPartial(kT * kH), gradBlocks(kT * kN * kH), grad(kH);
  if (createTensor(partial, {kT, kH}, &r.partial) || createTensor(blocks, {kT, kN, kH}, &r.blocks) ||
      createTensor(proj, {1, kH}, &r.proj) || createTensor(norm, {kH}, &r.norm) ||
      createTensor(hidden, {kT, kH}, &r.hidden) || createTensor(saved, {kT, kValues}, &r.invNorm) ||
      createTensor(saved, {kT, kValues}, &r.probs) || createTensor(g, {kT, kH}, &r.gradHidden) ||
      createTensor(gradPartial, {kT, kH}, &r.gradPartial) || createTensor(gradBlocks, {kT, kN, kH}, &r.gradBlocks) ||
      createTensor(grad, {1, kH}, &r.gradProj) || createTensor(grad, {kH}, &r.gradNorm)) {
    return 1;
  }
  if (r.forward(true) != 0 || r.backward() != 0) return 1;
  std::vector<float> probs(kT * kValues), gradProj(kH), gradNorm(kH);
  download(probs, r.probs);
  download(gradProj, r.gradProj);
  download(gradNorm, r.gradNorm);
  download(gradBlocks, r.gradBlocks);
  std::printf("probs[0]: %f %f %f %f %f\n", probs[0], probs[1], probs[2], probs[3], probs[4]);

  int mismatches = 0;
  double worstSum = 0;
  for (int64_t t = 0; t < kT; ++t) {
    double sum = 0;
    for (int64_t i = 0; i < kValues; ++i) sum += probs[t * kValues + i];
    worstSum = std::fmax(worstSum, std::fabs(sum - 1));
  }
  mismatches += worstSum > 1e-6;
  std::printf("largest |sum of probs - 1| %.2e\n", worstSum);

  // d(sum g * hidden) by central differences (h = 1e-2) for a few elements of the weights and of one block.
  const auto loss = [&] {
    if (r.forward(false) != 0) return NAN;
    download(hidden, r.hidden);
    double total = 0;
    for (size_t e = 0; e < hidden.size(); ++e) total += static_cast<double>(g[e]) * hidden[e];
    return static_cast<float>(total);
  };
  const float step = 1e-2f;
  double worst = 0;
  const auto probe = [&](std::vector<float>& values, const DeviceTensor& device, size_t i, float analytic) {
    const float original = values[i];
    values[i] = original + step;
    upload(values, device);
    const double up = loss();
    values[i] = original - step;
    upload(values, device);
    const double down = loss();
    values[i] = original;
    upload(values, device);
    worst = std::fmax(worst, std::fabs((up - down) / (2 * step) - analytic));
  };
  for (size_t h = 0; h < 8; ++h) {
    probe(proj, r.proj, h * 31, gradProj[h * 31]);
    probe(norm, r.norm, h * 31, gradNorm[h * 31]);
    probe(blocks, r.blocks, h * 97, gradBlocks[h * 97]);
  }
  mismatches += !(worst < 5e-3);
  std::printf("largest |finite difference - gradient| %.2e\n", worst);
  std::printf(mismatches == 0 ? "the probabilities sum to 1 and the gradients match\n" : "mismatch\n");

  for (DeviceTensor* t : {&r.partial, &r.blocks, &r.proj, &r.norm, &r.hidden, &r.invNorm, &r.probs, &r.gradHidden,
                          &r.gradPartial, &r.gradBlocks, &r.gradProj, &r.gradNorm}) {
    aclDestroyTensor(t->tensor);
    aclrtFree(t->address);
  }
  aclrtDestroyStream(r.stream);
  aclrtResetDevice(0);
  aclFinalize();
  return mismatches == 0 ? 0 : 1;
}
