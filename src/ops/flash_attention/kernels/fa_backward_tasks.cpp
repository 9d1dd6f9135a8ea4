#include "ops/flash_attention/kernels/fa_backward_tasks.h"

#include "base/saturating.h"

#include "ops/flash_attention/kernels/fa_softmax.h"

namespace gradkit::kernels {
namespace {

/** Tasks wanted from pass B: batches x kv heads x key chunks reach this when the keys allow. */
constexpr int64_t kTargetTasks = 8;
/** A batch splits its keys into more than one chunk only while its chunks' dQ accumulators stay within this. */
constexpr int64_t kChunkAccumulatorBytes = int64_t{64} << 20;

}  // namespace

FaChunkLayout faChunkLayout(const FaProblem& p, int64_t keyBlock, int64_t dqWidth) {
  FaChunkLayout layout;
  int64_t active = 0;
  for (const FaBatch& batch : p.batches) active += batch.s2 > 0 ? 1 : 0;
  const int64_t wanted = ceilDiv(kTargetTasks, std::max<int64_t>(1, active * std::max<int64_t>(1, p.n2)));
  for (const FaBatch& batch : p.batches) {
    const int64_t keyBlocks = ceilDiv(batch.s2, keyBlock);
    const int64_t chunkBytes = std::max<int64_t>(1, p.n1 * batch.s1 * dqWidth * static_cast<int64_t>(sizeof(float)));
    const int64_t chunks = std::min({keyBlocks, wanted, std::max<int64_t>(1, kChunkAccumulatorBytes / chunkBytes)});
    layout.chunks.push_back(chunks);
    layout.dqOffset.push_back(layout.dqFloats);
    layout.dOffset.push_back(layout.dFloats);
    layout.dqFloats += chunks * p.n1 * batch.s1 * dqWidth;
    layout.dFloats += p.n1 * batch.s1;
  }
  return layout;
}

std::vector<FaRowTask> faRowTasks(const FaProblem& p, int64_t queryBlock) {
  std::vector<FaRowTask> tasks;
  for (int64_t b = 0; b < static_cast<int64_t>(p.batches.size()); ++b) {
    for (int64_t n1 = 0; n1 < p.n1; ++n1) {
      for (int64_t r0 = 0; r0 < p.batches[static_cast<size_t>(b)].s1; r0 += queryBlock) tasks.push_back({b, n1, r0});
    }
  }
  return tasks;
}

std::vector<FaChunkTask> faChunkTasks(const FaProblem& p, const FaChunkLayout& layout, int64_t keyBlock) {
  std::vector<FaChunkTask> tasks;
  for (int64_t b = 0; b < static_cast<int64_t>(p.batches.size()); ++b) {
    const FaBatch& batch = p.batches[static_cast<size_t>(b)];
    const int64_t count = layout.chunks[static_cast<size_t>(b)], keyBlocks = ceilDiv(batch.s2, keyBlock);
    for (int64_t n2 = 0; n2 < p.n2; ++n2) {
      for (int64_t c = 0; c < count; ++c) {
        int64_t first = 0, end = 0;
        faChunkBlocks(keyBlocks, count, c, &first, &end);
        // The rows the band leaves the chunk's keys, times its blocks: an estimate in O(1) (the plan's time may not
        // grow with the keys a stride-0 tensor claims), used for the order only.
        int64_t rowFirst = 0, rowLast = 0;
        faBandRows(p, batch, first * keyBlock, std::min(batch.s2, end * keyBlock), &rowFirst, &rowLast);
        const uint64_t cost = satMul(static_cast<uint64_t>(rowLast - rowFirst), static_cast<uint64_t>(end - first));
        tasks.push_back({b, n2, c, static_cast<int64_t>(std::min<uint64_t>(cost, INT64_MAX))});
      }
    }
  }
  // Who runs a task never changes its bits: only the order of the workers' time changes.
  std::stable_sort(tasks.begin(), tasks.end(),
                   [](const FaChunkTask& x, const FaChunkTask& y) { return x.cost > y.cost; });
  return tasks;
}

FaSchedule faBackwardScheduleOf(const FaProblem& p, int64_t queryBlock, int64_t keyBlock, int64_t dqWidth,
                                int threads) {
  FaSchedule schedule;
  schedule.kernels = &faKernels();
  schedule.threads = std::max(1, threads);
  if (p.n1 <= 0 || p.n2 <= 0) return schedule;
  schedule.layout = faChunkLayout(p, keyBlock, dqWidth);
  schedule.rows = faRowTasks(p, queryBlock);
  schedule.chunks = faChunkTasks(p, schedule.layout, keyBlock);
  return schedule;
}

size_t faScratchBytes(const FaSchedule& schedule) {
  if (schedule.slotBytes == 0) return 0;
  FaArena counter(nullptr);
  counter.take<float>(schedule.layout.dFloats);
  counter.take<float>(schedule.layout.dqFloats);
  return counter.used() + schedule.slotBytes * static_cast<size_t>(schedule.threads);
}

}  // namespace gradkit::kernels
