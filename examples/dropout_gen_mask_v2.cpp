// aclnnDropoutGenMaskV2, called the way a CANN program does: init, device, stream, device memory, the two
// phases, synchronize, copy back. It generates the packed keep mask of a [4, 5] tensor (20 elements -> 16 bytes,
// element i in byte i / 8, bit i % 8, 1 = keep) for p = 0.5, seed 42, offsets 0 and 8, prints it, and exits
// non-zero unless it equals the Ascend950 stateless Philox stream (spec dropout_threshold.md 1.2.2).
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

// Runs GenMaskV2 into `maskDevice` (described by `mask`) and copies the bytes back into `maskHost`.
static int generateMask(const aclIntArray* shape, double prob, int64_t seed, int64_t offset, aclTensor* mask,
                        void* maskDevice, std::vector<uint8_t>& maskHost, aclrtStream stream) {
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  // Phase 1: check and plan. probDataType only matters on A2/A3 hardware.
  int ret =
      aclnnDropoutGenMaskV2GetWorkspaceSize(shape, prob, seed, offset, ACL_FLOAT, mask, &workspaceSize, &executor);
  CHECK_RET(ret == ACL_SUCCESS,
            LOG_PRINT("aclnnDropoutGenMaskV2GetWorkspaceSize failed. ERROR: %d (%s)\n", ret, aclGetRecentErrMsg());
            return ret);
  void* workspaceAddr = nullptr;
  if (workspaceSize > 0) {
    ret = aclrtMalloc(&workspaceAddr, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("allocate workspace failed. ERROR: %d\n", ret); return ret);
  }
  // Phase 2: enqueue on the stream, then wait.
  ret = aclnnDropoutGenMaskV2(workspaceAddr, workspaceSize, executor, stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclnnDropoutGenMaskV2 failed. ERROR: %d\n", ret); return ret);
  ret = aclrtSynchronizeStream(stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtSynchronizeStream failed. ERROR: %d\n", ret); return ret);
  if (workspaceSize > 0) aclrtFree(workspaceAddr);
  ret = aclrtMemcpy(maskHost.data(), maskHost.size(), maskDevice, maskHost.size(), ACL_MEMCPY_DEVICE_TO_HOST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("copy mask from device to host failed. ERROR: %d\n", ret); return ret);
  return 0;
}

int main() {
  int32_t deviceId = 0;
  aclrtStream stream;
  int ret = initRuntime(deviceId, &stream);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("Init acl failed. ERROR: %d\n", ret); return ret);

  // The data tensor's shape (20 elements) and its mask: ceil(20 / 128) * 16 = 16 bytes.
  const std::vector<int64_t> dataShape = {4, 5};
  const std::vector<int64_t> maskShape = {16};
  aclIntArray* shape = aclCreateIntArray(dataShape.data(), dataShape.size());
  CHECK_RET(shape != nullptr, return -1);
  void* maskDevice = nullptr;
  ret = aclrtMalloc(&maskDevice, 16, ACL_MEM_MALLOC_HUGE_FIRST);
  CHECK_RET(ret == ACL_SUCCESS, LOG_PRINT("aclrtMalloc failed. ERROR: %d\n", ret); return ret);
  const std::vector<int64_t> strides = {1};
  aclTensor* mask = aclCreateTensor(maskShape.data(), maskShape.size(), ACL_UINT8, strides.data(), 0, ACL_FORMAT_ND,
                                    maskShape.data(), maskShape.size(), maskDevice);
  CHECK_RET(mask != nullptr, return -1);

  // The expected leading bytes (the rest is 0): offset selects the upper 64 counter bits.
  struct Case {
    int64_t offset;
    uint8_t expected[3];
  } cases[] = {{0, {0xae, 0x80, 0x0d}}, {8, {0x2a, 0x2d, 0x0d}}};
  int wrong = 0;
  for (const Case& item : cases) {
    std::vector<uint8_t> maskHost(16, 0);
    ret = generateMask(shape, 0.5, 42, item.offset, mask, maskDevice, maskHost, stream);
    CHECK_RET(ret == ACL_SUCCESS, return ret);
    LOG_PRINT("offset %lld: mask =", static_cast<long long>(item.offset));
    for (size_t i = 0; i < maskHost.size(); i++) {
      LOG_PRINT(" %02x", maskHost[i]);
      const uint8_t expected = i < 3 ? item.expected[i] : 0;
      if (maskHost[i] != expected) wrong++;
    }
    LOG_PRINT("\n");
  }

  aclDestroyTensor(mask);
  aclDestroyIntArray(shape);
  aclrtFree(maskDevice);
  aclrtDestroyStream(stream);
  aclrtResetDevice(deviceId);
  aclFinalize();
  LOG_PRINT("%s\n", wrong == 0 ? "dropout_gen_mask_v2 example: all results correct" : "dropout_gen_mask_v2: WRONG");
  return wrong == 0 ? 0 : 1;
}
