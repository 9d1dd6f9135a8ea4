// Devices and contexts: one emulated device (id 0); a context is a group of streams bound to threads.
#include <string>

#include "acl/acl.h"
#include "base/error.h"
#include "runtime/registry.h"

using namespace gradkit;
using namespace gradkit::rt;

namespace {

/** Records the message for a device id other than 0. */
aclError invalidDevice(const char* api, int32_t deviceId) {
  return fail(ACL_ERROR_RT_INVALID_DEVICEID, api, "deviceId", "0 (gradkit emulates one device)",
              std::to_string(deviceId));
}

aclError unknownContext(const char* api, aclrtContext context) {
  return fail(ACL_ERROR_RT_PARAM_INVALID, api, "context", "a live context handle",
              pointerString(context) + " (unknown or destroyed)");
}

aclError calledFromTask(const char* api) {
  return failText(ACL_ERROR_RT_PARAM_INVALID, api, "called from a stream task; it would wait for its own stream");
}

}  // namespace

extern "C" aclError aclrtSetDevice(int32_t deviceId) {
  if (deviceId < 0 || deviceId >= kDeviceCount) return invalidDevice("aclrtSetDevice", deviceId);
  bindContext(registry().defaultContext(deviceId));
  return ACL_SUCCESS;
}

extern "C" aclError aclrtResetDevice(int32_t deviceId) {
  if (deviceId < 0 || deviceId >= kDeviceCount) return invalidDevice("aclrtResetDevice", deviceId);
  if (Stream::onAnyWorkerThread()) return calledFromTask("aclrtResetDevice");
  closeStreams(registry().removeDevice(deviceId));
  if (!boundContext()) bindContext(0);
  return ACL_SUCCESS;
}

extern "C" aclError aclrtGetDevice(int32_t* deviceId) {
  if (deviceId == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDevice", "deviceId", "non-null", "nullptr");
  const auto bound = boundContext();
  const auto device = bound ? registry().contextDevice(*bound) : std::nullopt;
  if (!device) {
    return failText(ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetDevice",
                    "no device is set in this thread (call aclrtSetDevice or aclrtSetCurrentContext)");
  }
  *deviceId = *device;
  return ACL_SUCCESS;
}

extern "C" aclError aclrtGetDeviceCount(uint32_t* count) {
  if (count == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount", "count", "non-null", "nullptr");
  *count = static_cast<uint32_t>(kDeviceCount);
  return ACL_SUCCESS;
}

extern "C" aclError aclrtGetRunMode(aclrtRunMode* runMode) {
  if (runMode == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtGetRunMode", "runMode", "non-null", "nullptr");
  *runMode = ACL_HOST;
  return ACL_SUCCESS;
}

extern "C" aclError aclrtCreateContext(aclrtContext* context, int32_t deviceId) {
  if (context == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtCreateContext", "context", "non-null", "nullptr");
  if (deviceId < 0 || deviceId >= kDeviceCount) return invalidDevice("aclrtCreateContext", deviceId);
  const uint64_t id = registry().createContext(deviceId);
  bindContext(id);  // as upstream: the new context becomes this thread's current one
  *context = handleOf(id);
  return ACL_SUCCESS;
}

extern "C" aclError aclrtDestroyContext(aclrtContext context) {
  if (context == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtDestroyContext", "context", "non-null", "nullptr");
  const uint64_t id = idOf(context);
  if (!registry().contextDevice(id)) return unknownContext("aclrtDestroyContext", context);
  if (registry().isDefaultContext(id)) {
    return fail(ACL_ERROR_RT_PARAM_INVALID, "aclrtDestroyContext", "context", "a context made by aclrtCreateContext",
                "the default context of a device (released by aclrtResetDevice)");
  }
  if (Stream::onAnyWorkerThread()) return calledFromTask("aclrtDestroyContext");
  closeStreams(registry().removeContext(id));
  if (!boundContext()) bindContext(0);
  return ACL_SUCCESS;
}

extern "C" aclError aclrtSetCurrentContext(aclrtContext context) {
  if (context == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtSetCurrentContext", "context", "non-null", "nullptr");
  }
  if (!registry().contextDevice(idOf(context))) return unknownContext("aclrtSetCurrentContext", context);
  bindContext(idOf(context));
  return ACL_SUCCESS;
}

extern "C" aclError aclrtGetCurrentContext(aclrtContext* context) {
  if (context == nullptr) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtGetCurrentContext", "context", "non-null", "nullptr");
  }
  const auto bound = boundContext();
  if (!bound) {
    return failText(ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetCurrentContext",
                    "no context is current in this thread (call aclrtSetDevice or aclrtSetCurrentContext)");
  }
  *context = handleOf(*bound);
  return ACL_SUCCESS;
}
