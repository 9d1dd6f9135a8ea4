// The flash attention forward (fa_kernel.h): one task per (batch, query head, block of kRows query rows). A task
// runs over the key blocks in order, skipping those its band or mask removes, with the online softmax: S = Q K^T
// (TileGemm, rope columns packed after the head dim), pse / scale / mask, running max and sum, the output accumulated
// in fp32 and divided by the sum at the end, rounded once. Tasks write disjoint rows, so any thread runs any task:
// workers take tasks from a shared counter and the bits never depend on the thread count.
#include <algorithm>
#include <atomic>
#include <cfloat>
#include <limits>
#include <vector>

#include "base/saturating.h"
#include "core/parallel.h"
#include "ops/flash_attention/kernels/fa_kernel.h"
#include "ops/flash_attention/kernels/fa_run.h"
#include "ops/flash_attention/kernels/fa_tile.h"

namespace gradkit::kernels {
namespace {

constexpr int64_t kRows = kFaForwardRows, kCols = kFaForwardCols;

constexpr float kInf = std::numeric_limits<float>::infinity();

/** One worker's buffers. */
struct ForwardSlot {
  float* q = nullptr;       // [Br][dq]: q then qRope columns
  float* k = nullptr;       // [Bc][dq]
  float* v = nullptr;       // [Bc][dv]
  float* s = nullptr;       // [Br][Bc]: scores, then P
  uint16_t* p16 = nullptr;  // [Br][Bc]: P rounded to bf16 (native path only)
  float* keep = nullptr;    // [Br][Bc] (dropout only)
  float* acc = nullptr;     // [Br][dv]
  float* rowMax = nullptr;  // [Br]
  float* rowSum = nullptr;
  float* rowAlpha = nullptr;
  void* gemm = nullptr;
};

GemmShape scoreGemm(const FaProblem& p) {
  const int64_t dq = p.d + p.dRope;
  return faProduct(kRows, kCols, dq, false, true, dq, dq, kCols, faOperands(p), false);
}

GemmShape valueGemm(const FaProblem& p) {
  return faProduct(kRows, p.dv, kCols, false, false, kCols, p.dv, p.dv, faOperands(p), true);
}

ForwardSlot carveSlot(const FaProblem& p, FaArena& arena) {
  const int64_t dq = p.d + p.dRope;
  ForwardSlot slot;
  slot.q = arena.take<float>(kRows * dq);
  slot.k = arena.take<float>(kCols * dq);
  slot.v = arena.take<float>(kCols * p.dv);
  slot.s = arena.take<float>(kRows * kCols);
  if (p.tilePath == TilePath::NativeBf16) slot.p16 = arena.take<uint16_t>(kRows * kCols);
  if (p.dropout.kind != FaDropoutKind::None) slot.keep = arena.take<float>(kRows * kCols);
  slot.acc = arena.take<float>(kRows * p.dv);
  slot.rowMax = arena.take<float>(kRows);
  slot.rowSum = arena.take<float>(kRows);
  slot.rowAlpha = arena.take<float>(kRows);
  slot.gemm = arena.take<char>(
      static_cast<int64_t>(std::max(faGemmScratchBytes(scoreGemm(p)), faGemmScratchBytes(valueGemm(p)))));
  return slot;
}

size_t slotBytes(const FaProblem& p) {
  FaArena counter(nullptr);
  carveSlot(p, counter);
  return counter.used();
}

using Task = FaForwardTask;

/** A tile (or strip) of a task: rows [r0, r0 + rows) x columns [c0, c0 + cols), batch-relative. */
struct Tile {
  int64_t r0, rows, c0, cols;
  FaTileKind kind;
};

/** The online softmax step of one tile; its rows are rows `offset`.. of the task's state. */
void runTile(const FaProblem& p, const FaDropout& dropout, const FaKernelTable& kernels, const Task& task,
             const FaBatch& batch, const Tile& t, const void* q, int64_t ldq, const void* k, int64_t ldk, const void* v,
             int64_t ldv, const ForwardSlot& slot, int64_t offset) {
  const int64_t dv = p.dv;
  GemmShape score = scoreGemm(p);
  score.m = t.rows;
  score.n = t.cols;
  score.lda = ldq;
  score.ldb = ldk;
  kernels.gemm(score, q, k, slot.s, slot.gemm);
  const float kernelScale =
      faPrepareScores(p, batch, task.b, task.n1, t.r0, t.rows, t.c0, t.cols, t.kind, slot.s, kCols);
  float* rowAlpha = slot.rowAlpha + offset;
  kernels.forwardRows(
      {slot.s, kCols, t.rows, t.cols, kernelScale, slot.rowMax + offset, slot.rowSum + offset, rowAlpha});
  for (int64_t r = 0; r < t.rows; ++r) {
    const float alpha = rowAlpha[r];
    if (alpha == 1.0f) continue;
    float* acc = slot.acc + (offset + r) * dv;
    for (int64_t c = 0; c < dv; ++c) acc[c] = acc[c] * alpha;
  }
  if (dropout.kind != FaDropoutKind::None) {
    faKeepTile(dropout, batch, task.n1, t.r0, t.rows, t.c0, t.cols, slot.keep, kCols, kernels.philoxBytes);
    const float dropScale = dropout.scale;
    for (int64_t r = 0; r < t.rows; ++r) {
      float* row = slot.s + r * kCols;
      const float* keep = slot.keep + r * kCols;
      for (int64_t j = 0; j < t.cols; ++j) row[j] = row[j] * keep[j] * dropScale;
    }
  }
  GemmShape value = valueGemm(p);
  value.m = t.rows;
  value.k = t.cols;
  value.ldb = ldv;
  const void* probabilities = slot.s;
  if (slot.p16 != nullptr) {  // the native path multiplies P in bf16
    kernels.roundRowsToBf16(slot.s, kCols, t.rows, t.cols, slot.p16, kCols);
    probabilities = slot.p16;
  }
  kernels.gemm(value, probabilities, v, slot.acc + offset * dv, slot.gemm);
}

void runTask(const FaProblem& p, const FaDropout& dropout, const FaForwardIo& io, const FaKernelTable& kernels,
             const Task& task, const ForwardSlot& slot) {
  const FaBatch& batch = p.batches[static_cast<size_t>(task.b)];
  const int64_t dv = p.dv, group = p.n1 / p.n2;
  const int64_t kvHead = task.n1 / group;
  const int64_t rows = std::min(kRows, batch.s1 - task.r0);
  const aclDataType type = faProductType(p);
  int64_t ldq = 0, ldk = 0, ldv = 0;
  const void* q =
      faOperandRows(type, io.q, io.qRope, p.d, p.dRope, task.b, task.n1, batch.qFirst + task.r0, rows, slot.q, &ldq);
  std::fill(slot.acc, slot.acc + rows * dv, 0.0f);
  std::fill(slot.rowMax, slot.rowMax + rows, -kInf);
  std::fill(slot.rowSum, slot.rowSum + rows, 0.0f);

  for (int64_t c0 = 0; c0 < batch.s2; c0 += kCols) {
    const int64_t cols = std::min(kCols, batch.s2 - c0);
    const FaTileKind kind = faClassifyTile(p, batch, task.b, task.n1, task.r0, task.r0 + rows, c0, c0 + cols);
    if (kind == FaTileKind::Skip) continue;
    const void* k =
        faOperandRows(type, io.k, io.kRope, p.d, p.dRope, task.b, kvHead, batch.kvFirst + c0, cols, slot.k, &ldk);
    const void* v = faOperandRows(type, io.v, FaView{}, dv, 0, task.b, kvHead, batch.kvFirst + c0, cols, slot.v, &ldv);

    faForEachPart(p, batch, task.b, task.n1, task.r0, rows, c0, cols, kind,
                  [&](int64_t offset, int64_t height, int64_t lo, int64_t width, FaTileKind part) {
                    const Tile tile{task.r0 + offset, height, lo, width, part};
                    runTile(p, dropout, kernels, task, batch, tile, faAdvance(q, offset * ldq, type), ldq,
                            faAdvance(k, (lo - c0) * ldk, type), ldk, faAdvance(v, (lo - c0) * ldv, type), ldv, slot,
                            offset);
                  });
  }

  for (int64_t r = 0; r < rows; ++r) {
    float* acc = slot.acc + r * dv;
    float m = slot.rowMax[r], l = slot.rowSum[r];
    if (m == -kInf) {  // every column masked (or none): output 0, the invalid-row statistics
      std::fill(acc, acc + dv, 0.0f);
      m = -FLT_MAX;
      l = FLT_MAX;
    } else {
      for (int64_t c = 0; c < dv; ++c) acc[c] = acc[c] / l;
    }
    const int64_t at = batch.statsBase + task.n1 * batch.statsHeadStride + (task.r0 + r) * batch.statsRowStride;
    std::fill(io.softmaxMax + at, io.softmaxMax + at + 8, m);
    std::fill(io.softmaxSum + at, io.softmaxSum + at + 8, l);
  }
  faStoreRows(slot.acc, dv, io.out, task.b, task.n1, batch.qFirst + task.r0, rows, dv);
}

}  // namespace

FaSchedule faForwardSchedule(const FaProblem& p, int threads) {
  FaSchedule schedule;
  schedule.kernels = &faKernels();
  schedule.threads = std::max(1, threads);
  if (p.n1 <= 0 || p.n2 <= 0) return schedule;
  for (int64_t b = 0; b < static_cast<int64_t>(p.batches.size()); ++b) {
    const FaBatch& batch = p.batches[static_cast<size_t>(b)];
    for (int64_t n1 = 0; n1 < p.n1; ++n1) {
      for (int64_t r0 = 0; r0 < batch.s1; r0 += kRows) {
        const int64_t rows = std::min(kRows, batch.s1 - r0);
        int64_t lo = 0, hi = 0;
        faBandCols(p, batch, r0, r0 + rows, 0, batch.s2, &lo, &hi);
        // Saturating: a stride-0 key tensor may claim up to INT64_MAX rows (the plan is made, the run is not).
        const auto cost = static_cast<int64_t>(std::min<uint64_t>(
            satMul(static_cast<uint64_t>(rows), static_cast<uint64_t>(hi - lo)), static_cast<uint64_t>(INT64_MAX)));
        schedule.forward.push_back({b, n1, r0, cost});
      }
    }
  }
  // Costliest first (a causal band's last query blocks), so that no worker starts a long task at the end. The order
  // changes who runs a task, never what it computes.
  std::stable_sort(schedule.forward.begin(), schedule.forward.end(),
                   [](const Task& x, const Task& y) { return x.cost > y.cost; });
  schedule.slotBytes = slotBytes(p);
  return schedule;
}

void faForward(const FaProblem& p, const FaSchedule& schedule, const FaForwardIo& io, void* scratch) {
  if (schedule.forward.empty()) return;
  const FaDropout dropout = faRunDropout(p.dropout, io.dropBits);
  const FaKernelTable& kernels = *schedule.kernels;
  std::atomic<int64_t> next{0};
  const auto total = static_cast<int64_t>(schedule.forward.size());
  parallelFor(schedule.threads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t w = begin; w < end; ++w) {
      FaArena arena(static_cast<char*>(scratch) + static_cast<size_t>(w) * schedule.slotBytes);
      const ForwardSlot slot = carveSlot(p, arena);
      for (int64_t t = next.fetch_add(1); t < total; t = next.fetch_add(1)) {
        runTask(p, dropout, io, kernels, schedule.forward[static_cast<size_t>(t)], slot);
      }
    }
  });
}

}  // namespace gradkit::kernels
