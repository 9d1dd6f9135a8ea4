// Progress of long runs on stderr: a line rewritten in place on a terminal, otherwise a line every few
// seconds, so logs stay short.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace gradkit::cli {

class Progress {
 public:
  /** `total` steps; nothing is printed when `enabled` is false. */
  Progress(int64_t total, bool enabled = true);
  /** Reports that step `index` (1-based) of `total` starts: "[12/96] threshold_backward tail_12". */
  void step(const std::string& op, const std::string& caseName);
  /** Clears the in-place line. */
  void finish();

 private:
  int64_t total_;
  int64_t index_ = 0;
  bool enabled_;
  bool terminal_;
  std::chrono::steady_clock::time_point lastPrint_;
};

}  // namespace gradkit::cli
