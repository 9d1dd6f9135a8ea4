// aclnnMhcPost and aclnnMhcPostBackward, called the way a CANN program does: init, device, stream, device memory,
// tensors, the two phases, synchronize, copy back. BSND layout, B = 2, S = 64, N = 4 streams, D = 256, BF16 x and
// hOut: the forward merges the sub-layer's output into the streams (out = hRes^T x + hOut (x) hPost), the backward
// takes a gradient of out and returns the four input gradients. It prints a few values and checks three tokens
// against a double-precision evaluation of the formulas written out below; it exits non-zero on a mismatch.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_mhc_post.h"
#include "aclnnop/aclnn_mhc_post_backward.h"

#define CHECK_RET(cond, ...) \
  do {                       \
    if (!(cond)) {           \
      __VA_ARGS__;           \
    }                        \
  } while (0)

static constexpr int64_t kB = 2, kS = 64, kN = 4, kD = 256;
static constexpr int64_t kT = kB * kS;

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

// One device buffer and the contiguous ND tensor over it.
struct DeviceTensor {
  void* address = nullptr;
  aclTensor* tensor = nullptr;
  size_t bytes = 0;
};

template <typename T>
static int createTensor(const std::vector<T>& host, const std::vector<int64_t>& shape, aclDataType dtype,
                        DeviceTensor* out) {
  out->bytes = host.size() * sizeof(T);
  aclError ret = aclrtMalloc(&out->address, out->bytes, ACL_MEM_MALLOC_HUGE_FIRST);
  CHECK_RET(ret == ACL_SUCCESS, std::printf("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
  ret = aclrtMemcpy(out->address, out->bytes, host.data(), out->bytes, ACL_MEMCPY_HOST_TO_DEVICE);
  CHECK_RET(ret == ACL_SUCCESS, std::printf("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
  out->tensor = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                                shape.size(), out->address);
  CHECK_RET(out->tensor != nullptr, std::printf("aclCreateTensor failed: %s\n", aclGetRecentErrMsg()); return -1);
  return 0;
}

template <typename T>
static int copyBack(std::vector<T>& host, const DeviceTensor& device) {
  const aclError ret =
      aclrtMemcpy(host.data(), host.size() * sizeof(T), device.address, device.bytes, ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, std::printf("copy from device failed. ERROR: %d\n", ret); return ret);
  return 0;
}

// Runs a planned executor with a workspace of the size the first phase asked for.
static int runPlanned(aclnnStatus planned, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream,
                      aclnnStatus (*run)(void*, uint64_t, aclOpExecutor*, aclrtStream), const char* name) {
  CHECK_RET(planned == ACL_SUCCESS, std::printf("%sGetWorkspaceSize failed: %s\n", name, aclGetRecentErrMsg());
            return planned);
  void* workspace = nullptr;
  if (workspaceSize > 0) aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
  aclnnStatus ret = run(workspace, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, std::printf("%s failed: %s\n", name, aclGetRecentErrMsg()); return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, std::printf("aclrtSynchronizeStream failed: %s\n", aclGetRecentErrMsg()); return ret);
  if (workspace != nullptr) aclrtFree(workspace);
  return 0;
}

// |got - expected| within one bf16 ulp of expected (plus a hair for fp32 sums).
static bool nearBf16(double got, double expected) {
  const double ulp = std::ldexp(1.0, std::ilogb(std::fmax(std::fabs(expected), 1e-30)) - 7);
  return std::fabs(got - expected) <= ulp * 1.01;
}

int main() {
  aclInit(nullptr);
  aclrtSetDevice(0);
  aclrtStream stream = nullptr;
  aclrtCreateStream(&stream);

  Lcg rng{2026};
  std::vector<uint16_t> x(kT * kN * kD), hOut(kT * kD), grad(kT * kN * kD);
  std::vector<float> hRes(kT * kN * kN), hPost(kT * kN);
  for (auto& v : x) v = floatToBf16(static_cast<float>(rng.uniform(-2, 2)));
  for (auto& v : hOut) v = floatToBf16(static_cast<float>(rng.uniform(-1, 1)));
  for (auto& v : grad) v = floatToBf16(static_cast<float>(rng.uniform(-1, 1)));
  for (auto& v : hRes) v = static_cast<float>(rng.uniform(0, 0.5));  // a Sinkhorn output would sum to 1 per row
  for (auto& v : hPost) v = static_cast<float>(rng.uniform(0, 2));

  const std::vector<int64_t> streams = {kB, kS, kN, kD}, square = {kB, kS, kN, kN}, hidden = {kB, kS, kD},
                             weights = {kB, kS, kN};
  DeviceTensor dx, dhRes, dhOut, dhPost, dout, dgrad, dgradX, dgradHRes, dgradHOut, dgradHPost;
  std::vector<uint16_t> out(x.size()), gradX(x.size()), gradHOut(hOut.size());
  std::vector<float> gradHRes(hRes.size()), gradHPost(hPost.size());
  if (createTensor(x, streams, ACL_BF16, &dx) || createTensor(hRes, square, ACL_FLOAT, &dhRes) ||
      createTensor(hOut, hidden, ACL_BF16, &dhOut) || createTensor(hPost, weights, ACL_FLOAT, &dhPost) ||
      createTensor(out, streams, ACL_BF16, &dout) || createTensor(grad, streams, ACL_BF16, &dgrad) ||
      createTensor(gradX, streams, ACL_BF16, &dgradX) || createTensor(gradHRes, square, ACL_FLOAT, &dgradHRes) ||
      createTensor(gradHOut, hidden, ACL_BF16, &dgradHOut) ||
      createTensor(gradHPost, weights, ACL_FLOAT, &dgradHPost)) {
    return 1;
  }

  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus planned = aclnnMhcPostGetWorkspaceSize(dx.tensor, dhRes.tensor, dhOut.tensor, dhPost.tensor, dout.tensor,
                                                     &workspaceSize, &executor);
  if (runPlanned(planned, workspaceSize, executor, stream, aclnnMhcPost, "aclnnMhcPost") != 0) return 1;
  planned = aclnnMhcPostBackwardGetWorkspaceSize(dgrad.tensor, dx.tensor, dhRes.tensor, dhOut.tensor, dhPost.tensor,
                                                 dgradX.tensor, dgradHRes.tensor, dgradHOut.tensor, dgradHPost.tensor,
                                                 &workspaceSize, &executor);
  if (runPlanned(planned, workspaceSize, executor, stream, aclnnMhcPostBackward, "aclnnMhcPostBackward") != 0) {
    return 1;
  }
  if (copyBack(out, dout) || copyBack(gradX, dgradX) || copyBack(gradHRes, dgradHRes) ||
      copyBack(gradHOut, dgradHOut) || copyBack(gradHPost, dgradHPost)) {
    return 1;
  }
  std::printf("out[0, 0, 0, 0..3]: %f %f %f %f\n", bf16ToFloat(out[0]), bf16ToFloat(out[1]), bf16ToFloat(out[2]),
              bf16ToFloat(out[3]));
  std::printf("gradHRes[0, 0, 0, :]: %f %f %f %f\n", gradHRes[0], gradHRes[1], gradHRes[2], gradHRes[3]);

  // Three tokens in double precision: out[j] = hPost[j] hOut + sum_i hRes[i][j] x[i]; gradX[i] = sum_j hRes[i][j]
  // g[j]; gradHOut = sum_j hPost[j] g[j]; gradHRes[i][j] = x[i] . g[j]; gradHPost[j] = g[j] . hOut.
  int mismatches = 0;
  for (int64_t t : {int64_t{0}, kT / 2, kT - 1}) {
    const auto at = [t](const std::vector<uint16_t>& v, int64_t i, int64_t d) {
      return bf16ToFloat(v[(t * kN + i) * kD + d]);
    };
    for (int64_t d = 0; d < kD; ++d) {
      double gradHOutRef = 0;
      for (int64_t j = 0; j < kN; ++j) {
        double outRef = hPost[t * kN + j] * static_cast<double>(bf16ToFloat(hOut[t * kD + d]));
        double gradXRef = 0;
        for (int64_t i = 0; i < kN; ++i) {
          outRef += hRes[(t * kN + i) * kN + j] * static_cast<double>(at(x, i, d));
          gradXRef += hRes[(t * kN + j) * kN + i] * static_cast<double>(at(grad, i, d));
        }
        gradHOutRef += hPost[t * kN + j] * static_cast<double>(at(grad, j, d));
        mismatches += !nearBf16(at(out, j, d), outRef);
        mismatches += !nearBf16(at(gradX, j, d), gradXRef);
      }
      mismatches += !nearBf16(bf16ToFloat(gradHOut[t * kD + d]), gradHOutRef);
    }
    for (int64_t i = 0; i < kN; ++i) {
      double postRef = 0;
      for (int64_t j = 0; j < kN; ++j) {
        double dot = 0;
        for (int64_t d = 0; d < kD; ++d) dot += static_cast<double>(at(x, i, d)) * at(grad, j, d);
        mismatches += std::fabs(gradHRes[(t * kN + i) * kN + j] - dot) > 1e-5 * (1 + std::fabs(dot));
      }
      for (int64_t d = 0; d < kD; ++d) postRef += static_cast<double>(at(grad, i, d)) * bf16ToFloat(hOut[t * kD + d]);
      mismatches += std::fabs(gradHPost[t * kN + i] - postRef) > 1e-5 * (1 + std::fabs(postRef));
    }
  }
  if (mismatches == 0) {
    std::printf("three tokens match the double-precision formulas\n");
  } else {
    std::printf("%d mismatches against the double-precision formulas\n", mismatches);
  }

  for (DeviceTensor* t : {&dx, &dhRes, &dhOut, &dhPost, &dout, &dgrad, &dgradX, &dgradHRes, &dgradHOut, &dgradHPost}) {
    aclDestroyTensor(t->tensor);
    aclrtFree(t->address);
  }
  aclrtDestroyStream(stream);
  aclrtResetDevice(0);
  aclFinalize();
  return mismatches == 0 ? 0 : 1;
}
