// Tracked memory: aclrtMalloc/Free, aclrtMallocHost/FreeHost, aclrtMemcpy(Async), aclrtMemset.
//
// Error codes (documented in the README's runtime section):
//   null pointer argument, size 0, bad policy or kind, count > destMax/maxCount, a range that overruns
//   its allocation, a device side outside device memory ........................ ACL_ERROR_INVALID_PARAM
//   the system cannot provide the memory (more than the machine has, out of memory,
//   or a failure injected by a test: runtime/fault_injection.h) ................ ACL_ERROR_RT_MEMORY_ALLOCATION
//   freeing a pointer that is not the base of a live allocation (unknown, already
//   freed, interior) ............................................................ ACL_ERROR_RT_PARAM_INVALID
//   freeing host memory with aclrtFree or device memory with aclrtFreeHost ...... ACL_ERROR_RT_INVALID_MEMORY_TYPE
#include <cstring>
#include <string>

#include "acl/acl.h"
#include "base/error.h"
#include "runtime/memory.h"
#include "runtime/registry.h"

using namespace gradkit;
using namespace gradkit::rt;

namespace {

constexpr unsigned kPolicyFlags =
    ACL_MEM_TYPE_LOW_BAND_WIDTH | ACL_MEM_TYPE_HIGH_BAND_WIDTH | ACL_MEM_ACCESS_USER_SPACE_READONLY;

/** A policy is one allocation mode (0..7) plus, optionally, one bandwidth type and the read-only flag. */
bool isValidPolicy(aclrtMemMallocPolicy policy) {
  const auto value = static_cast<unsigned>(policy);
  if ((value & kPolicyAllocationMask) > ACL_MEM_MALLOC_HUGE1G_ONLY_P2P) return false;
  const unsigned flags = value & ~kPolicyAllocationMask;
  if ((flags & ~kPolicyFlags) != 0) return false;
  const unsigned bandwidth = ACL_MEM_TYPE_LOW_BAND_WIDTH | ACL_MEM_TYPE_HIGH_BAND_WIDTH;
  return (flags & bandwidth) != bandwidth;
}

aclError allocate(const char* api, const char* arg, void** pointer, size_t size, MemoryKind kind, int policy) {
  if (pointer == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, arg, "non-null", "nullptr");
  *pointer = nullptr;
  if (size == 0) return fail(ACL_ERROR_INVALID_PARAM, api, "size", "> 0", "0");
  if (size > largestTrackedAllocation()) {
    return fail(ACL_ERROR_RT_MEMORY_ALLOCATION, api, "size",
                "at most " + std::to_string(largestTrackedAllocation()) + " bytes (the memory of this machine)",
                std::to_string(size) + " bytes (allocation failed: more than the machine has)");
  }
  void* memory = allocateTracked(size, kind, policy);
  if (memory == nullptr) {
    return fail(ACL_ERROR_RT_MEMORY_ALLOCATION, api, "size", "a size the system can allocate now",
                std::to_string(size) + " bytes (allocation failed: out of memory)");
  }
  *pointer = memory;
  return ACL_SUCCESS;
}

aclError release(const char* api, const char* arg, void* pointer, MemoryKind kind) {
  if (pointer == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, arg, "non-null", "nullptr");
  std::optional<Allocation> found;
  const char* expected = kind == MemoryKind::Device ? "the base address of live device memory from aclrtMalloc"
                                                    : "the base address of live host memory from aclrtMallocHost";
  switch (releaseTracked(pointer, kind, &found)) {
    case Release::Done:
      return ACL_SUCCESS;
    case Release::Unknown:
      return fail(ACL_ERROR_RT_PARAM_INVALID, api, arg, expected,
                  pointerString(pointer) + " (unknown or already freed)");
    case Release::Interior:
      return fail(ACL_ERROR_RT_PARAM_INVALID, api, arg, expected,
                  pointerString(pointer) + ", " +
                      std::to_string(static_cast<const unsigned char*>(pointer) - found->base) +
                      " bytes inside the allocation at " + pointerString(found->base));
    case Release::WrongKind:
      return fail(ACL_ERROR_RT_INVALID_MEMORY_TYPE, api, arg, expected,
                  pointerString(pointer) + (found->kind == MemoryKind::Host ? " (host memory: use aclrtFreeHost)"
                                                                            : " (device memory: use aclrtFree)"));
  }
  return ACL_ERROR_RT_INTERNAL_ERROR;
}

}  // namespace

extern "C" aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy policy) {
  if (devPtr != nullptr) *devPtr = nullptr;
  if (!isValidPolicy(policy)) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtMalloc", "policy",
                "an aclrtMemMallocPolicy (0..7, optionally with one bandwidth type and the read-only flag)",
                std::to_string(static_cast<unsigned>(policy)));
  }
  return allocate("aclrtMalloc", "devPtr", devPtr, size, MemoryKind::Device, static_cast<int>(policy));
}

extern "C" aclError aclrtFree(void* devPtr) { return release("aclrtFree", "devPtr", devPtr, MemoryKind::Device); }

extern "C" aclError aclrtMallocHost(void** hostPtr, size_t size) {
  return allocate("aclrtMallocHost", "hostPtr", hostPtr, size, MemoryKind::Host, 0);
}

extern "C" aclError aclrtFreeHost(void* hostPtr) {
  return release("aclrtFreeHost", "hostPtr", hostPtr, MemoryKind::Host);
}

extern "C" aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind) {
  if (aclError status = checkMemcpy("aclrtMemcpy", dst, destMax, src, count, kind); status != ACL_SUCCESS) {
    return status;
  }
  if (count > 0) std::memmove(dst, src, count);  // memmove: an overlapping D2D copy stays well-defined
  return ACL_SUCCESS;
}

extern "C" aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count) {
  if (devPtr == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemset", "devPtr", "non-null", "nullptr");
  if (count > maxCount) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemset", "count", "<= maxCount (" + std::to_string(maxCount) + ")",
                std::to_string(count));
  }
  if (count == 0) return ACL_SUCCESS;
  const auto allocation = findAllocation(devPtr);
  if (!allocation) {
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemset", "devPtr",
                "a pointer into live memory from aclrtMalloc or aclrtMallocHost",
                pointerString(devPtr) + " (not inside any live allocation)");
  }
  const size_t room = allocation->size - static_cast<size_t>(static_cast<unsigned char*>(devPtr) - allocation->base);
  if (count > room) {
    return fail(
        ACL_ERROR_INVALID_PARAM, "aclrtMemset", "count",
        "<= the " + std::to_string(room) + " bytes left in the allocation at " + pointerString(allocation->base),
        std::to_string(count));
  }
  std::memset(devPtr, static_cast<unsigned char>(value), count);
  return ACL_SUCCESS;
}
