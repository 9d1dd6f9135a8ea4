// The thread pool: OpenMP threads, sized from GRADKIT_NUM_THREADS or the core count.
#include "core/parallel.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>

namespace gradkit {
namespace {

// 0 = no override (use the environment or the core count).
std::atomic<int> threadOverride{0};

/** Parses GRADKIT_NUM_THREADS once; warns once on stderr when it is set but not an integer >= 1. */
int defaultThreadCount() {
  static const int threads = [] {
    const int cores = std::max(1, omp_get_num_procs());
    const char* text = std::getenv("GRADKIT_NUM_THREADS");
    if (text == nullptr || *text == '\0') return cores;
    char* end = nullptr;
    errno = 0;
    const long value = std::strtol(text, &end, 10);
    if (errno != 0 || end == text || *end != '\0' || value < 1 || value > 4096) {
      std::fprintf(stderr,
                   "gradkit: ignoring GRADKIT_NUM_THREADS='%s' (expected an integer from 1 to 4096); using %d\n", text,
                   cores);
      return cores;
    }
    return static_cast<int>(value);
  }();
  return threads;
}

}  // namespace

int threadCount() {
  const int forced = threadOverride.load(std::memory_order_relaxed);
  return forced > 0 ? forced : defaultThreadCount();
}

void setThreadCount(int threads) { threadOverride.store(std::max(0, threads), std::memory_order_relaxed); }

void parallelFor(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t chunks = (n + grain - 1) / grain;
  const auto runChunk = [&](int64_t chunk) { fn(chunk * grain, std::min(n, (chunk + 1) * grain)); };

  // One chunk, one thread, or already inside a parallel region (no nesting): the same chunks in order.
  const int threads = static_cast<int>(std::min<int64_t>(threadCount(), chunks));
  if (threads <= 1 || omp_in_parallel()) {
    for (int64_t chunk = 0; chunk < chunks; ++chunk) runChunk(chunk);
    return;
  }

  // Exceptions must not cross the OpenMP region: keep the one from the lowest failing chunk, skip
  // chunks not yet started, and rethrow after the region.
  std::atomic<bool> failed{false};
  std::exception_ptr firstError;
  int64_t firstErrorChunk = chunks;
  std::mutex errorMutex;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    if (failed.load(std::memory_order_relaxed)) continue;
    try {
      runChunk(chunk);
    } catch (...) {
      std::lock_guard<std::mutex> lock(errorMutex);
      if (chunk < firstErrorChunk) {
        firstErrorChunk = chunk;
        firstError = std::current_exception();
      }
      failed.store(true, std::memory_order_relaxed);
    }
  }
  if (firstError) std::rethrow_exception(firstError);
}

}  // namespace gradkit
