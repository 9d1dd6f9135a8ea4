// The FP8 flash attention backward (fa_kernel.h faBackwardFp8, spec fag.md 5.9), on 128 x 128 tiles so that every
// tile is one de-quant block of each side and one dS quantisation block. Three passes, as the fp16/bf16 backward:
//   A  Drow_i = rowsum(attentionIn o (dy8 * dScaleDy)) per query row (tasks: batch, query head, query block);
//   B  tasks (batch, kv head, key chunk): for each key block of the chunk, each query head of the group and each query
//      block the band leaves, in order:
//        X    = (q8 k8^T) * (dScaleQ * dScaleK)          P from X, the pse, the scale, the mask and the statistics
//        P_d8 = fp8(P * keep * dropScale)                dV += (P_d8^T dy8) * dScaleDy
//        dP   = (dy8 v8^T) * (dScaleDy * dScaleV)        dS = (dP * keep * dropScale - Drow) * P
//        s    = FP8_MAX / max|dS| (0 below 1e-8)         dS8 = fp8(dS * s), deq = 1 / s (0 when s = 0)
//        dK  += (dS8^T q8) * (deq * dScaleQ * scale)     dQ_chunk += (dS8 k8) * (deq * dScaleK * scale)
//      dK and dV of a key block are finished in the task and rounded once to the out dtype;
//   C  dq = the chunks' accumulators summed in chunk order, rounded once.
// The fp8 codes are widened exactly to fp32 and multiplied by TileGemm (fp32 accumulation; fp8 x fp8 products are
// exact); with Bf16Pairs sums (FaProblem::tileSums, where the CPU has AVX512-BF16) they are widened to bf16, also
// exactly, and summed in VDPBF16PS's pairs (no fp8 product or sum of them is an fp32 subnormal, so its flushing never
// applies). Tasks depend on the shape only and write their own memory: the bits never depend on the thread count.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/fp8.h"
#include "core/tile_gemm.h"
#include "ops/flash_attention/kernels/fa_backward_tasks.h"
#include "ops/flash_attention/kernels/fa_kernel.h"
#include "ops/flash_attention/kernels/fa_softmax.h"
#include "ops/flash_attention/kernels/fa_tile.h"

namespace gradkit::kernels {
namespace {

constexpr int64_t kBlock = kFaFp8BlockRows;
constexpr double kDsEpsilon = 1e-8;  // dS blocks whose max |dS| is below this get scale 0 (spec 5.9)
/** One worker's tiles (row-major, leading dim = their width). */
struct Slot {
  float* q = nullptr;     // [B][d]
  float* dy = nullptr;    // [B][dv] dy8 values
  float* o = nullptr;     // [B][dv] attentionIn (pass A)
  float* k = nullptr;     // [B][d]
  float* v = nullptr;     // [B][dv]
  float* p = nullptr;     // [B][B] scores, then P
  float* pd = nullptr;    // [B][B] P_d8
  float* keep = nullptr;  // [B][B] (dropout only)
  float* ds = nullptr;    // [B][B] dP, then dS, then dS8
  float* dk = nullptr;    // [B][d]
  float* dv = nullptr;    // [B][dv]
  float* rowMax = nullptr;
  float* rowSum = nullptr;
  void* gemm = nullptr;
  // Bf16Pairs only: the operands of the products as bf16 bits (the float tiles above keep what the other steps read).
  uint16_t *q16 = nullptr, *dy16 = nullptr, *k16 = nullptr, *v16 = nullptr, *pd16 = nullptr, *ds16 = nullptr;
};

bool inPairs(const FaProblem& p) { return p.tileSums == GemmSums::Bf16Pairs; }

TileGemmShape product(const FaProblem& p, int64_t m, int64_t n, int64_t k, bool transA, bool transB, bool accumulate) {
  TileGemmShape s;
  s.m = m, s.n = n, s.k = k;
  s.transA = transA, s.transB = transB;
  s.lda = transA ? m : k;
  s.ldb = transB ? k : n;
  s.ldc = n;
  s.inputType = inPairs(p) ? ACL_BF16 : ACL_FLOAT;
  s.sums = p.tileSums;
  s.beta = accumulate ? 1.0f : 0.0f;
  return s;
}

// The five products at full tile size, dense operands (tails shrink m, n or k and keep the leading dims).
TileGemmShape scoreShape(const FaProblem& p) { return product(p, kBlock, kBlock, p.d, false, true, false); }
TileGemmShape dValueShape(const FaProblem& p) { return product(p, kBlock, p.dv, kBlock, true, false, true); }
TileGemmShape dProbShape(const FaProblem& p) { return product(p, kBlock, kBlock, p.dv, false, true, false); }
TileGemmShape dKeyShape(const FaProblem& p) { return product(p, kBlock, p.d, kBlock, true, false, true); }
TileGemmShape dQueryShape(const FaProblem& p) { return product(p, kBlock, p.d, kBlock, false, false, true); }

/** Runs `full` shrunk to m x n x k (leading dims kept) with `alpha`; a and b are fp32 or bf16 as the shape says. */
void runProduct(TileGemmShape full, int64_t m, int64_t n, int64_t k, float alpha, const void* a, const void* b,
                float* c, void* scratch) {
  if (m <= 0 || n <= 0) return;
  full.m = m, full.n = n, full.k = k;
  full.alpha = alpha;
  TileGemm(full).run(a, b, c, scratch);
}

Slot carveSlot(const FaProblem& p, FaArena& arena) {
  const int64_t d = p.d, dv = p.dv;
  Slot slot;
  slot.q = arena.take<float>(kBlock * d);
  slot.dy = arena.take<float>(kBlock * dv);
  slot.o = arena.take<float>(kBlock * dv);
  slot.k = arena.take<float>(kBlock * d);
  slot.v = arena.take<float>(kBlock * dv);
  slot.p = arena.take<float>(kBlock * kBlock);
  slot.pd = arena.take<float>(kBlock * kBlock);
  if (p.dropout.kind != FaDropoutKind::None) slot.keep = arena.take<float>(kBlock * kBlock);
  slot.ds = arena.take<float>(kBlock * kBlock);
  slot.dk = arena.take<float>(kBlock * d);
  slot.dv = arena.take<float>(kBlock * dv);
  slot.rowMax = arena.take<float>(kBlock);
  slot.rowSum = arena.take<float>(kBlock);
  if (inPairs(p)) {
    slot.q16 = arena.take<uint16_t>(kBlock * d);
    slot.dy16 = arena.take<uint16_t>(kBlock * dv);
    slot.k16 = arena.take<uint16_t>(kBlock * d);
    slot.v16 = arena.take<uint16_t>(kBlock * dv);
    slot.pd16 = arena.take<uint16_t>(kBlock * kBlock);
    slot.ds16 = arena.take<uint16_t>(kBlock * kBlock);
  }
  size_t gemm = 0;
  for (const TileGemmShape& s : {scoreShape(p), dValueShape(p), dProbShape(p), dKeyShape(p), dQueryShape(p)})
    gemm = std::max(gemm, TileGemm(s).scratchBytes());
  slot.gemm = arena.take<char>(static_cast<int64_t>(gemm));
  return slot;
}

template <class Fn>
void runTasks(const FaProblem& p, const FaSchedule& schedule, char* slots, int64_t count, const Fn& fn) {
  faRunTasks(
      slots, schedule.slotBytes, schedule.threads, count, [&p](FaArena& arena) { return carveSlot(p, arena); }, fn);
}

/** Rows [row0, row0 + rows) of (b, head) of an fp8 view, columns [0, cols), decoded into dst (leading dim cols). */
void loadFp8Rows(const FaView& view, const float* table, int64_t b, int64_t head, int64_t row0, int64_t rows,
                 int64_t cols, float* dst) {
  const auto* base = static_cast<const uint8_t*>(view.data) + b * view.strideBatch + head * view.strideHead;
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* src = base + (row0 + r) * view.strideRow;
    float* out = dst + r * cols;
    if (view.strideCol == 1) {
      for (int64_t c = 0; c < cols; ++c) out[c] = table[src[c]];
    } else {
      for (int64_t c = 0; c < cols; ++c) out[c] = table[src[c * view.strideCol]];
    }
  }
}

/** rows x cols fp8 values (exact in bf16) as bf16 bits: the high half of each float. */
void toBf16Bits(const float* src, int64_t ld, int64_t rows, int64_t cols, uint16_t* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      uint32_t bits;
      std::memcpy(&bits, src + r * ld + c, sizeof(bits));
      dst[r * ld + c] = static_cast<uint16_t>(bits >> 16);
    }
  }
}

/** The de-quant scale of block `blk` of (b, head). */
float scaleAt(const FaView& view, int64_t b, int64_t head, int64_t blk) {
  return static_cast<const float*>(view.data)[b * view.strideBatch + head * view.strideHead + blk * view.strideRow];
}

using RowTask = FaRowTask;
using ChunkTask = FaChunkTask;

class Fp8Backward {
 public:
  Fp8Backward(const FaProblem& p, const FaBackwardIo& io, const FaFp8Scales& scales, const FaSchedule& schedule,
              float* dBuffer, float* dqBuffer)
      : p_(p),
        io_(io),
        scales_(scales),
        kernels_(*schedule.kernels),
        layout_(schedule.layout),
        dBuffer_(dBuffer),
        dqBuffer_(dqBuffer),
        dropout_(faRunDropout(p.dropout, io.dropBits)) {
    fp8FormatOf(io.q.dtype, &format_);
    table_ = fp8DecodeTable(format_);
  }

  /** Pass A: Drow of one query block, 8 stripes of products in column order, then the stripes' tree. */
  void rowDots(const RowTask& task, const Slot& slot) const {
    const FaBatch& batch = p_.batches[static_cast<size_t>(task.b)];
    const int64_t rows = std::min(kBlock, batch.s1 - task.r0), dv = p_.dv;
    loadFp8Rows(io_.dy, table_, task.b, task.n1, batch.qFirst + task.r0, rows, dv, slot.dy);
    faLoadRows(io_.attentionIn, task.b, task.n1, batch.qFirst + task.r0, rows, dv, slot.o, dv);
    const float dyScale = scaleAt(scales_.dy, task.b, task.n1, task.r0 / kBlock);
    float* d = dBuffer_ + layout_.dOffset[static_cast<size_t>(task.b)] + task.n1 * batch.s1 + task.r0;
    for (int64_t r = 0; r < rows; ++r) {
      const float* x = slot.dy + r * dv;
      const float* y = slot.o + r * dv;
      float part[kFaStripes] = {};
      for (int64_t c = 0; c < dv; ++c) {
        const float dequantised = x[c] * dyScale;
        part[c % kFaStripes] += y[c] * dequantised;
      }
      d[r] = faReduceSum(part);
    }
  }

  /** Pass B on one task. */
  void chunk(const ChunkTask& task, const Slot& slot) const {
    const FaBatch& batch = p_.batches[static_cast<size_t>(task.b)];
    const int64_t chunks = layout_.chunks[static_cast<size_t>(task.b)];
    const int64_t group = p_.n1 / p_.n2;
    float* dq = dqAccumulator(task.b, task.chunk, task.n2 * group);
    std::fill(dq, dq + group * batch.s1 * p_.d, 0.0f);
    int64_t first = 0, end = 0;
    faChunkBlocks(ceilDiv(batch.s2, kBlock), chunks, task.chunk, &first, &end);
    for (int64_t block = first; block < end; ++block) keyBlock(task, batch, block, slot);
  }

  /** Pass C on one query block: the chunks summed in order, rounded and stored. */
  void finishQueries(const RowTask& task) const {
    const FaBatch& batch = p_.batches[static_cast<size_t>(task.b)];
    const int64_t rows = std::min(kBlock, batch.s1 - task.r0);
    const int64_t chunks = layout_.chunks[static_cast<size_t>(task.b)];
    const int64_t row0 = batch.qFirst + task.r0;
    if (chunks == 0) {
      faZeroRows(io_.dq, task.b, task.n1, row0, rows, p_.d);
      return;
    }
    const int64_t count = rows * p_.d;
    float* sum = dqAccumulator(task.b, 0, task.n1) + task.r0 * p_.d;
    for (int64_t c = 1; c < chunks; ++c) {
      const float* part = dqAccumulator(task.b, c, task.n1) + task.r0 * p_.d;
      for (int64_t e = 0; e < count; ++e) sum[e] = sum[e] + part[e];
    }
    faStoreRows(sum, p_.d, io_.dq, task.b, task.n1, row0, rows, p_.d);
  }

 private:
  /** The tile a product takes: its bf16 bits in pairs, else the fp32 values. */
  const void* operand(const float* values, const uint16_t* bits) const {
    return pairs_ ? static_cast<const void*>(bits) : values;
  }

  float* dqAccumulator(int64_t b, int64_t chunk, int64_t n1) const {
    const FaBatch& batch = p_.batches[static_cast<size_t>(b)];
    return dqBuffer_ + layout_.dqOffset[static_cast<size_t>(b)] + ((chunk * p_.n1 + n1) * batch.s1) * p_.d;
  }

  void keyBlock(const ChunkTask& task, const FaBatch& batch, int64_t block, const Slot& slot) const {
    const int64_t c0 = block * kBlock, cols = std::min(kBlock, batch.s2 - c0);
    loadFp8Rows(io_.k, table_, task.b, task.n2, batch.kvFirst + c0, cols, p_.d, slot.k);
    loadFp8Rows(io_.v, table_, task.b, task.n2, batch.kvFirst + c0, cols, p_.dv, slot.v);
    if (pairs_) {
      toBf16Bits(slot.k, p_.d, cols, p_.d, slot.k16);
      toBf16Bits(slot.v, p_.dv, cols, p_.dv, slot.v16);
    }
    std::fill(slot.dk, slot.dk + cols * p_.d, 0.0f);
    std::fill(slot.dv, slot.dv + cols * p_.dv, 0.0f);
    int64_t first = 0, last = 0;
    faBandRows(p_, batch, c0, c0 + cols, &first, &last);
    const int64_t group = p_.n1 / p_.n2;
    for (int64_t g = 0; g < group; ++g) {
      const int64_t n1 = task.n2 * group + g;
      for (int64_t r0 = first / kBlock * kBlock; r0 < last; r0 += kBlock) tile(task, batch, n1, r0, c0, cols, slot);
    }
    const int64_t row0 = batch.kvFirst + c0;
    faStoreRows(slot.dk, p_.d, io_.dk, task.b, task.n2, row0, cols, p_.d);
    faStoreRows(slot.dv, p_.dv, io_.dv, task.b, task.n2, row0, cols, p_.dv);
  }

  void tile(const ChunkTask& task, const FaBatch& batch, int64_t n1, int64_t r0, int64_t c0, int64_t cols,
            const Slot& slot) const {
    const int64_t rows = std::min(kBlock, batch.s1 - r0), d = p_.d, dv = p_.dv, ld = kBlock;
    const FaTileKind kind = faClassifyTile(p_, batch, task.b, n1, r0, r0 + rows, c0, c0 + cols);
    if (kind == FaTileKind::Skip) return;  // P = 0: dS = 0 and P_d = 0, nothing to add
    const int64_t rowBlock = r0 / kBlock, colBlock = c0 / kBlock;
    const float sq = scaleAt(scales_.q, task.b, n1, rowBlock), sdy = scaleAt(scales_.dy, task.b, n1, rowBlock);
    const float sk = scaleAt(scales_.k, task.b, task.n2, colBlock), sv = scaleAt(scales_.v, task.b, task.n2, colBlock);
    loadFp8Rows(io_.q, table_, task.b, n1, batch.qFirst + r0, rows, d, slot.q);
    loadFp8Rows(io_.dy, table_, task.b, n1, batch.qFirst + r0, rows, dv, slot.dy);
    if (pairs_) {
      toBf16Bits(slot.q, d, rows, d, slot.q16);
      toBf16Bits(slot.dy, dv, rows, dv, slot.dy16);
    }
    const void* q = operand(slot.q, slot.q16);
    const void* dy = operand(slot.dy, slot.dy16);
    const void* k = operand(slot.k, slot.k16);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t at = batch.statsBase + n1 * batch.statsHeadStride + (r0 + r) * batch.statsRowStride;
      slot.rowMax[r] = io_.softmaxMax[at];
      slot.rowSum[r] = io_.softmaxSum[at];
    }

    // P from the de-quantised scores.
    runProduct(scoreShape(p_), rows, cols, d, sq * sk, q, k, slot.p, slot.gemm);
    const float kernelScale = faPrepareScores(p_, batch, task.b, n1, r0, rows, c0, cols, kind, slot.p, ld);
    kernels_.backwardRows({slot.p, ld, rows, cols, kernelScale, slot.rowMax, slot.rowSum});

    // P_d8, then dV.
    const bool dropout = dropout_.kind != FaDropoutKind::None;
    const float dropScale = dropout_.scale;
    if (dropout) faKeepTile(dropout_, batch, n1, r0, rows, c0, cols, slot.keep, ld, kernels_.philoxBytes);
    for (int64_t r = 0; r < rows; ++r) {
      const float* prob = slot.p + r * ld;
      float* out = slot.pd + r * ld;
      if (dropout) {
        const float* keep = slot.keep + r * ld;
        for (int64_t j = 0; j < cols; ++j) out[j] = prob[j] * keep[j] * dropScale;
      } else {
        std::copy(prob, prob + cols, out);
      }
      fp8RoundInPlace(format_, out, cols);
    }
    if (pairs_) toBf16Bits(slot.pd, ld, rows, cols, slot.pd16);
    runProduct(dValueShape(p_), cols, dv, rows, sdy, operand(slot.pd, slot.pd16), dy, slot.dv, slot.gemm);

    // dP, dS and its block quantisation.
    runProduct(dProbShape(p_), rows, cols, dv, sdy * sv, dy, operand(slot.v, slot.v16), slot.ds, slot.gemm);
    const float* dRow = dBuffer_ + layout_.dOffset[static_cast<size_t>(task.b)] + n1 * batch.s1 + r0;
    float top = 0.0f;
    for (int64_t r = 0; r < rows; ++r) {
      const float* prob = slot.p + r * ld;
      float* ds = slot.ds + r * ld;
      const float dI = dRow[r];
      if (dropout) {
        const float* keep = slot.keep + r * ld;
        for (int64_t j = 0; j < cols; ++j) ds[j] = (ds[j] * keep[j] * dropScale - dI) * prob[j];
      } else {
        for (int64_t j = 0; j < cols; ++j) ds[j] = (ds[j] - dI) * prob[j];
      }
      for (int64_t j = 0; j < cols; ++j) top = faMaxStep(top, std::fabs(ds[j]));  // NaN-propagating
    }
    // Scale 0: the block adds 0. A NaN or infinite dS (from NaN or overflowing de-quant scales) makes a NaN or
    // infinite quantisation scale, which reaches dK and dQ as NaN data does everywhere else.
    if (top < static_cast<float>(kDsEpsilon)) return;
    const float quantScale = fp8MaxOf(format_) / top;
    const float dequant = 1.0f / quantScale;
    for (int64_t r = 0; r < rows; ++r) {
      float* ds = slot.ds + r * ld;
      for (int64_t j = 0; j < cols; ++j) ds[j] = ds[j] * quantScale;
      fp8RoundInPlace(format_, ds, cols);
    }
    if (pairs_) toBf16Bits(slot.ds, ld, rows, cols, slot.ds16);
    const void* ds = operand(slot.ds, slot.ds16);
    const float scale = p_.scale;
    runProduct(dKeyShape(p_), cols, d, rows, dequant * sq * scale, ds, q, slot.dk, slot.gemm);
    float* dqRows = dqAccumulator(task.b, task.chunk, n1) + r0 * d;
    runProduct(dQueryShape(p_), rows, d, cols, dequant * sk * scale, ds, k, dqRows, slot.gemm);
  }

  const FaProblem& p_;
  const FaBackwardIo& io_;
  const FaFp8Scales& scales_;
  const FaKernelTable& kernels_;
  const FaChunkLayout& layout_;
  float* dBuffer_;
  float* dqBuffer_;
  FaDropout dropout_;  // the problem's, with this run's packed bits
  Fp8Format format_ = Fp8Format::E5M2;
  const float* table_ = nullptr;
  bool pairs_ = inPairs(p_);
};

}  // namespace

FaSchedule faBackwardFp8Schedule(const FaProblem& p, int threads) {
  FaSchedule schedule = faBackwardScheduleOf(p, kBlock, kBlock, p.d, threads);
  if (schedule.rows.empty() && schedule.chunks.empty()) return schedule;
  FaArena counter(nullptr);
  carveSlot(p, counter);
  schedule.slotBytes = counter.used();
  return schedule;
}

void faBackwardFp8(const FaProblem& p, const FaSchedule& schedule, const FaBackwardIo& io, const FaFp8Scales& scales,
                   void* scratch) {
  if (schedule.slotBytes == 0) return;
  FaArena arena(scratch);
  float* dBuffer = arena.take<float>(schedule.layout.dFloats);
  float* dqBuffer = arena.take<float>(schedule.layout.dqFloats);
  char* slots = static_cast<char*>(scratch) + arena.used();
  const Fp8Backward backward(p, io, scales, schedule, dBuffer, dqBuffer);
  const std::vector<RowTask>& rows = schedule.rows;
  const auto rowCount = static_cast<int64_t>(rows.size());
  runTasks(p, schedule, slots, rowCount,
           [&](int64_t t, const Slot& slot) { backward.rowDots(rows[static_cast<size_t>(t)], slot); });
  runTasks(p, schedule, slots, static_cast<int64_t>(schedule.chunks.size()),
           [&](int64_t t, const Slot& slot) { backward.chunk(schedule.chunks[static_cast<size_t>(t)], slot); });
  runTasks(p, schedule, slots, rowCount,
           [&](int64_t t, const Slot&) { backward.finishQueries(rows[static_cast<size_t>(t)]); });
}

}  // namespace gradkit::kernels
