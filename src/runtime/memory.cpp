#include "runtime/memory.h"

#include <sys/mman.h>
#include <sys/sysinfo.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <new>
#include <string>

#include "base/error.h"
#include "runtime/fault_injection.h"
#include "runtime/registry.h"

namespace gradkit::rt {
namespace {

// Requests above this are refused without asking the system (no machine has 2^48 bytes to give).
constexpr size_t kLargestAllocation = size_t{1} << 48;

// The quarantine of freed blocks (findFreedAllocation): at most this many, of at most this many bytes in all.
constexpr size_t kQuarantineBlocks = 64;
constexpr size_t kQuarantineBytes = size_t{64} << 20;

struct MemoryTable {
  std::mutex mutex;
  std::map<uintptr_t, Allocation> byBase;  // ordered: the containing allocation is found by upper_bound
  std::deque<Allocation> freed;            // the quarantine, oldest first
  size_t freedBytes = 0;
};

MemoryTable& table() {
  static MemoryTable* const instance = new MemoryTable();  // never deleted: outlives static destruction
  return *instance;
}

uintptr_t address(const void* pointer) { return reinterpret_cast<uintptr_t>(pointer); }

bool contains(const Allocation& allocation, const void* pointer) {
  return address(pointer) - address(allocation.base) < allocation.size;
}

std::optional<Allocation> findLocked(MemoryTable& memory, const void* pointer) {
  auto next = memory.byBase.upper_bound(address(pointer));
  if (next == memory.byBase.begin()) return std::nullopt;
  const Allocation& candidate = std::prev(next)->second;
  if (!contains(candidate, pointer)) return std::nullopt;
  return candidate;
}

const char* kindName(MemoryKind kind) {
  return kind == MemoryKind::Device ? "device memory (aclrtMalloc)" : "host memory (aclrtMallocHost)";
}

std::string describeAllocation(const Allocation& allocation) {
  std::string text =
      std::to_string(allocation.size) + "-byte " + kindName(allocation.kind) + " at " + pointerString(allocation.base);
  if (allocation.requested != allocation.size) {
    text += " (" + std::to_string(allocation.requested) + " bytes requested, rounded up as CANN does)";
  }
  return text;
}

/** Checks one side of a copy. `deviceKind`: the copy kind that says this side is device memory, or null. */
aclError checkSide(const char* api, const char* arg, const void* pointer, size_t count, const char* deviceKind) {
  const auto allocation = findAllocation(pointer);
  const auto expectedDevice = [&] {
    return std::string("a pointer into live device memory (aclrtMalloc), as ") + deviceKind + " requires";
  };
  if (!allocation) {
    if (const auto freed = findFreedAllocation(pointer)) {
      return fail(ACL_ERROR_INVALID_PARAM, api, arg, "a pointer into live memory",
                  pointerString(pointer) + " (inside the freed " + describeAllocation(*freed) + ")");
    }
    if (deviceKind == nullptr) return ACL_SUCCESS;  // untracked host memory: the caller vouches for it
    return fail(ACL_ERROR_INVALID_PARAM, api, arg, expectedDevice(),
                pointerString(pointer) + " (not inside any live allocation)");
  }
  if (deviceKind != nullptr && allocation->kind != MemoryKind::Device) {
    return fail(ACL_ERROR_INVALID_PARAM, api, arg, expectedDevice(),
                pointerString(pointer) + " inside the " + describeAllocation(*allocation));
  }
  const size_t room = allocation->size - (address(pointer) - address(allocation->base));
  if (count > room) {
    return fail(ACL_ERROR_INVALID_PARAM, api, arg,
                "a range inside one allocation (" + std::to_string(room) + " bytes left from " +
                    pointerString(pointer) + " in the " + describeAllocation(*allocation) + ")",
                std::to_string(count) + " bytes, which run " + std::to_string(count - room) + " bytes past its end");
  }
  return ACL_SUCCESS;
}

}  // namespace

size_t usableSize(size_t size, MemoryKind kind) {
  constexpr size_t kDeviceGranule = 32;
  if (kind == MemoryKind::Host) return size;
  return (size + kDeviceGranule - 1) / kDeviceGranule * kDeviceGranule + kDeviceGranule;
}

size_t largestTrackedAllocation() {
  static const size_t largest = [] {
    struct sysinfo info {};
    if (sysinfo(&info) != 0) return kLargestAllocation;
    const uint64_t unit = std::max<uint64_t>(info.mem_unit, 1);
    uint64_t machine = 0;
    if (__builtin_add_overflow(uint64_t{info.totalram}, uint64_t{info.totalswap}, &machine) ||
        __builtin_mul_overflow(machine, unit, &machine)) {
      return kLargestAllocation;
    }
    return std::min<size_t>(machine, kLargestAllocation);
  }();
  return largest;
}

bool wantsHugePages(size_t size, MemoryKind kind, int policy) {
  if (kind != MemoryKind::Device || size < kHugePageBytes) return false;
  switch (static_cast<unsigned>(policy) & kPolicyAllocationMask) {
    case ACL_MEM_MALLOC_HUGE_FIRST:
    case ACL_MEM_MALLOC_HUGE_ONLY:
    case ACL_MEM_MALLOC_HUGE_FIRST_P2P:
    case ACL_MEM_MALLOC_HUGE_ONLY_P2P:
    case ACL_MEM_MALLOC_HUGE1G_ONLY:
    case ACL_MEM_MALLOC_HUGE1G_ONLY_P2P:
      return true;
    default:
      return false;
  }
}

void* allocateTracked(size_t size, MemoryKind kind, int policy) {
  if (size == 0 || size > largestTrackedAllocation()) return nullptr;
  if (allocationFailureInjected(FaultSite::TrackedMemory)) return nullptr;
  const size_t usable = usableSize(size, kind);
  const bool huge = wantsHugePages(usable, kind, policy);
  const size_t alignment = huge ? kHugePageBytes : kMemoryAlignment;
  const size_t rounded = (usable + alignment - 1) / alignment * alignment;
  void* memory = std::aligned_alloc(alignment, rounded);
  if (memory == nullptr) return nullptr;
#ifdef MADV_HUGEPAGE
  if (huge) madvise(memory, rounded, MADV_HUGEPAGE);  // advice only: without huge pages the block still works
#endif
  try {
    MemoryTable& memoryTable = table();
    std::lock_guard<std::mutex> lock(memoryTable.mutex);
    memoryTable.byBase[address(memory)] = Allocation{static_cast<unsigned char*>(memory), usable, size, kind, policy};
  } catch (const std::bad_alloc&) {
    std::free(memory);
    return nullptr;
  }
  return memory;
}

Release releaseTracked(void* pointer, MemoryKind kind, std::optional<Allocation>* found) {
  MemoryTable& memoryTable = table();
  std::lock_guard<std::mutex> lock(memoryTable.mutex);
  auto entry = memoryTable.byBase.find(address(pointer));
  if (entry == memoryTable.byBase.end()) {
    *found = findLocked(memoryTable, pointer);
    return *found ? Release::Interior : Release::Unknown;
  }
  if (entry->second.kind != kind) {
    *found = entry->second;
    return Release::WrongKind;
  }
  const Allocation freed = entry->second;
  memoryTable.byBase.erase(entry);
  // Held back for a while (findFreedAllocation) so that a use after free can be named, not run.
  bool quarantined = false;
  if (freed.size <= kQuarantineBytes) {
    try {
      memoryTable.freed.push_back(freed);
      memoryTable.freedBytes += freed.size;
      quarantined = true;
    } catch (const std::bad_alloc&) {  // no room to remember it: it is freed at once
    }
  }
  if (!quarantined) std::free(pointer);
  while (memoryTable.freed.size() > kQuarantineBlocks || memoryTable.freedBytes > kQuarantineBytes) {
    std::free(const_cast<unsigned char*>(memoryTable.freed.front().base));
    memoryTable.freedBytes -= memoryTable.freed.front().size;
    memoryTable.freed.pop_front();
  }
  return Release::Done;
}

std::optional<Allocation> findFreedAllocation(const void* pointer) {
  MemoryTable& memoryTable = table();
  std::lock_guard<std::mutex> lock(memoryTable.mutex);
  for (const Allocation& freed : memoryTable.freed) {
    if (contains(freed, pointer)) return freed;
  }
  return std::nullopt;
}

std::optional<Allocation> findAllocation(const void* pointer) {
  MemoryTable& memoryTable = table();
  std::lock_guard<std::mutex> lock(memoryTable.mutex);
  return findLocked(memoryTable, pointer);
}

const char* memcpyKindName(aclrtMemcpyKind kind) {
  switch (kind) {
    case ACL_MEMCPY_HOST_TO_HOST:
      return "ACL_MEMCPY_HOST_TO_HOST";
    case ACL_MEMCPY_HOST_TO_DEVICE:
      return "ACL_MEMCPY_HOST_TO_DEVICE";
    case ACL_MEMCPY_DEVICE_TO_HOST:
      return "ACL_MEMCPY_DEVICE_TO_HOST";
    case ACL_MEMCPY_DEVICE_TO_DEVICE:
      return "ACL_MEMCPY_DEVICE_TO_DEVICE";
    case ACL_MEMCPY_DEFAULT:
      return "ACL_MEMCPY_DEFAULT";
    case ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE:
      return "ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE";
    case ACL_MEMCPY_INNER_DEVICE_TO_DEVICE:
      return "ACL_MEMCPY_INNER_DEVICE_TO_DEVICE";
    case ACL_MEMCPY_INTER_DEVICE_TO_DEVICE:
      return "ACL_MEMCPY_INTER_DEVICE_TO_DEVICE";
  }
  return "unknown";
}

aclError checkMemcpy(const char* api, const void* dst, size_t destMax, const void* src, size_t count,
                     aclrtMemcpyKind kind) {
  if (dst == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "dst", "non-null", "nullptr");
  if (src == nullptr) return fail(ACL_ERROR_INVALID_PARAM, api, "src", "non-null", "nullptr");
  const int kindValue = static_cast<int>(kind);
  if (kindValue < ACL_MEMCPY_HOST_TO_HOST || kindValue > ACL_MEMCPY_INTER_DEVICE_TO_DEVICE) {
    return fail(ACL_ERROR_INVALID_PARAM, api, "kind", "an aclrtMemcpyKind (0..7)", std::to_string(kindValue));
  }
  if (count > destMax) {
    return fail(ACL_ERROR_INVALID_PARAM, api, "count", "<= destMax (" + std::to_string(destMax) + ")",
                std::to_string(count));
  }
  if (count == 0) return ACL_SUCCESS;
  bool dstOnDevice = false;
  bool srcOnDevice = false;
  switch (kind) {
    case ACL_MEMCPY_HOST_TO_DEVICE:
    case ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE:
      dstOnDevice = true;
      break;
    case ACL_MEMCPY_DEVICE_TO_HOST:
      srcOnDevice = true;
      break;
    case ACL_MEMCPY_DEVICE_TO_DEVICE:
    case ACL_MEMCPY_INNER_DEVICE_TO_DEVICE:
    case ACL_MEMCPY_INTER_DEVICE_TO_DEVICE:
      dstOnDevice = srcOnDevice = true;
      break;
    case ACL_MEMCPY_HOST_TO_HOST:
    case ACL_MEMCPY_DEFAULT:  // each side is whatever the registry says: tracked sides are bounds-checked
      break;
  }
  // The destination's room is what destMax promises; the registry's bound is checked on top of it.
  const char* name = memcpyKindName(kind);
  if (aclError status = checkSide(api, "dst", dst, count, dstOnDevice ? name : nullptr); status != ACL_SUCCESS) {
    return status;
  }
  return checkSide(api, "src", src, count, srcOnDevice ? name : nullptr);
}

}  // namespace gradkit::rt
