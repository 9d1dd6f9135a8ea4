#include "base/error.h"

namespace gradkit {
namespace {
thread_local std::string recentErrors;
}

void recordError(std::string_view message) {
  if (!recentErrors.empty()) recentErrors += '\n';
  recentErrors += message;
}

std::string takeRecentErrors() {
  std::string taken;
  taken.swap(recentErrors);
  return taken;
}

int fail(int code, std::string_view api, std::string_view arg, std::string_view expected, std::string_view given) {
  std::string message;
  message.reserve(api.size() + arg.size() + expected.size() + given.size() + 48);
  message.append(api).append(": argument '").append(arg).append("': expected ").append(expected);
  message.append(", given ").append(given).append(" (code ").append(std::to_string(code)).append(").");
  recordError(message);
  return code;
}

int failText(int code, std::string_view api, std::string_view text) {
  std::string message;
  message.append(api).append(": ").append(text).append(" (code ").append(std::to_string(code)).append(").");
  recordError(message);
  return code;
}

}  // namespace gradkit

extern "C" const char* aclGetRecentErrMsg(void) {
  thread_local std::string returned;
  returned = gradkit::takeRecentErrors();
  return returned.c_str();
}
