// The backward of sparse MLA attention: one task per chunk of query rows (smla_grad_kernel.h), its rows in order, all
// N1 heads of a row at once. Per draw of keys of one part (ori or cmp; smla_keys.h), gathered once
// (K = V; read in place when already bf16 operands in consecutive rows):
//   [S; dP] = [Q; dO] K^T                                          (TileGemm, the keys packed once)
//   P = exp(S * scale - lse)                                       (flash attention's backward rows)
//   dS = P (dP - D), D = rowsum(dO * O)                            (row sums: flash attention's 8 stripes and tree)
//   P and dS rounded to bf16 on the native path (upstream rounds them for its cube unit; the scale is applied after,
//   in fp32, as upstream's post step does)
//   dq += scale * dS K                                             (TileGemm)
//   dKV rows += (P^T dO + scale * dS^T Q)                          (TileGemmRowsAdd: the two products summed, then
//                                                                   added to the keys' accumulator rows by address in
//                                                                   draw order, so repeated keys add up)
// The dense ori keys (window, causal or all) of up to 8 consecutive rows of a batch go through these products together
// (blockDenseOri: 8x taller products, each row's heads masked to their own keys); the compressed part runs per row.
// Draws are of up to 256 keys. dSinks takes -e^(sink - lse) sum_j P dP per row. The steps between the products are a
// kernel table (smla_grad_ops.h). Every sum runs in an order fixed by the rows and their keys: the bits depend neither
// on the threads nor on the kernel tables.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/parallel.h"
#include "core/tile_gemm.h"
#include "ops/flash_attention/kernels/fa_softmax.h"
#include "ops/flash_attention/kernels/fa_tile.h"
#include "ops/sparse_attention/kernels/smla_grad_kernel.h"
#include "ops/sparse_attention/kernels/smla_grad_ops.h"
#include "ops/sparse_attention/kernels/smla_keys.h"
#include "ops/sparse_attention/kernels/smla_operands.h"

namespace gradkit::kernels {
namespace {

constexpr int64_t kTile = 2 * kSmlaKeyTile;

/**
 * Query rows whose dense ori keys one product takes: consecutive rows of a batch share most of their window, so up to 8
 * rows (at most 128 query heads) go through the ori part together, each masked to its own keys. 1 with ori lists.
 */
constexpr int64_t kMaxBlockRows = 8;

int64_t blockRowsOf(const SmlaProblem& p) {
  return p.oriIndices.k > 0 ? 1 : std::clamp<int64_t>(128 / std::max<int64_t>(p.n1, 1), 1, kMaxBlockRows);
}

/** One worker's buffers (M = blockRowsOf * n1 query heads). */
struct GradSlot {
  void* qdo = nullptr;          // [2 M][d] operands: the heads' q rows, then their dOut rows
  void* keys = nullptr;         // [kTile][d] operands
  float* s = nullptr;           // [2 M][kTile] for m <= M heads: rows [0, m) S then P, rows [m, 2m) dP then dS
  uint16_t* a16 = nullptr;      // [2 M][kTile] native path: P and dS rounded to bf16 (else s is the operand)
  float* dq = nullptr;          // [M][d] the block's dq accumulators
  float* tile = nullptr;        // [kTile][d] a draw's KV gradients where the key gradients' products are not fused
  float** gradRows = nullptr;   // [kTile] the draw's keys' accumulator rows
  float* dRow = nullptr;        // [M] D
  float* pdp = nullptr;         // [M] sum_j P dP
  float* ones = nullptr;        // [M] the row sums FaBackwardRows divides by
  const void** rows = nullptr;  // [kTile]
  int64_t* keyRows = nullptr;   // [kTile]
  int32_t* slots = nullptr;     // [kTile]
  void* gemmScratch = nullptr;
};

/** [S; dP] = [Q; dO] K^T for m query heads: both score tiles in one product of 2 m rows (the keys packed once). */
GemmShape scoreShape(const SmlaProblem& p, int64_t m, int64_t keys, int64_t keysLd) {
  return {2 * m, keys, p.d, false, true, p.d, keysLd, kTile, smlaProductType(p), 1.0f, 0.0f, p.tileSums};
}

/** dq += scale * dS K (keysLd: elements between key rows: d when gathered, the KV row stride when read in place). */
GemmShape dqShape(const SmlaProblem& p, int64_t m, int64_t keys, int64_t keysLd) {
  return {m, p.d, keys, false, false, kTile, keysLd, p.d, smlaProductType(p), p.scale, 1.0f, p.tileSums};
}

/** One product of the keys' gradient rows: alpha * X^T Y with X = P or dS ([m][keys]) and Y = dO or Q ([m][d]). */
GemmShape dkvShape(const SmlaProblem& p, int64_t m, int64_t keys, float alpha) {
  return {keys, p.d, m, true, false, kTile, p.d, p.d, smlaProductType(p), alpha, 0.0f, p.tileSums};
}

size_t gemmScratchBytes(const SmlaProblem& p) {
  size_t bytes = 0;
  for (const int64_t m : {p.n1, blockRowsOf(p) * p.n1}) {
    for (int64_t keys = 1; keys <= kTile; ++keys) {
      // The scratch holds packed operands: it depends on the sizes, not on the leading dims.
      bytes = std::max({bytes, TileGemm(scoreShape(p, m, keys, p.d)).scratchBytes(),
                        TileGemm(dqShape(p, m, keys, p.d)).scratchBytes(),
                        smlaKeyGradientsScratchBytes(dkvShape(p, m, keys, 1.0f), dkvShape(p, m, keys, p.scale))});
    }
  }
  return bytes;
}

GradSlot carveSlot(const SmlaProblem& p, FaArena& arena) {
  const int64_t bytes = smlaOperandBytes(smlaProductType(p)), m = blockRowsOf(p) * p.n1;
  GradSlot slot;
  slot.qdo = arena.take<char>(2 * m * p.d * bytes);
  slot.keys = arena.take<char>(kTile * p.d * bytes);
  slot.s = arena.take<float>(2 * m * kTile);
  if (p.tilePath == TilePath::NativeBf16) slot.a16 = arena.take<uint16_t>(2 * m * kTile);
  slot.dq = arena.take<float>(m * p.d);
  slot.tile = arena.take<float>(kTile * p.d);
  slot.dRow = arena.take<float>(m);
  slot.pdp = arena.take<float>(m);
  slot.ones = arena.take<float>(m);
  slot.rows = arena.take<const void*>(kTile);
  slot.gradRows = arena.take<float*>(kTile);
  slot.keyRows = arena.take<int64_t>(kTile);
  slot.slots = arena.take<int32_t>(kTile);
  slot.gemmScratch = arena.take<char>(static_cast<int64_t>(gemmScratchBytes(p)));
  return slot;
}

/** A chunk's accumulators as one row's draws address them. */
struct ChunkAccumulators {
  float* ori = nullptr;  // row g at ori + (g - oriLo) * d
  float* cmp = nullptr;
  float* sinks = nullptr;  // [n1]
  int64_t oriLo = 0, cmpLo = 0;
};

/** One query row's state: its accumulators in the slot's block buffers. */
struct RowState {
  int64_t b = 0, i = 0, token = 0;
  float* dq = nullptr;    // [n1][d]
  float* dRow = nullptr;  // [n1]
  float* pdp = nullptr;   // [n1]
  int64_t seen = 0;       // keys the row saw
};

/** D, the zeroed sums and dq, the zeroed L1 rows. */
void startRow(const SmlaProblem& p, const SmlaGradOps& ops, const SmlaGradIo& io, const RowState& row) {
  const int64_t rowElements = p.n1 * p.d;
  const auto* dOut = static_cast<const uint16_t*>(io.dOut) + row.token * rowElements;
  const auto* out = static_cast<const uint16_t*>(io.out) + row.token * rowElements;
  for (int64_t n = 0; n < p.n1; ++n) {
    row.dRow[n] = ops.ioDot(p.ioType, dOut + n * p.d, out + n * p.d, p.d);
    row.pdp[n] = 0.0f;
  }
  std::fill(row.dq, row.dq + rowElements, 0.0f);
  if (io.oriL1 != nullptr) std::fill_n(io.oriL1 + row.token * p.oriIndices.k, p.oriIndices.k, 0.0f);
  if (io.cmpL1 != nullptr) std::fill_n(io.cmpL1 + row.token * p.cmpIndices.k, p.cmpIndices.k, 0.0f);
}

/** The keys of one draw as product operands: in place when consecutive bf16 rows (stride >= d), else gathered. */
const void* keyOperandsOf(const SmlaProblem& p, const GradSlot& slot, int64_t keys, int64_t rowStride,
                          int64_t* keysLd) {
  const aclDataType type = smlaProductType(p);
  if (rowStride >= p.d && type == ACL_BF16) {  // (a hostile view may overlap its rows: a smaller stride is gathered)
    *keysLd = rowStride;
    return slot.rows[0];
  }
  smlaLoadKeyOperands(p, slot.rows, keys, slot.keys);
  *keysLd = p.d;
  return slot.keys;
}

/**
 * One draw of m query heads against `keys` keys whose scores are in slot.s (S rows, then dP rows): the sums P dP, dS in
 * place of dP, the bf16 rounding, dq += scale dS K, and (slot.gradRows filled) the keys' accumulator rows
 * += P^T dO + scale dS^T Q.
 */
void drawGradients(const SmlaProblem& p, const SmlaGradSchedule& sched, const GradSlot& slot, int64_t m, int64_t keys,
                   const void* keyOperands, int64_t keysLd, const float* dRow, float* pdp, float* dq,
                   const char* qOperands, bool keyGradients) {
  const FaKernelTable& table = *sched.kernels;
  const SmlaGradOps& ops = *sched.gradOps;
  const int64_t bytes = smlaOperandBytes(smlaProductType(p));
  for (int64_t n = 0; n < m; ++n) {
    pdp[n] += ops.scoreGradients(slot.s + n * kTile, slot.s + (m + n) * kTile, keys, dRow[n]);
  }
  if (slot.a16 != nullptr) ops.roundRowsToBf16(slot.s, kTile, 2 * m, keys, slot.a16, kTile);
  // [P; dS] as operands: the fp32 tiles themselves, or their bf16 rounding.
  const void* pOperands = slot.a16 != nullptr ? static_cast<const void*>(slot.a16) : slot.s;
  const void* dsOperands = static_cast<const char*>(pOperands) + m * kTile * bytes;
  table.gemm(dqShape(p, m, keys, keysLd), dsOperands, keyOperands, dq, slot.gemmScratch);
  if (!keyGradients) return;
  ops.keyGradients(dkvShape(p, m, keys, 1.0f), pOperands, qOperands + m * p.d * bytes, dkvShape(p, m, keys, p.scale),
                   dsOperands, qOperands, slot.gradRows, slot.tile, slot.gemmScratch);
}

/** The draws of one row (its dense ori keys left out when the block took them). */
void rowDraws(const SmlaProblem& p, const SmlaGradSchedule& sched, const SmlaGradIo& io, const GradSlot& slot,
              const ChunkAccumulators& acc, RowState& row, bool skipDenseOri) {
  const FaKernelTable& table = *sched.kernels;
  const aclDataType type = smlaProductType(p);
  const int64_t bytes = smlaOperandBytes(type), rowElements = p.n1 * p.d;
  auto* operands = static_cast<char*>(slot.qdo);
  smlaLoadOperands(p.ioType, type, static_cast<const uint16_t*>(io.q) + row.token * rowElements, rowElements, operands);
  smlaLoadOperands(p.ioType, type, static_cast<const uint16_t*>(io.dOut) + row.token * rowElements, rowElements,
                   operands + rowElements * bytes);
  const float* lse = io.lse + row.token * p.n1;
  float* oriL1 = io.oriL1 == nullptr ? nullptr : io.oriL1 + row.token * p.oriIndices.k;
  float* cmpL1 = io.cmpL1 == nullptr ? nullptr : io.cmpL1 + row.token * p.cmpIndices.k;
  SmlaKeyCursor cursor(p, row.b, row.i, row.token);
  SmlaKeyTrace trace;
  trace.keys = slot.keyRows;
  trace.slots = slot.slots;
  if (skipDenseOri) cursor.skipOriPart();
  for (int64_t keys = cursor.nextOfOnePart(slot.rows, kTile, trace); keys > 0;
       keys = cursor.nextOfOnePart(slot.rows, kTile, trace)) {
    row.seen += keys;
    int64_t keysLd = p.d;
    const void* keyOperands = keyOperandsOf(p, slot, keys, trace.rowStride, &keysLd);
    table.gemm(scoreShape(p, p.n1, keys, keysLd), slot.qdo, keyOperands, slot.s, slot.gemmScratch);
    table.backwardRows(FaBackwardRows{slot.s, kTile, p.n1, keys, p.scale, lse, slot.ones});
    float* l1 = trace.cmp ? cmpL1 : oriL1;
    if (l1 != nullptr && !trace.dense) {  // before the products: P unrounded
      for (int64_t j = 0; j < keys; ++j) {
        float sum = 0.0f;
        for (int64_t n = 0; n < p.n1; ++n) sum += slot.s[n * kTile + j];
        l1[slot.slots[j]] = sum / static_cast<float>(p.n1);
      }
    }
    float* part = trace.cmp ? acc.cmp : acc.ori;
    const int64_t row0 = (trace.cmp ? sched.cmpRow0 : sched.oriRow0)[static_cast<size_t>(row.b)];
    const int64_t lo = trace.cmp ? acc.cmpLo : acc.oriLo;
    if (part != nullptr) {  // the keys' accumulator rows (a listed key may repeat: its sums add up in list order)
      for (int64_t r = 0; r < keys; ++r) slot.gradRows[r] = part + (row0 + slot.keyRows[r] - lo) * p.d;
    }
    drawGradients(p, sched, slot, p.n1, keys, keyOperands, keysLd, row.dRow, row.pdp, row.dq, operands,
                  part != nullptr);
  }
}

/** dq rounded (0 for a row that saw nothing), and the row's dSinks share. */
void finishRow(const SmlaProblem& p, const SmlaGradOps& ops, const SmlaGradIo& io, const RowState& row,
               const ChunkAccumulators& acc) {
  const int64_t rowElements = p.n1 * p.d;
  auto* dq = static_cast<uint16_t*>(io.dq) + row.token * rowElements;
  if (row.seen == 0) {  // a row that saw no key: no gradient
    std::fill(dq, dq + rowElements, uint16_t{0});
    return;
  }
  ops.roundToIo(p.ioType, row.dq, rowElements, dq);
  if (io.sinks != nullptr && acc.sinks != nullptr) {
    const float* lse = io.lse + row.token * p.n1;
    for (int64_t n = 0; n < p.n1; ++n) acc.sinks[n] -= faExpScalar(io.sinks[n] - lse[n]) * row.pdp[n];
  }
}

/**
 * The dense ori keys of `count` consecutive rows of batch b (rows i0.., tokens token0..) in one product per tile of the
 * union of their windows: each row's heads masked to their own window (S = -inf, dP = 0 outside it, so those columns
 * give exactly zero).
 */
void blockDenseOri(const SmlaProblem& p, const SmlaGradSchedule& sched, const SmlaGradIo& io, const GradSlot& slot,
                   const ChunkAccumulators& acc, RowState* rows, int64_t count) {
  const FaKernelTable& table = *sched.kernels;
  const aclDataType type = smlaProductType(p);
  const int64_t bytes = smlaOperandBytes(type), rowElements = p.n1 * p.d, m = count * p.n1;
  const int64_t b = rows[0].b;
  const SmlaBatch& x = p.batches[static_cast<size_t>(b)];
  SmlaRange ranges[kMaxBlockRows];
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (int64_t r = 0; r < count; ++r) {
    ranges[r] = smlaOriRange(x.s1, x.s2, rows[r].i, p.oriMaskMode, p.oriWinLeft, p.oriWinRight);
    rows[r].seen += ranges[r].size();
    if (ranges[r].size() == 0) continue;
    lo = std::min(lo, ranges[r].begin);
    hi = std::max(hi, ranges[r].end);
  }
  if (lo >= hi) return;
  auto* operands = static_cast<char*>(slot.qdo);
  const int64_t token0 = rows[0].token;
  smlaLoadOperands(p.ioType, type, static_cast<const uint16_t*>(io.q) + token0 * rowElements, m * p.d, operands);
  smlaLoadOperands(p.ioType, type, static_cast<const uint16_t*>(io.dOut) + token0 * rowElements, m * p.d,
                   operands + m * p.d * bytes);
  const float* lse = io.lse + token0 * p.n1;  // the rows are consecutive tokens: their lse rows are too
  const int64_t row0 = sched.oriRow0[static_cast<size_t>(b)];
  const int64_t rowStride = p.ori.blockSize == 0 ? p.ori.rowStride : 0;
  for (int64_t t0 = lo; t0 < hi; t0 += kTile) {
    const int64_t keys = std::min(kTile, hi - t0);
    for (int64_t j = 0; j < keys; ++j) slot.rows[j] = smlaRowAddress(p.ori, b, x.oriRow0, t0 + j);
    int64_t keysLd = p.d;
    const void* keyOperands = keyOperandsOf(p, slot, keys, rowStride, &keysLd);
    table.gemm(scoreShape(p, m, keys, keysLd), operands, keyOperands, slot.s, slot.gemmScratch);
    for (int64_t r = 0; r < count; ++r) {
      const int64_t from = std::clamp<int64_t>(ranges[r].begin - t0, 0, keys);
      const int64_t to = std::clamp<int64_t>(ranges[r].end - t0, from, keys);
      for (int64_t n = r * p.n1; n < (r + 1) * p.n1; ++n) {
        float* sr = slot.s + n * kTile;
        float* dpr = slot.s + (m + n) * kTile;
        for (int64_t j = 0; j < keys; ++j) {
          if (j >= from && j < to) continue;
          sr[j] = -std::numeric_limits<float>::infinity();
          dpr[j] = 0.0f;
        }
      }
    }
    table.backwardRows(FaBackwardRows{slot.s, kTile, m, keys, p.scale, lse, slot.ones});
    if (acc.ori != nullptr) {
      for (int64_t j = 0; j < keys; ++j) slot.gradRows[j] = acc.ori + (row0 + t0 + j - acc.oriLo) * p.d;
    }
    drawGradients(p, sched, slot, m, keys, keyOperands, keysLd, slot.dRow, slot.pdp, slot.dq, operands,
                  acc.ori != nullptr);
  }
}

/** Every row of chunk c, in order, into its zeroed accumulators. */
void backwardChunk(const SmlaProblem& p, const SmlaGradSchedule& sched, const SmlaGradIo& io, int64_t c,
                   float* accumulators, const GradSlot& slot) {
  const SmlaGradChunk& chunk = sched.chunks[static_cast<size_t>(c)];
  ChunkAccumulators acc;
  acc.oriLo = chunk.oriLo;
  acc.cmpLo = chunk.cmpLo;
  if (sched.wantsOri) acc.ori = accumulators + chunk.oriOffset;
  if (sched.wantsCmp) acc.cmp = accumulators + chunk.cmpOffset;
  acc.sinks = accumulators + chunk.sinkOffset;
  if (acc.ori != nullptr) std::fill(acc.ori, acc.ori + (chunk.oriHi - chunk.oriLo) * p.d, 0.0f);
  if (acc.cmp != nullptr) std::fill(acc.cmp, acc.cmp + (chunk.cmpHi - chunk.cmpLo) * p.d, 0.0f);
  std::fill(acc.sinks, acc.sinks + p.n1, 0.0f);
  const int64_t blockRows = blockRowsOf(p);
  const bool denseOri = p.oriIndices.k == 0;
  std::fill(slot.ones, slot.ones + blockRows * p.n1, 1.0f);
  for (int64_t token = chunk.token0; token < chunk.token1;) {
    const int32_t b = p.tokenBatch[static_cast<size_t>(token)];
    const int64_t i = b < 0 ? -1 : token - p.batches[static_cast<size_t>(b)].qRow0;
    if (b < 0 || i >= p.batches[static_cast<size_t>(b)].s1) {  // a row no batch computes: zero gradients
      auto* dq = static_cast<uint16_t*>(io.dq) + token * p.n1 * p.d;
      std::fill(dq, dq + p.n1 * p.d, uint16_t{0});
      if (io.oriL1 != nullptr) std::fill_n(io.oriL1 + token * p.oriIndices.k, p.oriIndices.k, 0.0f);
      if (io.cmpL1 != nullptr) std::fill_n(io.cmpL1 + token * p.cmpIndices.k, p.cmpIndices.k, 0.0f);
      ++token;
      continue;
    }
    // A block: consecutive computed rows of this batch in this chunk (their count depends on the shapes only).
    const SmlaBatch& x = p.batches[static_cast<size_t>(b)];
    const int64_t count = std::min({blockRows, chunk.token1 - token, x.s1 - i});
    RowState rows[kMaxBlockRows];
    for (int64_t r = 0; r < count; ++r) {
      rows[r].b = b, rows[r].i = i + r, rows[r].token = token + r;
      rows[r].dq = slot.dq + r * p.n1 * p.d;
      rows[r].dRow = slot.dRow + r * p.n1;
      rows[r].pdp = slot.pdp + r * p.n1;
      startRow(p, *sched.gradOps, io, rows[r]);
    }
    if (denseOri) blockDenseOri(p, sched, io, slot, acc, rows, count);
    for (int64_t r = 0; r < count; ++r) {
      rowDraws(p, sched, io, slot, acc, rows[r], denseOri);
      finishRow(p, *sched.gradOps, io, rows[r], acc);
    }
    token += count;
  }
}

/** Global rows [0, rows) of one gradient: each the sum of the chunks covering it, in chunk order, rounded once. */
void reduceRows(const SmlaProblem& p, const SmlaGradSchedule& sched, const float* accumulators, bool cmp, int64_t rows,
                void* target) {
  auto* out = static_cast<uint16_t*>(target);
  parallelFor(rows, 64, [&](int64_t begin, int64_t end) {
    const float* covering[kSmlaGradChunks];
    for (int64_t g = begin; g < end; ++g) {
      int64_t count = 0;
      for (const SmlaGradChunk& c : sched.chunks) {
        const int64_t lo = cmp ? c.cmpLo : c.oriLo, hi = cmp ? c.cmpHi : c.oriHi;
        if (g >= lo && g < hi) covering[count++] = accumulators + (cmp ? c.cmpOffset : c.oriOffset) + (g - lo) * p.d;
      }
      uint16_t* dst = out + g * p.d;
      if (count == 0) {
        std::fill(dst, dst + p.d, uint16_t{0});
        continue;
      }
      for (int64_t e = 0; e < p.d; ++e) {
        float sum = covering[0][e];
        for (int64_t k = 1; k < count; ++k) sum += covering[k][e];
        dst[e] = smlaFloatToIo(p.ioType, sum);
      }
    }
  });
}

}  // namespace

size_t smlaGradSlotBytes(const SmlaProblem& problem) {
  FaArena counter(nullptr);
  carveSlot(problem, counter);
  return counter.used();
}

void smlaBackward(const SmlaProblem& p, const SmlaGradSchedule& sched, const SmlaGradIo& io, void* scratch) {
  auto* accumulators = reinterpret_cast<float*>(static_cast<char*>(scratch) + sched.slotBytes * sched.threads);
  std::atomic<int64_t> next{0};
  const auto chunkCount = static_cast<int64_t>(sched.order.size());
  parallelFor(sched.threads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t w = begin; w < end; ++w) {
      FaArena arena(static_cast<char*>(scratch) + static_cast<size_t>(w) * sched.slotBytes);
      const GradSlot slot = carveSlot(p, arena);
      for (int64_t k = next.fetch_add(1); k < chunkCount; k = next.fetch_add(1)) {
        backwardChunk(p, sched, io, sched.order[static_cast<size_t>(k)], accumulators, slot);
      }
    }
  });
  if (io.dOri != nullptr) reduceRows(p, sched, accumulators, false, sched.oriRows, io.dOri);
  if (io.dCmp != nullptr) reduceRows(p, sched, accumulators, true, sched.cmpRows, io.dCmp);
  if (io.dSinks != nullptr) {
    for (int64_t n = 0; n < p.n1; ++n) {
      float sum = 0.0f;
      for (const SmlaGradChunk& c : sched.chunks) sum += accumulators[c.sinkOffset + n];
      io.dSinks[n] = sum;
    }
  }
}

}  // namespace gradkit::kernels
