#include <functional>
#include <iostream>

#include "acl/acl.h"
#include "commands/commands.h"
#include "core/parallel.h"
#include "gradkit/gradkit.h"
#include "harness/error.h"
#include "harness/rows.h"
#include "machine/machine.h"

namespace gradkit::cli {
namespace {

// Measures one limit and prints it; a limit this machine cannot measure (no bf16 GEMM, say) is reported as
// unavailable instead of ending the command. Returns the JSON value (null when unavailable).
nlohmann::json measureAndPrint(const char* label, const char* unit, const std::function<double()>& measure) {
  std::cout << label << std::flush;
  try {
    const double value = measure();
    std::cout << formatNumber(value) << " " << unit << "\n" << std::flush;
    return value;
  } catch (const std::exception& error) {
    std::cout << "unavailable (" << error.what() << ")\n" << std::flush;
    return nullptr;
  }
}

}  // namespace

int runInfo(const InfoOptions& options) {
  try {
    const char* soc = aclrtGetSocName();
    nlohmann::json facts{{"version", gradkitVersion()},
                         {"soc", soc != nullptr ? soc : "unknown"},
                         {"isa", isaName()},
                         {"threads", threadCount()}};
    std::cout << "gradkit " << gradkitVersion() << "\n"
              << "soc profile:     " << facts["soc"].get<std::string>() << "\n"
              << "isa:             " << facts["isa"].get<std::string>() << "\n"
              << "threads:         " << threadCount() << "\n";
    facts["copy_gbps"] = measureAndPrint("copy bandwidth:  ", "GB/s", [] { return measureCopyBandwidthGBps(); });
    facts["gemm_fp32_gflops"] =
        measureAndPrint("fp32 GEMM peak:  ", "GFLOP/s", [] { return measureGemmPeakGflops(false); });
    facts["gemm_bf16_gflops"] =
        measureAndPrint("bf16 GEMM peak:  ", "GFLOP/s", [] { return measureGemmPeakGflops(true); });
    if (!options.jsonPath.empty()) writeJsonFile(options.jsonPath, facts);
    return 0;
  } catch (const std::exception& error) {
    std::cerr << "gradkit info: " << error.what() << "\n";
    return 1;
  }
}

}  // namespace gradkit::cli
