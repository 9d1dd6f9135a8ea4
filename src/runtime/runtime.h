// The runtime's internal interface, used by the op layer (enqueue work) and by tools (profile).
#pragma once

#include <functional>
#include <string_view>

#include "acl/acl_rt.h"

namespace gradkit::rt {

/** Work run by a stream's worker, in order; a non-zero return is kept as the stream's error. */
using Task = std::function<aclError()>;

/**
 * Enqueues `task` on `stream` (nullptr = default stream of the current context, created on demand).
 * Returns ACL_ERROR_RT_PARAM_INVALID (with a message) for an unknown or destroyed stream.
 */
aclError enqueue(aclrtStream stream, Task task);

/** The emulated SoC. */
enum class Soc { Ascend910B, Ascend910_93, Ascend950 };

/** The profile chosen by gradkitSetSoc() or GRADKIT_SOC (default Ascend950). */
Soc currentSoc();

/** "Ascend950", "Ascend910B", "Ascend910_93". */
const char* socName(Soc soc);

/** True when `api` (e.g. "aclnnDropoutV3Grad") is listed in GRADKIT_DISABLE_OPS (comma separated). */
bool isOpDisabled(std::string_view api);

}  // namespace gradkit::rt
