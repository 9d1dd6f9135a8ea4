// aclnnDropoutV3, called the way a CANN program does: init, device, stream, device memory, tensors, the two
// phases, synchronize, copy back. Dropout with p = 0.5 on a [2, 4] float tensor gives the output and the packed
// keep mask (8 elements -> 16 bytes). It prints both and exits non-zero unless every output is x * 2 where the
// mask keeps the element and 0 where it drops it, and the mask is the GenMaskV2 stream for seed 42, offset 0
// (first byte 0xae: elements 1, 2, 3, 5 and 7 kept).
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_dropout_v3.h"

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

  const std::vector<int64_t> shape = {2, 4};
  const std::vector<int64_t> maskShape = {16};
  std::vector<float> inputHost = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<float> outHost(8, 0);
  std::vector<uint8_t> maskHost(16, 0);
  void* inputDevice = nullptr;
  void* outDevice = nullptr;
  void* maskDevice = nullptr;
  aclTensor* input = nullptr;
  aclTensor* out = nullptr;
  aclTensor* mask = nullptr;
  ret = createTensor(inputHost, shape, &inputDevice, ACL_FLOAT, &input);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(outHost, shape, &outDevice, ACL_FLOAT, &out);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(maskHost, maskShape, &maskDevice, ACL_UINT8, &mask);
  CHECK_RET(ret == ACL_SUCCESS, return ret);

  // Phase 1: check and plan (optionalNoiseShape is reserved and must be nullptr; offset a multiple of 4).
  const double p = 0.5;
  const int64_t seed = 42;
  const int64_t offset = 0;
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnDropoutV3GetWorkspaceSize(input, nullptr, p, seed, offset, out, mask, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnDropoutV3GetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
            return ret);
  void* workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
  }
  // Phase 2: enqueue on the stream, then wait.
  ret = aclnnDropoutV3(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnDropoutV3 failed. ERROR: %d\n", ret); return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

  ret = aclrtMemcpy(outHost.data(), outHost.size() * sizeof(float), outDevice, outHost.size() * sizeof(float),
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result from device to host failed. ERROR: %d\n", ret); return ret);
  ret = aclrtMemcpy(maskHost.data(), maskHost.size(), maskDevice, maskHost.size(), ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy mask from device to host failed. ERROR: %d\n", ret); return ret);

  int wrong = 0;
  LOG_PRINT("mask:");
  for (size_t i = 0; i < maskHost.size(); i++) {
    LOG_PRINT(" %02x", maskHost[i]);
    if (maskHost[i] != (i == 0 ? 0xae : 0x00)) wrong++;
  }
  LOG_PRINT("\n");
  const float scale = 1.0f / static_cast<float>(1.0 - p);  // 2
  for (size_t i = 0; i < outHost.size(); i++) {
    const bool keep = (maskHost[i / 8] >> (i % 8)) & 1;
    const float expected = keep ? inputHost[i] * scale : 0.0f;
    LOG_PRINT("result[%zu] is: %f (%s)\n", i, outHost[i], keep ? "kept" : "dropped");
    if (outHost[i] != expected) wrong++;
  }

  aclDestroyTensor(input);
  aclDestroyTensor(out);
  aclDestroyTensor(mask);
  aclrtFree(inputDevice);
  aclrtFree(outDevice);
  aclrtFree(maskDevice);
  if (workspaceSize > 0) aclrtFree(workspaceAddr);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  LOG_PRINT("%s\n", wrong == 0 ? "dropout_v3 example: all results correct" : "dropout_v3: WRONG");
  return wrong == 0 ? 0 : 1;
}
