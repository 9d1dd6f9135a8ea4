#include "harness/peer.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <sstream>

#include "harness/error.h"

namespace gradkit::cli {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

// Runs a shell command; returns its exit status and combined output.
int runCommand(const std::string& command, std::string& output) {
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return -1;
  char buffer[4096];
  size_t got;
  while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, got);
  const int status = pclose(pipe);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace

std::string shellQuote(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') {
      quoted += "'\\''";
    } else {
      quoted += c;
    }
  }
  return quoted + "'";
}

bool torchPeerAvailable() {
  static const bool available = [] {
    std::string output;
    return runCommand(std::string(kPython) + " -c 'import torch'", output) == 0;
  }();
  return available;
}

std::optional<std::filesystem::path> currentTorchPython() {
  std::filesystem::path venv;
  if (const char* chosen = std::getenv("GRADKIT_TORCH_VENV"); chosen != nullptr && *chosen != '\0') {
    venv = chosen;
  } else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    venv = std::filesystem::path(home) / ".cache" / "gradkit" / "torch-venv";
  } else {
    return std::nullopt;
  }
  std::filesystem::path python = venv / "bin" / "python";
  std::error_code ignored;
  if (!std::filesystem::exists(python, ignored)) return std::nullopt;
  return python;
}

std::vector<std::string> peerComputeArgs(const nlohmann::json& benchCase) {
  if (!benchCase.contains("peer_compute")) return {};
  const std::string compute = benchCase.value("peer_compute", std::string());
  if (compute != "fp32" && compute != "io") {
    throw HarnessError("peer_compute: expected \"fp32\" or \"io\", given \"" + compute + "\"");
  }
  return {"--compute", compute};
}

std::filesystem::path peerScript(const std::string& name) {
  return std::filesystem::path(GRADKIT_SOURCE_DIR) / "tools" / "peers" / name;
}

std::optional<double> runPeer(const std::filesystem::path& script, const std::vector<std::string>& args,
                              std::string& error, PeerTorch torch) {
  std::string python = kPython;
  if (torch == PeerTorch::Current) {
    const std::optional<std::filesystem::path> current = currentTorchPython();
    if (!current) {
      error = "peer " + script.filename().string() +
              " skipped: no current-PyTorch venv (GRADKIT_TORCH_VENV or ~/.cache/gradkit/torch-venv)";
      return std::nullopt;
    }
    python = current->string();
  }
  std::string command = shellQuote(python) + " " + shellQuote(script.string());
  for (const std::string& arg : args) {
    command += ' ';
    command += shellQuote(arg);
  }
  std::string output;
  const int status = runCommand(command, output);
  std::istringstream lines(output);
  std::string line;
  std::optional<double> seconds;
  while (std::getline(lines, line)) {
    if (line.rfind("seconds ", 0) == 0) seconds = std::strtod(line.c_str() + 8, nullptr);
  }
  if (status != 0 || !seconds) {
    error = "peer " + script.filename().string() + " failed (exit " + std::to_string(status) +
            "): " + output.substr(output.size() > 400 ? output.size() - 400 : 0);
    return std::nullopt;
  }
  return seconds;
}

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "gradkit-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw HarnessError("cannot create a temporary directory");
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

}  // namespace gradkit::cli
