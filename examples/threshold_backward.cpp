// aclnnThresholdBackward, called the way a CANN program does: init, device, stream, device memory,
// tensors, the two phases, synchronize, copy back. Threshold 1.0 (a non-zero threshold, as upstream's
// examples use): out = gradOutput where self > 1.0, else 0. It prints the result and exits non-zero when a
// value differs from the hand-computed one.
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_threshold_backward.h"

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

static int64_t elementCount(const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

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
  return 0;
}

int main() {
  int32_t deviceId = 0;
  aclrtStream stream;
  int ret = initRuntime(deviceId, &stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

  std::vector<int64_t> shape = {2, 2};
  std::vector<float> gradOutputHost = {0.5f, -1.5f, 2.5f, -3.5f};
  std::vector<float> selfHost = {0.2f, 1.2f, 2.2f, 3.2f};
  const std::vector<float> expectedHost = {0.0f, -1.5f, 2.5f, -3.5f};  // 0.2 <= 1.0 is dropped
  std::vector<float> outHost(4, 0);
  void* gradOutputDevice = nullptr;
  void* selfDevice = nullptr;
  void* outDevice = nullptr;
  aclTensor* gradOutput = nullptr;
  aclTensor* self = nullptr;
  aclTensor* out = nullptr;
  ret = createTensor(gradOutputHost, shape, &gradOutputDevice, ACL_FLOAT, &gradOutput);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(selfHost, shape, &selfDevice, ACL_FLOAT, &self);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(outHost, shape, &outDevice, ACL_FLOAT, &out);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  float thresholdValue = 1.0f;
  aclScalar* threshold = aclCreateScalar(&thresholdValue, ACL_FLOAT);
  CHECK_RET(threshold != nullptr, return -1);

  // Phase 1: check and plan.
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnThresholdBackwardGetWorkspaceSize(gradOutput, self, threshold, out, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnThresholdBackwardGetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
            return ret);
  void* workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
  }
  // Phase 2: enqueue on the stream, then wait.
  ret = aclnnThresholdBackward(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnThresholdBackward failed. ERROR: %d\n", ret); return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

  ret = aclrtMemcpy(outHost.data(), outHost.size() * sizeof(float), outDevice, outHost.size() * sizeof(float),
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result from device to host failed. ERROR: %d\n", ret); return ret);
  int wrong = 0;
  for (size_t i = 0; i < outHost.size(); i++) {
    LOG_PRINT("result[%zu] is: %f\n", i, outHost[i]);
    if (outHost[i] != expectedHost[i]) {
      LOG_PRINT("  expected %f\n", expectedHost[i]);
      wrong++;
    }
  }

  aclDestroyTensor(gradOutput);
  aclDestroyTensor(self);
  aclDestroyTensor(out);
  aclDestroyScalar(threshold);
  aclrtFree(gradOutputDevice);
  aclrtFree(selfDevice);
  aclrtFree(outDevice);
  if (workspaceSize > 0) aclrtFree(workspaceAddr);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  LOG_PRINT("%s\n", wrong == 0 ? "threshold_backward example: all results correct" : "threshold_backward: WRONG");
  return wrong == 0 ? 0 : 1;
}
