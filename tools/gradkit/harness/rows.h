// The rows `verify` and `bench` print, and their table and JSON forms.
#pragma once

#include <limits>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gradkit::cli {

/** One verified case. */
struct VerifyRow {
  std::string op;
  std::string caseName;
  std::string dtype;
  bool passed = false;
  bool bitExact = false;
  double maxAbsErr = 0.0;
  double maxRelErr = 0.0;
  std::string note;  // why it failed, or what an expected-error case returned
  // FNV-1a of every output's storage after the run (hex; empty when nothing ran): equal digests across thread counts
  // and kernel tables are the determinism matrix's evidence.
  std::string outputDigest;
  // Metrics a suite reports beside its gate (OpCall::report), not part of the verdict: a table column when any row
  // has them, "extra" in JSON (a default initializer, so that initializers listing the fields before it still compile).
  std::string extra = {};
  bool skipped = false;  // the case did not run (the reason in `extra`): neither passed nor failed
};

/** One benchmarked case; the numbers are NaN ("-" in the table, null in JSON) when the case could not run. */
struct BenchRow {
  std::string op;
  std::string caseName;
  std::string dtype;
  double seconds = std::numeric_limits<double>::quiet_NaN();  // min over the timed runs
  double gbps = std::numeric_limits<double>::quiet_NaN();
  double gflops = std::numeric_limits<double>::quiet_NaN();
  double ratio = std::numeric_limits<double>::quiet_NaN();  // roofline time / measured time
  std::optional<double> peerSeconds;
  std::string note;
};

/** A number for tables: "0", or 3 significant digits ("1.5e-07", "inf"). */
std::string formatNumber(double value);

/** A number in a printf format of one double ("%.2e", "%.8f", "%.17g"), for notes that need that exact form. */
std::string formatNumberAs(const char* printfFormat, double value);

/** The verify table, one row per case (an "extra" column when any row has one), then each failing case's note. */
void printVerifyTable(std::ostream& out, const std::vector<VerifyRow>& rows);

/** The bench table, one row per case. */
void printBenchTable(std::ostream& out, const std::vector<BenchRow>& rows);

/** [{op, case, dtype, passed, bitexact, max_abs_err, max_rel_err[, note][, output_digest][, extra]}] (NaN/Inf
 *  become null). */
nlohmann::json verifyRowsToJson(const std::vector<VerifyRow>& rows);

/** [{op, case, dtype, seconds, gbps, gflops, ratio[, peer_seconds][, note]}]. */
nlohmann::json benchRowsToJson(const std::vector<BenchRow>& rows);

/** Writes `json` (indented) to `path`; throws HarnessError on failure. */
void writeJsonFile(const std::string& path, const nlohmann::json& json);

}  // namespace gradkit::cli
