#include "harness/timing.h"

#include <algorithm>
#include <chrono>
#include <limits>

namespace gradkit::cli {

double minSeconds(int repeat, const std::function<void()>& run) {
  run();
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < std::max(repeat, 1); ++i) {
    const auto start = std::chrono::steady_clock::now();
    run();
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    best = std::min(best, elapsed.count());
  }
  return best;
}

BenchRow makeBenchRow(const std::string& op, const std::string& caseName, const std::string& dtype, double seconds,
                      const Work& work, const BenchContext& context) {
  BenchRow row;
  row.op = op;
  row.caseName = caseName;
  row.dtype = dtype;
  row.seconds = seconds;
  row.gbps = work.bytes / seconds / 1e9;
  row.gflops = work.flops / seconds / 1e9;
  double roofline = 0.0;
  if (work.bytes > 0.0 && context.copyGBps > 0.0) roofline = work.bytes / (context.copyGBps * 1e9);
  if (work.flops > 0.0 && context.gemmPeakGflops) {
    const double peak = context.gemmPeakGflops(work.bf16Gemm);
    if (peak > 0.0) roofline = std::max(roofline, work.flops / (peak * 1e9));
  }
  row.ratio = roofline / seconds;
  return row;
}

}  // namespace gradkit::cli
