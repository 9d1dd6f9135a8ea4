// The flash attention backward (fa_kernel.h), three passes:
//   A  D_i = rowsum(dY o attentionIn) for every query row (tasks: batch, query head, query block);
//   B  tasks (batch, kv head, key chunk): for each key block of the chunk in order, for each query head of the group
//      and each query block the band leaves, in order: P from the given statistics, dV += P_d^T dY, dP = dY V^T,
//      dS = P o (dP * keep * dropScale - D) * scale, dK += dS^T Q, dQ_chunk += dS K. dK and dV of a key block are
//      finished inside the task and rounded once; dQ goes to the chunk's own fp32 accumulator;
//   C  dq = the chunks' accumulators summed in chunk order, rounded once (tasks: batch, query head, query block).
// The chunk count depends on the shape only (enough tasks when B * N2 is small, while the chunks' accumulators stay
// within 64 MiB or one dq), every task writes its own memory, so the bits never depend on the thread count; workers
// take tasks from a shared counter. Extra memory: per worker the tiles, plus D and the dQ accumulators.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <vector>

#include "ops/flash_attention/kernels/fa_backward_tasks.h"
#include "ops/flash_attention/kernels/fa_kernel.h"
#include "ops/flash_attention/kernels/fa_run.h"
#include "ops/flash_attention/kernels/fa_tile.h"

namespace gradkit::kernels {
namespace {

constexpr int64_t kRows = kFaBackwardRows, kCols = kFaBackwardCols;

/** One worker's buffers. */
struct BackwardSlot {
  float* q = nullptr;   // [Br][dq]
  float* dy = nullptr;  // [Br][dv]
  float* o = nullptr;   // [Br][dv] attentionIn (pass A)
  float* k = nullptr;   // [Bc][dq]
  float* v = nullptr;   // [Bc][dv]
  float* p = nullptr;   // [Br][Bc] scores, then P
  float* pd = nullptr;  // [Br][Bc] P_d (dropout only; else P_d is P)
  float* keep = nullptr;
  float* ds = nullptr;       // [Br][Bc] dP, then dS
  uint16_t* pd16 = nullptr;  // [Br][Bc] P_d rounded to bf16 (native path only)
  uint16_t* ds16 = nullptr;  // [Br][Bc] dS rounded to bf16 (native path only)
  float* dk = nullptr;       // [Bc][dq]
  float* dv = nullptr;       // [Bc][dv]
  float* rowMax = nullptr;
  float* rowSum = nullptr;
  void* gemm = nullptr;
};

struct Dims {
  int64_t dq, dv, group;
  FaOperands operands;  // of the tile products
};

Dims dimsOf(const FaProblem& p) { return {p.d + p.dRope, p.dv, p.n2 > 0 ? p.n1 / p.n2 : 1, faOperands(p)}; }

// The five tile products at full tile size (tails shrink m, n or k).
GemmShape scoreGemm(const Dims& d) {
  return faProduct(kRows, kCols, d.dq, false, true, d.dq, d.dq, kCols, d.operands, false);
}
GemmShape dValueGemm(const Dims& d) {
  return faProduct(kCols, d.dv, kRows, true, false, kCols, d.dv, d.dv, d.operands, true);
}
GemmShape dProbGemm(const Dims& d) {
  return faProduct(kRows, kCols, d.dv, false, true, d.dv, d.dv, kCols, d.operands, false);
}
GemmShape dKeyGemm(const Dims& d) {
  return faProduct(kCols, d.dq, kRows, true, false, kCols, d.dq, d.dq, d.operands, true);
}
GemmShape dQueryGemm(const Dims& d) {
  return faProduct(kRows, d.dq, kCols, false, false, kCols, d.dq, d.dq, d.operands, true);
}

BackwardSlot carveSlot(const FaProblem& p, FaArena& arena) {
  const Dims d = dimsOf(p);
  const bool dropout = p.dropout.kind != FaDropoutKind::None;
  BackwardSlot slot;
  slot.q = arena.take<float>(kRows * d.dq);
  slot.dy = arena.take<float>(kRows * d.dv);
  slot.o = arena.take<float>(kRows * d.dv);
  slot.k = arena.take<float>(kCols * d.dq);
  slot.v = arena.take<float>(kCols * d.dv);
  slot.p = arena.take<float>(kRows * kCols);
  if (dropout) {
    slot.pd = arena.take<float>(kRows * kCols);
    slot.keep = arena.take<float>(kRows * kCols);
  }
  slot.ds = arena.take<float>(kRows * kCols);
  if (p.tilePath == TilePath::NativeBf16) {
    slot.pd16 = arena.take<uint16_t>(kRows * kCols);
    slot.ds16 = arena.take<uint16_t>(kRows * kCols);
  }
  slot.dk = arena.take<float>(kCols * d.dq);
  slot.dv = arena.take<float>(kCols * d.dv);
  slot.rowMax = arena.take<float>(kRows);
  slot.rowSum = arena.take<float>(kRows);
  size_t gemm = 0;
  for (const GemmShape& g : {scoreGemm(d), dValueGemm(d), dProbGemm(d), dKeyGemm(d), dQueryGemm(d)}) {
    gemm = std::max(gemm, faGemmScratchBytes(g));
  }
  slot.gemm = arena.take<char>(static_cast<int64_t>(gemm));
  return slot;
}

template <class Fn>
void runTasks(const FaProblem& p, const FaSchedule& schedule, char* slots, int64_t count, const Fn& fn) {
  faRunTasks(
      slots, schedule.slotBytes, schedule.threads, count, [&p](FaArena& arena) { return carveSlot(p, arena); }, fn);
}

using RowTask = FaRowTask;
using ChunkTask = FaChunkTask;

void storeWithRope(const float* src, const FaView& main, const FaView& rope, int64_t dRope, int64_t d, int64_t b,
                   int64_t head, int64_t row0, int64_t rows) {
  const int64_t dq = d + dRope;
  faStoreRows(src, dq, main, b, head, row0, rows, d);
  if (dRope > 0) faStoreRows(src + d, dq, rope, b, head, row0, rows, dRope);
}

/**
 * Pass A: D_i of one query block, accumulated exactly as the tile products accumulate dP (one fused multiply-add per
 * column, in column order, from 0: core/tile_gemm.h). So where attentionIn's row equals a value row (a query that
 * sees one key) dP - D cancels to exactly 0, as the golden's and a naive computation's do, instead of leaving an ulp.
 */
void rowDots(const FaBackwardIo& io, const FaBatch& batch, const RowTask& task, int64_t dv, float* d,
             const BackwardSlot& slot) {
  const int64_t rows = std::min(kRows, batch.s1 - task.r0);
  faLoadRows(io.dy, task.b, task.n1, batch.qFirst + task.r0, rows, dv, slot.dy, dv);
  faLoadRows(io.attentionIn, task.b, task.n1, batch.qFirst + task.r0, rows, dv, slot.o, dv);
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = slot.dy + r * dv;
    const float* y = slot.o + r * dv;
    float sum = 0.0f;
    for (int64_t c = 0; c < dv; ++c) sum = std::fma(x[c], y[c], sum);
    d[task.r0 + r] = sum;
  }
}

class Backward {
 public:
  Backward(const FaProblem& p, const FaBackwardIo& io, const FaKernelTable& kernels, const FaChunkLayout& layout,
           float* dBuffer, float* dqBuffer)
      : p_(p),
        io_(io),
        kernels_(kernels),
        layout_(layout),
        dims_(dimsOf(p)),
        dBuffer_(dBuffer),
        dqBuffer_(dqBuffer),
        dropout_(faRunDropout(p.dropout, io.dropBits)) {}

  /** Pass B on one task. */
  void chunk(const ChunkTask& task, const BackwardSlot& slot) const {
    const FaBatch& batch = p_.batches[static_cast<size_t>(task.b)];
    const int64_t chunks = layout_.chunks[static_cast<size_t>(task.b)];
    int64_t firstBlock = 0, endBlock = 0;
    faChunkBlocks(ceilDiv(batch.s2, kCols), chunks, task.chunk, &firstBlock, &endBlock);
    float* dq = dqAccumulator(task.b, task.chunk, task.n2 * dims_.group);
    std::fill(dq, dq + dims_.group * batch.s1 * dims_.dq, 0.0f);
    for (int64_t block = firstBlock; block < endBlock; ++block) keyBlock(task, batch, block * kCols, slot);
  }

  /** Pass C on one query block: the chunks summed in order into chunk 0's rows, rounded and stored. */
  void finishQueries(const RowTask& task) const {
    const FaBatch& batch = p_.batches[static_cast<size_t>(task.b)];
    const int64_t rows = std::min(kRows, batch.s1 - task.r0);
    const int64_t chunks = layout_.chunks[static_cast<size_t>(task.b)];
    const int64_t row0 = batch.qFirst + task.r0;
    if (chunks == 0) {  // no keys: dq = 0
      faZeroRows(io_.dq, task.b, task.n1, row0, rows, p_.d);
      if (p_.dRope > 0) faZeroRows(io_.dqRope, task.b, task.n1, row0, rows, p_.dRope);
      return;
    }
    const int64_t count = rows * dims_.dq;
    float* sum = dqAccumulator(task.b, 0, task.n1) + task.r0 * dims_.dq;
    for (int64_t c = 1; c < chunks; ++c) {
      const float* part = dqAccumulator(task.b, c, task.n1) + task.r0 * dims_.dq;
      for (int64_t e = 0; e < count; ++e) sum[e] = sum[e] + part[e];
    }
    storeWithRope(sum, io_.dq, io_.dqRope, p_.dRope, p_.d, task.b, task.n1, row0, rows);
  }

 private:
  float* dqAccumulator(int64_t b, int64_t chunk, int64_t n1) const {
    const FaBatch& batch = p_.batches[static_cast<size_t>(b)];
    return dqBuffer_ + layout_.dqOffset[static_cast<size_t>(b)] + ((chunk * p_.n1 + n1) * batch.s1) * dims_.dq;
  }

  /** A key block's rows for the products: fp32 views are read in place. */
  struct KeyRows {
    int64_t c0 = 0, cols = 0;
    const void* k = nullptr;  // fp32 or bf16 (Dims::type)
    const void* v = nullptr;
    int64_t ldk = 0, ldv = 0;
  };

  void keyBlock(const ChunkTask& task, const FaBatch& batch, int64_t c0, const BackwardSlot& slot) const {
    const int64_t cols = std::min(kCols, batch.s2 - c0);
    KeyRows keys;
    keys.c0 = c0;
    keys.cols = cols;
    keys.k = faOperandRows(dims_.operands.type, io_.k, io_.kRope, p_.d, p_.dRope, task.b, task.n2, batch.kvFirst + c0,
                           cols, slot.k, &keys.ldk);
    keys.v = faOperandRows(dims_.operands.type, io_.v, FaView{}, dims_.dv, 0, task.b, task.n2, batch.kvFirst + c0, cols,
                           slot.v, &keys.ldv);
    std::fill(slot.dk, slot.dk + cols * dims_.dq, 0.0f);
    std::fill(slot.dv, slot.dv + cols * dims_.dv, 0.0f);
    int64_t first = 0, last = 0;
    faBandRows(p_, batch, c0, c0 + cols, &first, &last);
    for (int64_t g = 0; g < dims_.group; ++g) {
      const int64_t n1 = task.n2 * dims_.group + g;
      for (int64_t r0 = first / kRows * kRows; r0 < last; r0 += kRows) {
        tile(task, batch, n1, r0, keys, slot);
      }
    }
    const int64_t row0 = batch.kvFirst + c0;
    storeWithRope(slot.dk, io_.dk, io_.dkRope, p_.dRope, p_.d, task.b, task.n2, row0, cols);
    faStoreRows(slot.dv, dims_.dv, io_.dv, task.b, task.n2, row0, cols, dims_.dv);
  }

  void tile(const ChunkTask& task, const FaBatch& batch, int64_t n1, int64_t r0, const KeyRows& keys,
            const BackwardSlot& slot) const {
    const int64_t rows = std::min(kRows, batch.s1 - r0);
    const FaTileKind kind = faClassifyTile(p_, batch, task.b, n1, r0, r0 + rows, keys.c0, keys.c0 + keys.cols);
    faForEachPart(p_, batch, task.b, n1, r0, rows, keys.c0, keys.cols, kind,
                  [&](int64_t offset, int64_t height, int64_t lo, int64_t width, FaTileKind part) {
                    KeyRows sub = keys;
                    sub.c0 = lo;
                    sub.cols = width;
                    sub.k = faAdvance(keys.k, (lo - keys.c0) * keys.ldk, dims_.operands.type);
                    sub.v = faAdvance(keys.v, (lo - keys.c0) * keys.ldv, dims_.operands.type);
                    tilePart(task, batch, n1, r0 + offset, height, part, sub, lo - keys.c0, slot);
                  });
  }

  /** One tile or strip: rows [r0, r0 + rows) x the columns of `keys`, at row `keyOffset` of the key block. */
  void tilePart(const ChunkTask& task, const FaBatch& batch, int64_t n1, int64_t r0, int64_t rows, FaTileKind kind,
                const KeyRows& keys, int64_t keyOffset, const BackwardSlot& slot) const {
    const int64_t c0 = keys.c0, cols = keys.cols;
    const int64_t dq = dims_.dq, dv = dims_.dv, ld = kCols;
    int64_t ldq = 0, ldy = 0;
    const void* q = faOperandRows(dims_.operands.type, io_.q, io_.qRope, p_.d, p_.dRope, task.b, n1, batch.qFirst + r0,
                                  rows, slot.q, &ldq);
    const void* dy =
        faOperandRows(dims_.operands.type, io_.dy, FaView{}, dv, 0, task.b, n1, batch.qFirst + r0, rows, slot.dy, &ldy);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t at = batch.statsBase + n1 * batch.statsHeadStride + (r0 + r) * batch.statsRowStride;
      slot.rowMax[r] = io_.softmaxMax[at];
      slot.rowSum[r] = io_.softmaxSum[at];
    }

    GemmShape score = scoreGemm(dims_);
    score.m = rows;
    score.n = cols;
    score.lda = ldq;
    score.ldb = keys.ldk;
    kernels_.gemm(score, q, keys.k, slot.p, slot.gemm);
    const float kernelScale = faPrepareScores(p_, batch, task.b, n1, r0, rows, c0, cols, kind, slot.p, ld);
    kernels_.backwardRows({slot.p, ld, rows, cols, kernelScale, slot.rowMax, slot.rowSum});

    const bool dropout = dropout_.kind != FaDropoutKind::None;
    const float dropScale = dropout_.scale;
    const void* pd = slot.p;
    if (dropout) {
      faKeepTile(dropout_, batch, n1, r0, rows, c0, cols, slot.keep, ld, kernels_.philoxBytes);
      for (int64_t r = 0; r < rows; ++r) {
        const float* prob = slot.p + r * ld;
        const float* keep = slot.keep + r * ld;
        float* out = slot.pd + r * ld;
        for (int64_t j = 0; j < cols; ++j) out[j] = prob[j] * keep[j] * dropScale;
      }
      pd = slot.pd;
    }
    if (slot.pd16 != nullptr) {  // the native path multiplies P_d in bf16
      kernels_.roundRowsToBf16(static_cast<const float*>(pd), ld, rows, cols, slot.pd16, ld);
      pd = slot.pd16;
    }
    GemmShape dValue = dValueGemm(dims_);
    dValue.m = cols;
    dValue.k = rows;
    dValue.ldb = ldy;
    kernels_.gemm(dValue, pd, dy, slot.dv + keyOffset * dv, slot.gemm);

    GemmShape dProb = dProbGemm(dims_);
    dProb.m = rows;
    dProb.n = cols;
    dProb.lda = ldy;
    dProb.ldb = keys.ldv;
    kernels_.gemm(dProb, dy, keys.v, slot.ds, slot.gemm);
    const float* dRow = dBuffer_ + layout_.dOffset[static_cast<size_t>(task.b)] + n1 * batch.s1 + r0;
    const float scale = p_.scale;
    for (int64_t r = 0; r < rows; ++r) {
      const float* prob = slot.p + r * ld;
      float* ds = slot.ds + r * ld;
      const float dI = dRow[r];
      if (dropout) {
        const float* keep = slot.keep + r * ld;
        for (int64_t j = 0; j < cols; ++j) {
          ds[j] = faFlushSubnormal(prob[j] * (ds[j] * keep[j] * dropScale - dI) * scale);
        }
      } else {
        for (int64_t j = 0; j < cols; ++j) ds[j] = faFlushSubnormal(prob[j] * (ds[j] - dI) * scale);
      }
    }

    const void* dS = slot.ds;
    if (slot.ds16 != nullptr) {  // the native path multiplies dS in bf16
      kernels_.roundRowsToBf16(slot.ds, ld, rows, cols, slot.ds16, ld);
      dS = slot.ds16;
    }
    GemmShape dKey = dKeyGemm(dims_);
    dKey.m = cols;
    dKey.k = rows;
    dKey.ldb = ldq;
    kernels_.gemm(dKey, dS, q, slot.dk + keyOffset * dq, slot.gemm);
    GemmShape dQuery = dQueryGemm(dims_);
    dQuery.m = rows;
    dQuery.k = cols;
    dQuery.ldb = keys.ldk;
    float* dqRows = dqAccumulator(task.b, task.chunk, n1) + r0 * dq;
    kernels_.gemm(dQuery, dS, keys.k, dqRows, slot.gemm);
  }

  const FaProblem& p_;
  const FaBackwardIo& io_;
  const FaKernelTable& kernels_;
  const FaChunkLayout& layout_;
  Dims dims_;
  float* dBuffer_;
  float* dqBuffer_;
  FaDropout dropout_;  // the problem's, with this run's packed bits
};

}  // namespace

FaSchedule faBackwardSchedule(const FaProblem& p, int threads) {
  FaSchedule schedule = faBackwardScheduleOf(p, kRows, kCols, dimsOf(p).dq, threads);
  if (schedule.rows.empty() && schedule.chunks.empty()) return schedule;
  FaArena counter(nullptr);
  carveSlot(p, counter);
  schedule.slotBytes = counter.used();
  return schedule;
}

void faBackward(const FaProblem& p, const FaSchedule& schedule, const FaBackwardIo& io, void* scratch) {
  if (schedule.slotBytes == 0) return;
  const FaChunkLayout& layout = schedule.layout;
  FaArena arena(scratch);
  float* dBuffer = arena.take<float>(layout.dFloats);
  float* dqBuffer = arena.take<float>(layout.dqFloats);
  char* slots = static_cast<char*>(scratch) + arena.used();
  const Backward backward(p, io, *schedule.kernels, layout, dBuffer, dqBuffer);

  const auto rowCount = static_cast<int64_t>(schedule.rows.size());
  runTasks(p, schedule, slots, rowCount, [&](int64_t t, const BackwardSlot& slot) {
    const FaRowTask& task = schedule.rows[static_cast<size_t>(t)];
    const FaBatch& batch = p.batches[static_cast<size_t>(task.b)];
    float* d = dBuffer + layout.dOffset[static_cast<size_t>(task.b)] + task.n1 * batch.s1;
    rowDots(io, batch, task, p.dv, d, slot);
  });
  runTasks(p, schedule, slots, static_cast<int64_t>(schedule.chunks.size()),
           [&](int64_t t, const BackwardSlot& slot) { backward.chunk(schedule.chunks[static_cast<size_t>(t)], slot); });
  runTasks(p, schedule, slots, rowCount,
           [&](int64_t t, const BackwardSlot&) { backward.finishQueries(schedule.rows[static_cast<size_t>(t)]); });
}

}  // namespace gradkit::kernels
