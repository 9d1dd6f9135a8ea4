// aclInit / aclFinalize and the one choice that must precede them (gradkitSetSoc).
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>

#include "acl/acl.h"
#include "base/error.h"
#include "gradkit/gradkit.h"
#include "runtime/profile.h"
#include "runtime/registry.h"

namespace gradkit::rt {
namespace {

std::mutex initMutex;
bool initialized = false;  // guarded by initMutex

bool isReadableFile(const char* path) {
  std::error_code error;
  if (!std::filesystem::is_regular_file(path, error)) return false;
  std::ifstream file(path, std::ios::binary);
  return file.good();
}

/** `text` in double quotes, for messages. */
std::string inQuotes(std::string_view text) {
  std::string result;
  result.reserve(text.size() + 2);
  result += '"';
  result += text;
  result += '"';
  return result;
}

}  // namespace
}  // namespace gradkit::rt

using namespace gradkit;
using namespace gradkit::rt;

extern "C" aclError aclInit(const char* configPath) {
  std::lock_guard<std::mutex> lock(initMutex);
  if (initialized)
    return failText(ACL_ERROR_REPEAT_INITIALIZE, "aclInit", "already initialised; call aclFinalize first");
  // The configuration's content (dump and profiling switches upstream) has no effect on a CPU.
  if (configPath != nullptr && !isReadableFile(configPath)) {
    return fail(ACL_ERROR_INVALID_FILE, "aclInit", "configPath", "nullptr or the path of a readable file",
                inQuotes(configPath) + " (missing, not a regular file, or unreadable)");
  }
  std::string given;
  if (!hasSocOverride() && !socFromEnvironment(&given)) {  // a gradkitSetSoc() choice makes GRADKIT_SOC moot
    return fail(ACL_ERROR_INVALID_PARAM, "aclInit", std::string("environment variable ") + kSocVariable, kSocChoices,
                inQuotes(given) + " (falling back to Ascend950)");
  }
  initialized = true;
  return ACL_SUCCESS;
}

extern "C" aclError aclFinalize(void) {
  std::unique_lock<std::mutex> lock(initMutex);
  if (!initialized) return failText(ACL_ERROR_REPEAT_FINALIZE, "aclFinalize", "not initialised (no aclInit before)");
  if (Stream::onAnyWorkerThread()) {
    return failText(ACL_ERROR_RT_PARAM_INVALID, "aclFinalize",
                    "called from a stream task; it would wait for its own stream");
  }
  initialized = false;
  lock.unlock();
  closeStreams(registry().removeAll());
  bindContext(0);
  return ACL_SUCCESS;
}

extern "C" aclError gradkitSetSoc(const char* socName) {
  std::lock_guard<std::mutex> lock(initMutex);
  if (initialized) {
    return failText(ACL_ERROR_REPEAT_INITIALIZE, "gradkitSetSoc", "the SoC must be chosen before aclInit");
  }
  if (socName == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "gradkitSetSoc", "socName", kSocChoices, "nullptr");
  const auto soc = parseSoc(socName);
  if (!soc) return fail(ACL_ERROR_INVALID_PARAM, "gradkitSetSoc", "socName", kSocChoices, inQuotes(socName));
  setSocOverride(*soc);
  return ACL_SUCCESS;
}
