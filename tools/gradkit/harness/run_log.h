// A text log that runs append to, as upstream's test framework keeps common.log: "[YYYY-mm-dd HH:MM:SS] text"
// lines, each flushed as it is written.
#pragma once

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

namespace gradkit::cli {

class RunLog {
 public:
  /** Opens `path` for appending, creating its directory; throws HarnessError when it cannot. */
  explicit RunLog(const std::filesystem::path& path);
  /** Appends one line stamped with the local time. */
  void line(const std::string& text);

 private:
  std::ofstream out_;
};

/** Where a run's log goes: $`envVar` when set, else <dumpDir>/run_log.txt under --dump, else <temp dir>/`fileName`. */
std::filesystem::path runLogPath(const char* envVar, const std::optional<std::filesystem::path>& dumpDir,
                                 const std::string& fileName);

}  // namespace gradkit::cli
