#include <functional>
#include <iostream>
#include <string>
#include <utility>

#include "acl/acl.h"
#include "commands/commands.h"
#include "core/parallel.h"
#include "core/tile_path.h"
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

/** The matrix features present, comma-separated, or "none". */
std::string matrixFeatureList(const CpuMatrixFeatures& f) {
  std::string list;
  for (const auto& [present, name] : {std::pair{f.avx512bf16, "AVX512-BF16"},
                                      {f.avx512fp16, "AVX512-FP16"},
                                      {f.amxBf16, "AMX-BF16"},
                                      {f.amxFp16, "AMX-FP16"}}) {
    if (present) list += list.empty() ? name : std::string(", ") + name;
  }
  return list.empty() ? "none (no AVX512-BF16/FP16, no AMX)" : list;
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
    const CpuMatrixFeatures& features = cpuMatrixFeatures();
    facts["matrix_features"] = {{"avx512_bf16", features.avx512bf16},
                                {"avx512_fp16", features.avx512fp16},
                                {"amx_bf16", features.amxBf16},
                                {"amx_fp16", features.amxFp16}};
    std::cout << "matrix units:    " << matrixFeatureList(features) << "\n";
    for (const auto& [name, dtype] : {std::pair{"fp32", ACL_FLOAT}, {"fp16", ACL_FLOAT16}, {"bf16", ACL_BF16}}) {
      const TilePathChoice choice = chooseTilePath(dtype);
      facts["tile_path"][name] = {{"path", tilePathName(choice.path)}, {"reason", choice.reason}};
      std::cout << "tile path " << name << ":  " << tilePathName(choice.path) << " (" << choice.reason << ")\n";
    }
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
