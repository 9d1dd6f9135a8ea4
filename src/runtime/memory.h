// The registry of tracked allocations (aclrtMalloc, aclrtMallocHost) and the checks of the copy calls.
#pragma once

#include <cstddef>
#include <optional>

#include "runtime/runtime.h"

namespace gradkit::rt {

/** Alignment of every tracked allocation, in bytes. */
inline constexpr size_t kMemoryAlignment = 64;

/** The bits of an aclrtMemMallocPolicy that hold its allocation mode (the rest are bandwidth and read-only flags). */
inline constexpr unsigned kPolicyAllocationMask = 0xFF;

/**
 * The usable size of an allocation of `size` bytes. Device memory is rounded as CANN's aclrtMalloc rounds it: up to
 * a multiple of 32 bytes, plus 32 (16 -> 64, 64 -> 96), so programs written for an NPU that touch those bytes work;
 * host memory (aclrtMallocHost) is not rounded.
 */
size_t usableSize(size_t size, MemoryKind kind);

/**
 * The largest request allocateTracked() passes on to the system: the memory this machine has (RAM plus swap, as
 * sysinfo reports it), at most 2^48 bytes. Anything larger can never be provided and is refused without asking
 * (under overcommit the system would hand out address space that faults when touched).
 */
size_t largestTrackedAllocation();

/** The huge page size that device memory asking for huge pages is aligned to and advised for (Linux THP, x86). */
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

/**
 * Whether an allocation is backed by huge pages where the system gives them: device memory of at least
 * kHugePageBytes whose policy (aclrtMemMallocPolicy) asks for huge pages first or only, as CANN's aclrtMalloc gives
 * them. Such a block is aligned to kHugePageBytes and advised as huge (madvise MADV_HUGEPAGE); a system without
 * transparent huge pages ignores the advice, so "only" is served like "first". Kernels that walk columns of rows
 * kilobytes apart (a token's row of x) touch a new 4 KiB page per row; with huge pages those translations stay in
 * the TLB.
 */
bool wantsHugePages(size_t size, MemoryKind kind, int policy);

/**
 * Allocates and registers `size` bytes (> 0) with usableSize() bytes behind them (huge pages as wantsHugePages
 * says); nullptr when the system cannot provide them, when `size` exceeds largestTrackedAllocation(), or when a test
 * injected the failure (FaultSite::TrackedMemory, runtime/fault_injection.h).
 */
void* allocateTracked(size_t size, MemoryKind kind, int policy);

/**
 * A tracked block that was freed lately and is still held back (the quarantine: the newest 64 freed blocks of at
 * most 64 MiB in all are not returned to the system yet, so their addresses cannot belong to anything else). A
 * pointer inside one is a use after free that gradkit can name instead of running on it; nullopt otherwise
 * (older frees are forgotten).
 */
std::optional<Allocation> findFreedAllocation(const void* pointer);

/** What releaseTracked() found. */
enum class Release { Done, Unknown, Interior, WrongKind };

/**
 * Frees (quarantines, see findFreedAllocation) the allocation whose base is `pointer` when it has `kind`. Otherwise
 * frees nothing and says why; `found` then receives the allocation that contains `pointer`, if any.
 */
Release releaseTracked(void* pointer, MemoryKind kind, std::optional<Allocation>* found);

/**
 * Validates an aclrtMemcpy / aclrtMemcpyAsync call (pointers, kind, count <= destMax, each device side
 * inside one live device allocation, each tracked host side inside its allocation). Records the message
 * and returns its code, or ACL_SUCCESS.
 */
aclError checkMemcpy(const char* api, const void* dst, size_t destMax, const void* src, size_t count,
                     aclrtMemcpyKind kind);

/** The name of a copy kind for messages, e.g. "ACL_MEMCPY_HOST_TO_DEVICE". */
const char* memcpyKindName(aclrtMemcpyKind kind);

}  // namespace gradkit::rt
