// The registry of operator suites. An operator joins `gradkit verify` and `gradkit bench` with one suite
// file (tools/gradkit/suites/<op>.cpp, ending in GRADKIT_REGISTER_SUITE) and one case file (cases/<op>.json).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "acl/acl_base.h"
#include "harness/rows.h"

namespace gradkit::cli {

/** What a suite's verify gets besides the case. */
struct VerifyContext {
  aclrtStream stream = nullptr;
  std::optional<std::filesystem::path> dumpDir;  // write .npy files under <dumpDir>/<op>/<case>/ when set
  bool digestOnly = false;  // no goldens or gates: the run, the memory rules and the output digest only
};

/** What a suite's bench gets besides the case: the run's settings and the machine limits measured in it. */
struct BenchContext {
  aclrtStream stream = nullptr;
  int repeat = 10;                                  // timed runs after one warm-up; the row keeps the minimum
  bool peer = true;                                 // time the PyTorch peer where it is available
  int threads = 1;                                  // gradkit's thread count, given to the peer too
  double copyGBps = 0.0;                            // measured copy bandwidth
  std::function<double(bool bf16)> gemmPeakGflops;  // measured on first use (GEMM peak takes a while)
};

class Suite {
 public:
  virtual ~Suite() = default;
  /** The operator name: the aclnn name in snake_case without the prefix ("threshold_backward"). */
  virtual std::string name() const = 0;
  /** Runs one expanded case through the public API and compares with the golden; one row or more. */
  virtual std::vector<VerifyRow> verify(const nlohmann::json& testCase, const VerifyContext& context) const = 0;
  /** Times one expanded bench case. */
  virtual BenchRow bench(const nlohmann::json& benchCase, const BenchContext& context) const = 0;
};

/** Adds a suite to the registry (called from static initialisers). */
void registerSuite(std::unique_ptr<Suite> suite);

/** Every registered suite, sorted by name. */
std::vector<const Suite*> registeredSuites();

/** Registers `SuiteClass` when the program starts. */
#define GRADKIT_REGISTER_SUITE(SuiteClass)                         \
  namespace {                                                      \
  [[maybe_unused]] const bool registered_##SuiteClass = [] {       \
    ::gradkit::cli::registerSuite(std::make_unique<SuiteClass>()); \
    return true;                                                   \
  }();                                                             \
  }

}  // namespace gradkit::cli
