#include <cstdio>
#include <iostream>

#include "acl/acl.h"
#include "commands/commands.h"
#include "core/machine.h"
#include "core/parallel.h"
#include "gradkit/gradkit.h"
#include "harness/error.h"
#include "harness/rows.h"

namespace gradkit::cli {

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
              << "threads:         " << threadCount() << "\n"
              << std::flush;
    const double copy = measureCopyBandwidthGBps();
    std::cout << "copy bandwidth:  " << formatNumber(copy) << " GB/s\n" << std::flush;
    const double fp32 = measureGemmPeakGflops(false);
    std::cout << "fp32 GEMM peak:  " << formatNumber(fp32) << " GFLOP/s\n" << std::flush;
    const double bf16 = measureGemmPeakGflops(true);
    std::cout << "bf16 GEMM peak:  " << formatNumber(bf16) << " GFLOP/s\n";
    facts["copy_gbps"] = copy;
    facts["gemm_fp32_gflops"] = fp32;
    facts["gemm_bf16_gflops"] = bf16;
    if (!options.jsonPath.empty()) writeJsonFile(options.jsonPath, facts);
    return 0;
  } catch (const std::exception& error) {
    std::cerr << "gradkit info: " << error.what() << "\n";
    return 1;
  }
}

}  // namespace gradkit::cli
