#include "base/error.h"

#include <deque>

namespace gradkit {
namespace {

// A thread that fails many calls without ever reading aclGetRecentErrMsg keeps only the newest messages: at most
// this many bytes of them (the newest message is always kept whole).
constexpr size_t kMaxKeptBytes = size_t{64} << 10;

struct RecentErrors {
  std::deque<std::string> messages;  // oldest first
  size_t bytes = 0;
  uint64_t dropped = 0;  // older messages discarded since the last take
};

thread_local RecentErrors recent;

}  // namespace

void recordError(std::string_view message) {
  recent.messages.emplace_back(message);
  recent.bytes += message.size();
  while (recent.messages.size() > 1 && recent.bytes > kMaxKeptBytes) {
    recent.bytes -= recent.messages.front().size();
    recent.messages.pop_front();
    ++recent.dropped;
  }
}

std::string takeRecentErrors() {
  std::string taken;
  if (recent.dropped > 0) {
    taken.append("(").append(std::to_string(recent.dropped)).append(" earlier messages dropped: at most ");
    taken.append(std::to_string(kMaxKeptBytes)).append(" bytes are kept)");
  }
  for (const std::string& message : recent.messages) {
    if (!taken.empty()) taken += '\n';
    taken += message;
  }
  recent = RecentErrors{};
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
