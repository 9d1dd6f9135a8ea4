// Machine limits measured on the spot: the Highway target, STREAM-like copy bandwidth and the
// GEMM wrapper's peak. Each measurement stays within a few seconds on two cores and prints nothing.
#include "machine/machine.h"

#include <omp.h>

#include <hwy/highway.h>
#include <hwy/targets.h>
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "core/gemm.h"
#include "core/isa_limit.h"
#include "core/parallel.h"
#include "gradkit/float_convert.h"
#include "machine/stream_copy.h"

namespace gradkit {
namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

/** [begin, end) of thread `t`'s fixed slice of `count` items split over `threads`. */
void sliceOf(int64_t count, int threads, int t, int64_t& begin, int64_t& end) {
  begin = count * t / threads;
  end = count * (t + 1) / threads;
}

}  // namespace

std::string isaName() {
  applyIsaLimit();
  // Highway numbers better targets with lower bits; the lowest bit of (CPU-supported & compiled)
  // is what HWY_DYNAMIC_DISPATCH picks.
  const int64_t usable = hwy::SupportedTargets() & HWY_TARGETS;
  const std::string limit = *isaLimitName() != '\0' ? std::string(" (GRADKIT_ISA=") + isaLimitName() + ")" : "";
  if (usable == 0) return "SCALAR" + limit;
  return hwy::TargetName(usable & -usable) + limit;
}

double measureCopyBandwidthGBps() {
  // Two arrays far larger than any last-level cache, touched first by the thread that copies them
  // (first-touch page placement), then copied slice-per-thread; best of several runs.
  constexpr int64_t kBytes = int64_t{256} << 20;
  constexpr int64_t kWords = kBytes / 8;
  constexpr int kRuns = 5;
  std::unique_ptr<uint64_t, FreeDeleter> source(static_cast<uint64_t*>(std::aligned_alloc(64, kBytes)));
  std::unique_ptr<uint64_t, FreeDeleter> target(static_cast<uint64_t*>(std::aligned_alloc(64, kBytes)));
  if (!source || !target) return 0.0;  // not enough memory to measure: 0 says "unknown"
  uint64_t* src = source.get();
  uint64_t* dst = target.get();
  const int threads = threadCount();

#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const int team = omp_get_num_threads();
    int64_t begin = 0, end = 0;
    sliceOf(kWords, team, t, begin, end);
    for (int64_t i = begin; i < end; ++i) src[i] = static_cast<uint64_t>(i);
    std::memset(dst + begin, 0, static_cast<size_t>(end - begin) * 8);
  }

  // Two copies, as the kernels write: ordinary stores (which also read each destination line first)
  // and non-temporal stores. The faster one is the machine's limit for streaming kernels.
  double best = 1e30;
  for (int run = 0; run < 2 * kRuns; ++run) {
    const bool streaming = run % 2 == 1;
    const Clock::time_point start = Clock::now();
#pragma omp parallel num_threads(threads)
    {
      const int t = omp_get_thread_num();
      const int team = omp_get_num_threads();
      int64_t begin = 0, end = 0;
      sliceOf(kWords / 8, team, t, begin, end);  // whole 64-byte lines per thread
      begin *= 8;
      end *= 8;
      if (streaming) {
        streamCopy(src + begin, dst + begin, static_cast<size_t>(end - begin) * 8);
      } else {
        for (int64_t i = begin; i < end; ++i) dst[i] = src[i];
      }
    }
    best = std::min(best, secondsSince(start));
  }
  // Keep the copy observable so it cannot be optimized away.
  volatile uint64_t sink = dst[kWords / 3];
  (void)sink;
  return 2.0 * static_cast<double>(kBytes) / best / 1e9;
}

double measureGemmPeakGflops(bool bf16) {
  // Square products through the wrapper. The size starts small and grows while one run stays
  // short, so a slow path (e.g. no bf16 hardware) still finishes within the time budget.
  constexpr double kRunBudgetSeconds = 0.35;
  constexpr int64_t kMaxSize = 2048;
  constexpr int kRuns = 4;
  double bestGflops = 0.0;
  for (int64_t n = 256; n <= kMaxSize; n *= 2) {
    GemmShape shape;
    shape.m = shape.n = shape.k = n;
    shape.inputType = bf16 ? ACL_BF16 : ACL_FLOAT;
    const Gemm gemm(shape);
    std::vector<float> scratch(gemm.scratchBytes() / sizeof(float) + 1);
    const size_t elements = static_cast<size_t>(n * n);
    std::vector<float> aFloat(elements), bFloat(elements), c(elements);
    std::vector<uint16_t> aBf16(bf16 ? elements : 0), bBf16(bf16 ? elements : 0);
    for (size_t i = 0; i < elements; ++i) {
      aFloat[i] = static_cast<float>(static_cast<int>(i % 13) - 6) * 0.125f;
      bFloat[i] = static_cast<float>(static_cast<int>(i % 7) - 3) * 0.25f;
      if (bf16) {
        aBf16[i] = floatToBf16(aFloat[i]);
        bBf16[i] = floatToBf16(bFloat[i]);
      }
    }
    const void* a = bf16 ? static_cast<const void*>(aBf16.data()) : aFloat.data();
    const void* b = bf16 ? static_cast<const void*>(bBf16.data()) : bFloat.data();
    gemm.run(a, b, c.data(), scratch.data());  // warm-up: page faults, kernel generation
    double best = 1e30;
    for (int run = 0; run < kRuns; ++run) {
      const Clock::time_point start = Clock::now();
      gemm.run(a, b, c.data(), scratch.data());
      best = std::min(best, secondsSince(start));
    }
    bestGflops = std::max(bestGflops, 2.0 * static_cast<double>(n) * n * n / best / 1e9);
    if (best * 8.0 > kRunBudgetSeconds) break;  // the next size costs 8x per run
  }
  return bestGflops;
}

}  // namespace gradkit
