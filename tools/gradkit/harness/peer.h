// Speed peers: PyTorch timed on the same data by a script under tools/peers/, run with /usr/bin/python3
// (Debian's python3-torch belongs to that interpreter, whatever python3 comes first on PATH).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace gradkit::cli {

/** True when /usr/bin/python3 can import torch (checked once per process). */
bool torchPeerAvailable();

/** tools/peers/<name> in the source tree. */
std::filesystem::path peerScript(const std::string& name);

/**
 * Runs `/usr/bin/python3 script args...` and returns the number on its last output line of the form
 * "seconds <x>"; nullopt with `error` set (the script's output tail) when it fails.
 */
std::optional<double> runPeer(const std::filesystem::path& script, const std::vector<std::string>& args,
                              std::string& error);

/** A fresh directory under the system temp dir, removed with everything in it on destruction. */
class TempDir {
 public:
  /** Throws HarnessError when the directory cannot be created. */
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

/** `text` quoted for a POSIX shell. */
std::string shellQuote(const std::string& text);

}  // namespace gradkit::cli
