// Timing and the roofline ratio of `gradkit bench`.
#pragma once

#include <functional>
#include <string>

#include "harness/rows.h"
#include "harness/suite.h"

namespace gradkit::cli {

/** Runs `run` once as a warm-up, then `repeat` (>= 1) times; the minimum wall time in seconds. */
double minSeconds(int repeat, const std::function<void()>& run);

/** What one run of a bench case must do at least. */
struct Work {
  double bytes = 0.0;     // bytes that must move between memory and the cores
  double flops = 0.0;     // floating-point operations
  bool bf16Gemm = false;  // the FLOPs run on bf16 matmul operands (bf16 GEMM peak) rather than fp32
};

/**
 * The row for a measured case: GB/s and GFLOP/s achieved, and ratio = roofline time / seconds with roofline
 * time = max(bytes / copy bandwidth, flops / GEMM peak), the limits from `context`.
 */
BenchRow makeBenchRow(const std::string& op, const std::string& caseName, const std::string& dtype, double seconds,
                      const Work& work, const BenchContext& context);

}  // namespace gradkit::cli
