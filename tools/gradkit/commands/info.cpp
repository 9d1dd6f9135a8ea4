#include <functional>
#include <iostream>
#include <string>
#include <tuple>
#include <utility>

#include "acl/acl.h"
#include "commands/commands.h"
#include "core/parallel.h"
#include "core/tile_path.h"
#include "gradkit/gradkit.h"
#include "harness/error.h"
#include "harness/rows.h"
#include "machine/machine.h"
#include "runtime/profile.h"
#include "runtime/runtime.h"

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
                         {"aic_cores", rt::aicCores(rt::currentSoc())},
                         {"aiv_cores", rt::aivCores(rt::currentSoc())},
                         {"isa", isaName()},
                         {"threads", threadCount()}};
    std::cout << "gradkit " << gradkitVersion() << "\n"
              << "soc profile:     " << facts["soc"].get<std::string>() << "\n"
              << "ai cores:        " << rt::aicCores(rt::currentSoc()) << " AIC, " << rt::aivCores(rt::currentSoc())
              << " AIV (the emulated chip's, for the sparse attention metadata planners)\n"
              << "isa:             " << facts["isa"].get<std::string>() << "\n"
              << "threads:         " << threadCount() << "\n";
    const CpuMatrixFeatures& features = cpuMatrixFeatures();
    facts["matrix_features"] = {{"avx512_bf16", features.avx512bf16},
                                {"avx512_fp16", features.avx512fp16},
                                {"amx_bf16", features.amxBf16},
                                {"amx_fp16", features.amxFp16}};
    std::cout << "matrix units:    " << matrixFeatureList(features) << "\n";
    // fp32 and fp16 always take the Highway (fp32) path; bf16 per product engine.
    for (const auto& [key, label, engine] : {std::tuple{"bf16_tiles", "bf16 tiles:      ", ProductEngine::TileGemm},
                                             std::tuple{"bf16_gemm", "bf16 GEMMs:      ", ProductEngine::Gemm}}) {
      const TilePathChoice choice = chooseTilePath(ACL_BF16, engine);
      facts["tile_path"][key] = {{"path", tilePathName(choice.path)}, {"reason", choice.reason}};
      std::cout << label << tilePathName(choice.path) << " (" << choice.reason << ")\n";
    }
    std::cout << "fp32, fp16:      highway (widened to fp32; only bf16 has a native path)\n";
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
