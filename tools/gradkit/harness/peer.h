// Speed peers: PyTorch timed on the same data by a script under tools/peers/, run with /usr/bin/python3
// (Debian's python3-torch belongs to that interpreter, whatever python3 comes first on PATH), or with the python of
// a venv holding a current PyTorch from PyPI (the reference for dropout, which Debian's 1.13 is not).
#pragma once

#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace gradkit::cli {

/** True when /usr/bin/python3 can import torch (checked once per process). */
bool torchPeerAvailable();

/** Which PyTorch runs a peer script. */
enum class PeerTorch {
  Debian,   // /usr/bin/python3 with python3-torch (1.13)
  Current,  // the venv's python: ${GRADKIT_TORCH_VENV:-$HOME/.cache/gradkit/torch-venv}/bin/python
};

/** The current-PyTorch venv's python when that file exists, else nullopt (the peer is then skipped). */
std::optional<std::filesystem::path> currentTorchPython();

/** tools/peers/<name> in the source tree. */
std::filesystem::path peerScript(const std::string& name);

/**
 * Runs `python script args...` with the python of `torch` and returns the number on its last output line of the
 * form "seconds <x>"; nullopt with `error` set (the script's output tail, or that the current-PyTorch venv is
 * missing) when it fails.
 */
std::optional<double> runPeer(const std::filesystem::path& script, const std::vector<std::string>& args,
                              std::string& error, PeerTorch torch = PeerTorch::Debian);

/**
 * The peer's compute precision from a bench case's "peer_compute" as the arguments {"--compute", value}: "fp32" (the
 * reference formulas in fp32, the peers' default) or "io" (in the case's own dtype, as a user of that dtype would run
 * them: torch's bf16 matmuls use AMX where the CPU has it); none when the case has no such key. Throws HarnessError
 * for any other value.
 */
std::vector<std::string> peerComputeArgs(const nlohmann::json& benchCase);

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
