// gradkit: the runtime subset of CANN's acl_rt.h (devices, contexts, streams, memory, SoC name).
// On a CPU a "device" is host memory tracked by gradkit; a stream is an in-order queue run by a worker.
#ifndef GRADKIT_ACL_ACL_RT_H_
#define GRADKIT_ACL_ACL_RT_H_

#include "acl/acl_base.h"
#include "acl/error_codes/rt_error_codes.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum aclrtRunMode { ACL_DEVICE = 0, ACL_HOST = 1 } aclrtRunMode;

typedef enum aclrtMemcpyKind {
  ACL_MEMCPY_HOST_TO_HOST,
  ACL_MEMCPY_HOST_TO_DEVICE,
  ACL_MEMCPY_DEVICE_TO_HOST,
  ACL_MEMCPY_DEVICE_TO_DEVICE,
  ACL_MEMCPY_DEFAULT,
  ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE,
  ACL_MEMCPY_INNER_DEVICE_TO_DEVICE,
  ACL_MEMCPY_INTER_DEVICE_TO_DEVICE,
} aclrtMemcpyKind;

typedef enum aclrtMemMallocPolicy {
  ACL_MEM_MALLOC_HUGE_FIRST,
  ACL_MEM_MALLOC_HUGE_ONLY,
  ACL_MEM_MALLOC_NORMAL_ONLY,
  ACL_MEM_MALLOC_HUGE_FIRST_P2P,
  ACL_MEM_MALLOC_HUGE_ONLY_P2P,
  ACL_MEM_MALLOC_NORMAL_ONLY_P2P,
  ACL_MEM_MALLOC_HUGE1G_ONLY,
  ACL_MEM_MALLOC_HUGE1G_ONLY_P2P,
  ACL_MEM_TYPE_LOW_BAND_WIDTH = 0x0100,
  ACL_MEM_TYPE_HIGH_BAND_WIDTH = 0x1000,
  ACL_MEM_ACCESS_USER_SPACE_READONLY = 0x100000,
} aclrtMemMallocPolicy;

/** Selects device `deviceId` for this thread (creating its default context on first use). */
ACL_FUNC_VISIBILITY aclError aclrtSetDevice(int32_t deviceId);
/** Releases this process's use of the device: drains and destroys its streams and contexts. */
ACL_FUNC_VISIBILITY aclError aclrtResetDevice(int32_t deviceId);
/** The device selected in this thread; ACL_ERROR_RT_CONTEXT_NULL when none. */
ACL_FUNC_VISIBILITY aclError aclrtGetDevice(int32_t* deviceId);
/** Number of devices (gradkit emulates one). */
ACL_FUNC_VISIBILITY aclError aclrtGetDeviceCount(uint32_t* count);
/** Always ACL_HOST on a CPU. */
ACL_FUNC_VISIBILITY aclError aclrtGetRunMode(aclrtRunMode* runMode);

ACL_FUNC_VISIBILITY aclError aclrtCreateContext(aclrtContext* context, int32_t deviceId);
ACL_FUNC_VISIBILITY aclError aclrtDestroyContext(aclrtContext context);
ACL_FUNC_VISIBILITY aclError aclrtSetCurrentContext(aclrtContext context);
ACL_FUNC_VISIBILITY aclError aclrtGetCurrentContext(aclrtContext* context);

/** Creates an in-order stream in the current context. */
ACL_FUNC_VISIBILITY aclError aclrtCreateStream(aclrtStream* stream);
/** Drains the stream's pending work, then destroys it. */
ACL_FUNC_VISIBILITY aclError aclrtDestroyStream(aclrtStream stream);
/** Waits for all work on `stream` (nullptr = the default stream); returns the first error that work raised. */
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeStream(aclrtStream stream);
/** Waits for every stream of the current device. */
ACL_FUNC_VISIBILITY aclError aclrtSynchronizeDevice(void);

/** Allocates `size` bytes of tracked device memory. `policy` is validated and otherwise only recorded. */
ACL_FUNC_VISIBILITY aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy);
ACL_FUNC_VISIBILITY aclError aclrtFree(void* devPtr);
ACL_FUNC_VISIBILITY aclError aclrtMallocHost(void** hostPtr, size_t size);
ACL_FUNC_VISIBILITY aclError aclrtFreeHost(void* hostPtr);
/** Copies `count` bytes; fails when `count > destMax` or when a tracked range is overrun. */
ACL_FUNC_VISIBILITY aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count,
                                         aclrtMemcpyKind kind);
/** Enqueues the copy on `stream`. */
ACL_FUNC_VISIBILITY aclError aclrtMemcpyAsync(void* dst, size_t destMax, const void* src, size_t count,
                                              aclrtMemcpyKind kind, aclrtStream stream);
/** Sets `count` bytes to `value`; fails when `count > maxCount`. */
ACL_FUNC_VISIBILITY aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count);

/** The emulated SoC: "Ascend950" (default), "Ascend910B" or "Ascend910_93" (GRADKIT_SOC). */
ACL_FUNC_VISIBILITY const char* aclrtGetSocName(void);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_ACL_ACL_RT_H_
