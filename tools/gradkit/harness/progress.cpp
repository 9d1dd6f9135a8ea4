#include "harness/progress.h"

#include <unistd.h>

#include <cstdio>

namespace gradkit::cli {

Progress::Progress(int64_t total, bool enabled)
    : total_(total), enabled_(enabled), terminal_(isatty(STDERR_FILENO) == 1), lastPrint_() {}

void Progress::step(const std::string& op, const std::string& caseName) {
  ++index_;
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (terminal_) {
    std::fprintf(stderr, "\r\033[K[%lld/%lld] %s %s", static_cast<long long>(index_), static_cast<long long>(total_),
                 op.c_str(), caseName.c_str());
    std::fflush(stderr);
  } else if (index_ == 1 || now - lastPrint_ >= std::chrono::seconds(2)) {
    std::fprintf(stderr, "[%lld/%lld] %s %s\n", static_cast<long long>(index_), static_cast<long long>(total_),
                 op.c_str(), caseName.c_str());
    lastPrint_ = now;
  }
}

void Progress::finish() {
  if (enabled_ && terminal_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
}

}  // namespace gradkit::cli
