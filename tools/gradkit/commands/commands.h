// The three subcommands of `gradkit`. Each returns the process exit status.
#pragma once

#include <string>

namespace gradkit::cli {

/** `gradkit info`: platform profile, ISA, threads, and the machine limits measured now. */
struct InfoOptions {
  std::string jsonPath;  // also write the facts as a JSON object when non-empty
};
int runInfo(const InfoOptions& options);

/** `gradkit verify`: every selected case through the public API, compared with the golden. */
struct VerifyOptions {
  std::string op;           // name or prefix; empty = all
  std::string jsonPath;     // rows as JSON when non-empty
  std::string dumpDir;      // .npy dump when non-empty
  std::string casesDir;     // default: the repository's cases/
  bool digestOnly = false;  // run the cases and record output digests, skipping goldens and gates (determinism runs)
};
int runVerify(const VerifyOptions& options);

/** `gradkit bench`: timed cases with roofline ratios (call ensureThreadPinning first). */
struct BenchOptions {
  std::string op;
  std::string jsonPath;
  std::string casesDir;
  int repeat = 10;
  bool peer = true;
};
int runBench(const BenchOptions& options);

}  // namespace gradkit::cli
