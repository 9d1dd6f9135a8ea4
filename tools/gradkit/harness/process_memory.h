// The process's resident memory as Linux reports it (/proc/self): the peak since a reset and the current size, for
// bench notes that say what a timed run took.
#pragma once

#include <string>

namespace gradkit::cli {

/** Resets the process's peak RSS (clear_refs); false when the kernel refuses. */
bool resetPeakRss();
/** The process's peak RSS in bytes since the last reset (VmHWM), 0 when unknown. */
double peakRssBytes();
/** The process's current RSS in bytes (VmRSS), 0 when unknown. */
double currentRssBytes();

/** A window of time whose memory growth a bench note reports: opening it resets the peak and records the RSS. */
class RssWindow {
 public:
  RssWindow();
  /** "peak RSS 12.3 MiB (+4.5 MiB during the timed runs)", or "" when the kernel does not say. */
  std::string note() const;

 private:
  double before_ = 0.0;
};

}  // namespace gradkit::cli
