// The runtime's internal interface, used by the op layer (enqueue work) and by tools (profile).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "acl/acl_rt.h"

namespace gradkit::rt {

/** Work run by a stream's worker, in order; a non-zero return is kept as the stream's error. */
using Task = std::function<aclError()>;

/**
 * Enqueues `task` on `stream` (nullptr = default stream of the current context, created on demand; a thread
 * that never chose a device or context uses device 0's default context). Returns ACL_ERROR_RT_PARAM_INVALID
 * (with a message naming `api`) for an unknown or destroyed stream. A task that throws becomes
 * ACL_ERROR_RT_INTERNAL_ERROR with the exception's text; the error text a failing task leaves in the worker
 * thread (gradkit::fail) is handed to the thread that calls aclrtSynchronizeStream.
 */
aclError enqueue(aclrtStream stream, Task task, const char* api = "enqueue");

/** The emulated SoC. */
enum class Soc { Ascend910B, Ascend910_93, Ascend950 };

/** The profile chosen by gradkitSetSoc() or GRADKIT_SOC (default Ascend950). */
Soc currentSoc();

/** "Ascend950", "Ascend910B", "Ascend910_93". */
const char* socName(Soc soc);

/** True when `api` (e.g. "aclnnDropoutV3Grad") is listed in GRADKIT_DISABLE_OPS (comma separated). */
bool isOpDisabled(std::string_view api);

/** Parses "Ascend950", "Ascend910B" or "Ascend910_93"; nullopt for anything else. */
std::optional<Soc> parseSoc(std::string_view name);

/** Forgets a gradkitSetSoc() choice so GRADKIT_SOC decides again (tests and tools). */
void clearSocOverride();

/** Which call made a tracked allocation. */
enum class MemoryKind { Device, Host };  // aclrtMalloc, aclrtMallocHost

/** One live tracked allocation. */
struct Allocation {
  const unsigned char* base = nullptr;
  size_t size = 0;       // usable bytes (what copies and tensors may touch)
  size_t requested = 0;  // bytes asked for; device memory is rounded up from it (usableSize)
  MemoryKind kind = MemoryKind::Device;
  int policy = 0;  // aclrtMemMallocPolicy as given (device memory only)
};

/** The live allocation that contains `pointer` (base <= pointer < base + size), if any. */
std::optional<Allocation> findAllocation(const void* pointer);

}  // namespace gradkit::rt
