// The one thread pool (OpenMP underneath). Partitions never depend on the thread count where a
// result could, so results are bitwise identical for any GRADKIT_NUM_THREADS.
#pragma once

#include <cstdint>
#include <functional>

namespace gradkit {

/** Threads used by kernels: GRADKIT_NUM_THREADS if set (>= 1), else the number of cores. */
int threadCount();

/** Overrides the thread count for this process (tests and benchmarks); 0 restores the default. */
void setThreadCount(int threads);

/**
 * Calls fn(begin, end) over [0, n) split into chunks of `grain` elements (the last may be shorter),
 * distributed over the pool. Chunk boundaries depend only on n and grain. Runs inline when n <= grain.
 */
void parallelFor(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& fn);

}  // namespace gradkit
