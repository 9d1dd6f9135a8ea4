// The time-stamped run log (harness/run_log.h).
#include "harness/run_log.h"

#include <cstdlib>
#include <ctime>

#include "harness/error.h"

namespace gradkit::cli {

RunLog::RunLog(const std::filesystem::path& path) {
  std::error_code ignored;  // a directory that cannot be made shows as the open failing
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ignored);
  out_.open(path, std::ios::app);
  if (!out_) throw HarnessError("cannot append to the run log " + path.string());
}

void RunLog::line(const std::string& text) {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", localtime_r(&now, &local));
  out_ << "[" << stamp << "] " << text << std::endl;
}

std::filesystem::path runLogPath(const char* envVar, const std::optional<std::filesystem::path>& dumpDir,
                                 const std::string& fileName) {
  const char* env = std::getenv(envVar);
  if (env != nullptr && *env != '\0') return env;
  return dumpDir ? *dumpDir / "run_log.txt" : std::filesystem::temp_directory_path() / fileName;
}

}  // namespace gradkit::cli
