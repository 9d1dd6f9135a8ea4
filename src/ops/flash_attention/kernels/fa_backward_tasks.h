// The work split both flash attention backward kernels share (fa_backward.cpp, fa_fp8_backward.cpp): pass A and C
// tasks (batch, query head, query block), pass B tasks (batch, kv head, key chunk) with a dQ accumulator per chunk,
// and the workers that take tasks from a shared counter. The split depends on the shape only, and every task
// writes its own memory, so no result depends on the thread count.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/int_math.h"
#include "core/parallel.h"
#include "ops/flash_attention/kernels/fa_kernel.h"
#include "ops/flash_attention/kernels/fa_tile.h"

namespace gradkit::kernels {

/** The chunks of key blocks of `keyBlock` keys, with dQ rows of dqWidth floats. */
FaChunkLayout faChunkLayout(const FaProblem& p, int64_t keyBlock, int64_t dqWidth);

/** The key blocks [first, end) of chunk `chunk` of `chunks` over keyBlocks blocks. */
inline void faChunkBlocks(int64_t keyBlocks, int64_t chunks, int64_t chunk, int64_t* first, int64_t* end) {
  *first = chunk * keyBlocks / chunks;
  *end = (chunk + 1) * keyBlocks / chunks;
}

/** Pass A / C tasks: every (batch, query head, query block of queryBlock rows). */
std::vector<FaRowTask> faRowTasks(const FaProblem& p, int64_t queryBlock);

/** Pass B tasks, costliest first so that no worker starts a long task at the end. */
std::vector<FaChunkTask> faChunkTasks(const FaProblem& p, const FaChunkLayout& layout, int64_t keyBlock);

/** The backward schedule of either kernel: chunk layout, tasks, table and workers (slotBytes left to the kernel). */
FaSchedule faBackwardScheduleOf(const FaProblem& p, int64_t queryBlock, int64_t keyBlock, int64_t dqWidth, int threads);

/**
 * Runs fn(task, slot) for tasks [0, count) on up to `threads` workers; worker w carves its slot with
 * carve(FaArena&) out of slots + w * slotBytes.
 */
template <class Carve, class Fn>
void faRunTasks(char* slots, size_t slotBytes, int threads, int64_t count, const Carve& carve, const Fn& fn) {
  std::atomic<int64_t> next{0};
  parallelFor(std::max(1, threads), 1, [&](int64_t begin, int64_t end) {
    for (int64_t w = begin; w < end; ++w) {
      FaArena arena(slots + static_cast<size_t>(w) * slotBytes);
      const auto slot = carve(arena);
      for (int64_t t = next.fetch_add(1); t < count; t = next.fetch_add(1)) fn(t, slot);
    }
  });
}

}  // namespace gradkit::kernels
