// aclnnDropoutDoMask, called the way a CANN program does: self = [1, 2, ..., 8] as [2, 4], the packed mask byte
// 0b10110101 (elements 0, 2, 4, 5, 7 kept, LSB first), prob 0.5. The legacy arithmetic keeps 1 - prob in self's
// dtype and multiplies kept elements by its fp32 reciprocal; dropped ones become +0. It prints the result and exits
// non-zero unless it is {2, 0, 6, 0, 10, 12, 0, 16}.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnn_dropout_do_mask.h"  // without the aclnnop/ prefix, as some CANN programs write it: both forms work

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

  std::vector<int64_t> selfShape = {2, 4};
  std::vector<int64_t> maskShape = {16};  // at least ceil(8 / 128) * 16 bytes
  std::vector<float> selfHost = {1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<uint8_t> maskHost(16, 0);
  maskHost[0] = 0xB5;
  std::vector<float> outHost(8, -1.0f);
  void* selfDevice = nullptr;
  void* maskDevice = nullptr;
  void* outDevice = nullptr;
  aclTensor* self = nullptr;
  aclTensor* mask = nullptr;
  aclTensor* out = nullptr;
  ret = createTensor(selfHost, selfShape, &selfDevice, ACL_FLOAT, &self);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(maskHost, maskShape, &maskDevice, ACL_UINT8, &mask);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  ret = createTensor(outHost, selfShape, &outDevice, ACL_FLOAT, &out);
  CHECK_RET(ret == ACL_SUCCESS, return ret);
  double prob = 0.5;

  // Phase 1: check and plan.
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  ret = aclnnDropoutDoMaskGetWorkspaceSize(self, mask, prob, out, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnDropoutDoMaskGetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
            return ret);
  void* workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
  }
  // Phase 2: enqueue on the stream, then wait.
  ret = aclnnDropoutDoMask(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnDropoutDoMask failed. ERROR: %d\n", ret); return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

  ret = aclrtMemcpy(outHost.data(), outHost.size() * sizeof(float), outDevice, outHost.size() * sizeof(float),
                    ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy result from device to host failed. ERROR: %d\n", ret); return ret);
  const float expected[8] = {2, 0, 6, 0, 10, 12, 0, 16};
  int wrong = 0;
  for (size_t i = 0; i < outHost.size(); i++) {
    LOG_PRINT("result[%zu] is: %f\n", i, outHost[i]);
    if (outHost[i] != expected[i]) wrong++;
  }

  aclDestroyTensor(self);
  aclDestroyTensor(mask);
  aclDestroyTensor(out);
  aclrtFree(selfDevice);
  aclrtFree(maskDevice);
  aclrtFree(outDevice);
  if (workspaceSize > 0) aclrtFree(workspaceAddr);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  LOG_PRINT("%s\n", wrong == 0 ? "dropout_do_mask example: all results correct" : "dropout_do_mask: WRONG");
  return wrong == 0 ? 0 : 1;
}
