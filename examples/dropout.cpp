// aclnnDropout, called the way a CANN program does (upstream's documented example: input [4, 2] = 0..7, p = 0.5,
// train, seed 1234, offset 0): init, device, stream, device memory, the two phases, synchronize, copy back. It
// prints out and maskOut and exits non-zero unless maskOut is the Ascend950 stateless Philox stream (first byte
// 0xa5: elements 0, 2, 5 and 7 kept) and out = kept ? 2 * input : 0. A second call with train = false must copy
// the input and leave maskOut as it was.
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_dropout.h"

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

static int initRuntime(int32_t deviceId, aclrtStream* stream) {
  aclError ret = aclInit(nullptr);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclInit failed. ERROR: %d\n", ret); return ret);
  ret = aclrtSetDevice(deviceId);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSetDevice failed. ERROR: %d\n", ret); return ret);
  ret = aclrtCreateStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtCreateStream failed. ERROR: %d\n", ret); return ret);
  return 0;
}

template <typename T>
static int createTensor(const std::vector<T>& host, const std::vector<int64_t>& shape, aclDataType dtype, void** device,
                        aclTensor** tensor) {
  const size_t bytes = host.size() * sizeof(T);
  int ret = aclrtMalloc(device, bytes, ACL_MEM_MALLOC_HUGE_FIRST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
  ret = aclrtMemcpy(*device, bytes, host.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; i--) strides[i] = shape[i + 1] * strides[i + 1];
  *tensor = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                            shape.size(), *device);
  return *tensor == nullptr ? -1 : 0;
}

// Both phases of aclnnDropout, then a wait.
static int runDropout(aclTensor* input, double p, bool train, aclTensor* out, aclTensor* maskOut, aclrtStream stream) {
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  int ret = aclnnDropoutGetWorkspaceSize(input, p, train, 1234, 0, out, maskOut, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnDropoutGetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
            return ret);
  void* workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
  }
  ret = aclnnDropout(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnDropout failed. ERROR: %d\n", ret); return ret);
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

  const std::vector<int64_t> shape = {4, 2};
  const std::vector<float> inputHost = {0, 1, 2, 3, 4, 5, 6, 7};
  void *inputDevice = nullptr, *outDevice = nullptr, *maskDevice = nullptr;
  aclTensor *input = nullptr, *out = nullptr, *maskOut = nullptr;
  ret = createTensor(inputHost, shape, ACL_FLOAT, &inputDevice, &input);
  CHECK_RET(ret == 0, return ret);
  ret = createTensor(std::vector<float>(8, -1.0f), shape, ACL_FLOAT, &outDevice, &out);
  CHECK_RET(ret == 0, return ret);
  ret = createTensor(std::vector<uint8_t>(16, 0), {16}, ACL_UINT8, &maskDevice, &maskOut);  // ceil(8/128)*16 bytes
  CHECK_RET(ret == 0, return ret);

  int wrong = 0;
  std::vector<float> result(8);
  std::vector<uint8_t> mask(16);
  // Training: the mask is drawn, kept elements are scaled by 1 / (1 - p) = 2.
  ret = runDropout(input, 0.5, true, out, maskOut, stream);
  CHECK_RET(ret == 0, return ret);
  aclrtMemcpy(result.data(), 32, outDevice, 32, ACL_MEMCPY_DEVICE_TO_HOST);
  aclrtMemcpy(mask.data(), 16, maskDevice, 16, ACL_MEMCPY_DEVICE_TO_HOST);
  LOG_PRINT("train: maskOut[0] = 0x%02x, out =", mask[0]);
  for (int i = 0; i < 8; i++) {
    const bool kept = (mask[0] >> i) & 1;
    LOG_PRINT(" %g", result[i]);
    if (result[i] != (kept ? 2.0f * inputHost[i] : 0.0f)) wrong++;
  }
  LOG_PRINT("\n");
  if (mask[0] != 0xa5) wrong++;
  for (int i = 1; i < 16; i++) wrong += mask[i] != 0;

  // Evaluation: out = input, maskOut not written.
  ret = runDropout(input, 0.5, false, out, maskOut, stream);
  CHECK_RET(ret == 0, return ret);
  std::vector<uint8_t> maskAfter(16);
  aclrtMemcpy(result.data(), 32, outDevice, 32, ACL_MEMCPY_DEVICE_TO_HOST);
  aclrtMemcpy(maskAfter.data(), 16, maskDevice, 16, ACL_MEMCPY_DEVICE_TO_HOST);
  LOG_PRINT("eval: out =");
  for (int i = 0; i < 8; i++) {
    LOG_PRINT(" %g", result[i]);
    if (result[i] != inputHost[i]) wrong++;
  }
  LOG_PRINT("\n");
  if (maskAfter != mask) wrong++;

  aclDestroyTensor(input);
  aclDestroyTensor(out);
  aclDestroyTensor(maskOut);
  aclrtFree(inputDevice);
  aclrtFree(outDevice);
  aclrtFree(maskDevice);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  LOG_PRINT("%s\n", wrong == 0 ? "dropout example: all results correct" : "dropout example: WRONG");
  return wrong == 0 ? 0 : 1;
}
