// aclnnDropoutGenMaskV2Tensor, called the way a CANN program does: the seed and the offset live in device tensors
// (seedTensor INT64 [1], offsetTensor INT64 [1]) and are read when the op runs, so a program (or a captured graph)
// can change them between GetWorkspaceSize and the run. Here offsetTensor holds 0 when the call is planned and 3
// when it runs; with the scalar offset 5 the Philox offset is 3 + 5 = 8, and for seed 42, p = 0.5 and a [4, 5]
// tensor the mask must be the spec's vector 2a 2d 0d 00 ... (16 bytes). Exits non-zero otherwise.
#include <cstdio>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_dropout_gen_mask.h"

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
  const std::vector<int64_t> strides = {1};
  *tensor = aclCreateTensor(shape.data(), shape.size(), dtype, strides.data(), 0, ACL_FORMAT_ND, shape.data(),
                            shape.size(), *device);
  return *tensor == nullptr ? -1 : 0;
}

int main() {
  int32_t deviceId = 0;
  aclrtStream stream;
  int ret = initRuntime(deviceId, &stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

  const std::vector<int64_t> dataShape = {4, 5};
  aclIntArray* shape = aclCreateIntArray(dataShape.data(), dataShape.size());
  CHECK_RET(shape != nullptr, return -1);
  void *seedDevice = nullptr, *offsetDevice = nullptr, *maskDevice = nullptr;
  aclTensor *seed = nullptr, *offsetTensor = nullptr, *mask = nullptr;
  ret = createTensor(std::vector<int64_t>{42}, {1}, ACL_INT64, &seedDevice, &seed);
  CHECK_RET(ret == 0, return ret);
  ret = createTensor(std::vector<int64_t>{0}, {1}, ACL_INT64, &offsetDevice, &offsetTensor);
  CHECK_RET(ret == 0, return ret);
  ret = createTensor(std::vector<uint8_t>(16, 0), {16}, ACL_UINT8, &maskDevice, &mask);
  CHECK_RET(ret == 0, return ret);

  // Phase 1: check and plan (the tensors' values are not read here).
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  const int64_t offset = 5;
  ret = aclnnDropoutGenMaskV2TensorGetWorkspaceSize(shape, 0.5, seed, offsetTensor, offset, ACL_FLOAT, mask,
                                                    &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnDropoutGenMaskV2TensorGetWorkspaceSize failed. ERROR: %d (%s)\n", ret,
                                          aclGetRecentErrMsg());
            return ret);
  // The offset tensor changes after planning: the run uses the new value.
  const int64_t newOffset = 3;
  ret = aclrtMemcpy(offsetDevice, sizeof newOffset, &newOffset, sizeof newOffset, ACL_MEMCPY_HOST_TO_DEVICE);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMemcpy failed. ERROR: %d\n", ret); return ret);
  void* workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
  }
  // Phase 2: enqueue, then wait.
  ret = aclnnDropoutGenMaskV2Tensor(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnDropoutGenMaskV2Tensor failed. ERROR: %d\n", ret); return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);

  std::vector<uint8_t> maskHost(16, 0);
  ret = aclrtMemcpy(maskHost.data(), 16, maskDevice, 16, ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy mask from device to host failed. ERROR: %d\n", ret); return ret);
  const uint8_t expected[3] = {0x2a, 0x2d, 0x0d};
  int wrong = 0;
  LOG_PRINT("offsetTensor 3 + offset 5: mask =");
  for (size_t i = 0; i < maskHost.size(); i++) {
    LOG_PRINT(" %02x", maskHost[i]);
    if (maskHost[i] != (i < 3 ? expected[i] : 0)) wrong++;
  }
  LOG_PRINT("\n");

  if (workspaceSize > 0) aclrtFree(workspaceAddr);
  aclDestroyTensor(seed);
  aclDestroyTensor(offsetTensor);
  aclDestroyTensor(mask);
  aclDestroyIntArray(shape);
  aclrtFree(seedDevice);
  aclrtFree(offsetDevice);
  aclrtFree(maskDevice);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  LOG_PRINT("%s\n", wrong == 0 ? "dropout_gen_mask_v2_tensor example: all results correct"
                               : "dropout_gen_mask_v2_tensor example: WRONG");
  return wrong == 0 ? 0 : 1;
}
