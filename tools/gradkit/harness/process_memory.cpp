// Reads the process's resident memory from /proc/self (harness/process_memory.h).
#include "harness/process_memory.h"

#include <fstream>

#include "harness/rows.h"

namespace gradkit::cli {
namespace {

// A "Vm...:   123 kB" line of /proc/self/status in bytes, 0 when absent.
double statusBytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field, 0) == 0) return std::stod(line.substr(field.size())) * 1024.0;
  }
  return 0.0;
}

std::string mib(double bytes) { return formatNumber(bytes / (1024.0 * 1024.0)) + " MiB"; }

}  // namespace

bool resetPeakRss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  return static_cast<bool>(clear.flush());
}

double peakRssBytes() { return statusBytes("VmHWM:"); }
double currentRssBytes() { return statusBytes("VmRSS:"); }

RssWindow::RssWindow() {
  resetPeakRss();
  before_ = currentRssBytes();
}

std::string RssWindow::note() const {
  const double peak = peakRssBytes();
  if (peak <= 0.0) return "";
  return "peak RSS " + mib(peak) + " (+" + mib(peak - before_) + " during the timed runs)";
}

}  // namespace gradkit::cli
