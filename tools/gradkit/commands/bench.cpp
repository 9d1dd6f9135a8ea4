#include <functional>
#include <iostream>
#include <map>
#include <optional>

#include "commands/commands.h"
#include "core/parallel.h"
#include "core/tile_path.h"
#include "harness/acl_session.h"
#include "harness/error.h"
#include "harness/peer.h"
#include "harness/pinning.h"
#include "harness/progress.h"
#include "harness/rows.h"
#include "harness/suite_loader.h"
#include "machine/machine.h"

namespace gradkit::cli {

int runBench(const BenchOptions& options) {
  try {
    const std::filesystem::path casesDir =
        options.casesDir.empty() ? defaultCasesDir() : std::filesystem::path(options.casesDir);
    const std::vector<LoadedSuite> suites = loadSuites(options.op, casesDir);
    AclSession session;

    BenchContext context;
    context.stream = session.stream();
    context.repeat = options.repeat;
    context.threads = threadCount();
    // Each suite picks its peer: Debian's torch 1.13 (/usr/bin/python3) or the current-PyTorch venv.
    const bool debianTorch = options.peer && torchPeerAvailable();
    const std::optional<std::filesystem::path> currentTorch =
        options.peer ? currentTorchPython() : std::optional<std::filesystem::path>();
    context.peer = debianTorch || currentTorch.has_value();
    std::cout << "threads: " << context.threads << " (" << threadBinding() << ")\n";
    if (!options.peer) {
      std::cout << "peers: off\n";
    } else {
      std::cout << "peers: Debian PyTorch (/usr/bin/python3): " << (debianTorch ? "yes" : "no (torch not importable)")
                << "; current PyTorch: " << (currentTorch ? currentTorch->string() : "no (./run.sh torch-venv)")
                << "\n";
    }
    // Tile products: fp32 and fp16 always take the Highway fp32 tiles; bf16 the path chosen for this process.
    const TilePathChoice bf16Tiles = chooseTilePath(ACL_BF16, ProductEngine::TileGemm);
    const TilePathChoice bf16Gemm = chooseTilePath(ACL_BF16, ProductEngine::Gemm);
    std::cout << "tile path: bf16 tiles (flash attention) " << tilePathName(bf16Tiles.path) << " (" << bf16Tiles.reason
              << "); bf16 GEMMs (compressor) " << tilePathName(bf16Gemm.path) << " (" << bf16Gemm.reason
              << "); fp32, fp16 highway\n";
    context.copyGBps = measureCopyBandwidthGBps();
    std::cout << "copy bandwidth: " << formatNumber(context.copyGBps) << " GB/s (measured now)\n" << std::flush;
    auto peaks = std::make_shared<std::map<bool, double>>();
    std::function<double(bool)> gemmPeak = [peaks, &gemmPeak](bool bf16) -> double {
      auto found = peaks->find(bf16);
      if (found != peaks->end()) return found->second;
      double peak = 0.0;
      try {
        peak = measureGemmPeakGflops(bf16);
        std::cout << (bf16 ? "bf16" : "fp32") << " GEMM peak: " << formatNumber(peak) << " GFLOP/s (measured now)\n";
      } catch (const std::exception& error) {
        if (!bf16) throw;
        // Without a bf16 GEMM (no AVX512-BF16/AMX) bf16 products run through fp32, so that is the limit.
        peak = gemmPeak(false);
        std::cout << "bf16 GEMM peak unavailable (" << error.what() << "); using the fp32 peak\n";
      }
      std::cout << std::flush;
      return (*peaks)[bf16] = peak;
    };
    context.gemmPeakGflops = gemmPeak;

    int64_t total = 0;
    for (const LoadedSuite& loaded : suites) total += static_cast<int64_t>(loaded.cases.bench.size());
    Progress progress(total);
    std::vector<BenchRow> rows;
    bool anyError = false;
    for (const LoadedSuite& loaded : suites) {
      const std::string op = loaded.suite->name();
      for (const nlohmann::json& benchCase : loaded.cases.bench) {
        const std::string name = benchCase.value("name", std::string("?"));
        progress.step(op, name);
        try {
          rows.push_back(loaded.suite->bench(benchCase, context));
        } catch (const std::exception& error) {
          BenchRow row;
          row.op = op;
          row.caseName = name;
          row.dtype = benchCase.contains("dtype") && benchCase["dtype"].is_string()
                          ? benchCase["dtype"].get<std::string>()
                          : "-";
          row.note = std::string("error: ") + error.what();
          rows.push_back(row);
          anyError = true;
        }
      }
    }
    progress.finish();
    printBenchTable(std::cout, rows);
    if (!options.jsonPath.empty()) writeJsonFile(options.jsonPath, benchRowsToJson(rows));
    return anyError ? 1 : 0;
  } catch (const std::exception& error) {
    std::cerr << "gradkit bench: " << error.what() << "\n";
    return 2;
  }
}

}  // namespace gradkit::cli
