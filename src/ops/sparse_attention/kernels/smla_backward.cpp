// The backward of sparse MLA attention: one task per chunk of query rows (smla_grad_kernel.h), its rows in order, all
// N1 heads of a row at once. Per draw of up to kSmlaKeyTile keys of one part (ori or cmp; smla_keys.h), gathered once
// (K = V; read in place when already bf16 operands in consecutive rows):
//   [S; dP] = [Q; dO] K^T                                          (TileGemm, the keys packed once)
//   P = exp(S * scale - lse)                                       (flash attention's backward rows)
//   dS = P (dP - D), D = rowsum(dO * O)                            (row sums: flash attention's 8 stripes and tree)
//   P and dS rounded to bf16 on the native path (upstream rounds them for its cube unit; the scale is applied after,
//   in fp32, as upstream's post step does)
//   dq += scale * dS K;  dKV rows += P^T dO + scale * dS^T Q      (TileGemm)
// A dense draw's rows are consecutive, so its product accumulates straight into the chunk's accumulator; a listed
// draw's product goes to a tile whose rows are then added to theirs in draw order (repeated keys add up). dSinks
// takes -e^(sink - lse) sum_j P dP per row. Every sum runs in an order fixed by the rows and their keys: the bits
// depend neither on the threads nor on the kernel table.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "core/parallel.h"
#include "core/tile_gemm.h"
#include "ops/flash_attention/kernels/fa_softmax.h"
#include "ops/flash_attention/kernels/fa_tile.h"
#include "ops/sparse_attention/kernels/smla_grad_kernel.h"
#include "ops/sparse_attention/kernels/smla_keys.h"
#include "ops/sparse_attention/kernels/smla_operands.h"

namespace gradkit::kernels {
namespace {

constexpr int64_t kTile = kSmlaKeyTile;

/** One worker's buffers. */
struct GradSlot {
  void* qdo = nullptr;          // [2 n1][d] operands: q's rows, then dOut's
  void* keys = nullptr;         // [kTile][d] operands
  float* s = nullptr;           // [n1][kTile] scores, then P; dp follows (one product makes both)
  float* dp = nullptr;          // [n1][kTile]
  uint16_t* a16 = nullptr;      // [2 n1][kTile] native path: P and dS' rounded to bf16 (else s is the operand)
  float* dq = nullptr;          // [n1][d]
  float* tile = nullptr;        // [kTile][d] a listed draw's KV gradients
  float* dRow = nullptr;        // [n1] D
  float* pdp = nullptr;         // [n1] sum_j P dP
  float* ones = nullptr;        // [n1] the row sums FaBackwardRows divides by
  const void** rows = nullptr;  // [kTile]
  int64_t* keyRows = nullptr;   // [kTile]
  int32_t* slots = nullptr;     // [kTile]
  void* gemmScratch = nullptr;
};

/** [S; dP] = [Q; dO] K^T: both score tiles in one product of 2 N1 rows (the keys packed once). */
GemmShape scoreShape(const SmlaProblem& p, int64_t keys, int64_t keysLd) {
  return {2 * p.n1, keys, p.d, false, true, p.d, keysLd, kTile, smlaProductType(p), 1.0f, 0.0f, p.tileSums};
}

/** keysLd: elements between key rows (d for the gathered tile; the KV tensor's row stride when read in place). */
/** dq += scale * dS K (keysLd: elements between key rows: d when gathered, the KV row stride when read in place). */
GemmShape dqShape(const SmlaProblem& p, int64_t keys, int64_t keysLd) {
  return {p.n1, p.d, keys, false, false, kTile, keysLd, p.d, smlaProductType(p), p.scale, 1.0f, p.tileSums};
}

/** The keys' gradient rows = alpha * X^T Y + beta * C with X = P or dS ([n1][keys]) and Y = dO or Q ([n1][d]). */
GemmShape dkvShape(const SmlaProblem& p, int64_t keys, float alpha, float beta) {
  return {keys, p.d, p.n1, true, false, kTile, p.d, p.d, smlaProductType(p), alpha, beta, p.tileSums};
}

size_t gemmScratchBytes(const SmlaProblem& p) {
  size_t bytes = 0;
  for (int64_t keys = 1; keys <= kTile; ++keys) {
    // The scratch holds packed operands: it depends on the sizes, not on the leading dims.
    bytes = std::max({bytes, TileGemm(scoreShape(p, keys, p.d)).scratchBytes(),
                      TileGemm(dqShape(p, keys, p.d)).scratchBytes(),
                      TileGemm(dkvShape(p, keys, 1.0f, 0.0f)).scratchBytes(),
                      TileGemm(dkvShape(p, keys, p.scale, 1.0f)).scratchBytes()});
  }
  return bytes;
}

GradSlot carveSlot(const SmlaProblem& p, FaArena& arena) {
  const int64_t bytes = smlaOperandBytes(smlaProductType(p));
  GradSlot slot;
  slot.qdo = arena.take<char>(2 * p.n1 * p.d * bytes);
  slot.keys = arena.take<char>(kTile * p.d * bytes);
  slot.s = arena.take<float>(2 * p.n1 * kTile);
  slot.dp = slot.s == nullptr ? nullptr : slot.s + p.n1 * kTile;  // null while the arena only counts
  if (p.tilePath == TilePath::NativeBf16) slot.a16 = arena.take<uint16_t>(2 * p.n1 * kTile);
  slot.dq = arena.take<float>(p.n1 * p.d);
  slot.tile = arena.take<float>(kTile * p.d);
  slot.dRow = arena.take<float>(p.n1);
  slot.pdp = arena.take<float>(p.n1);
  slot.ones = arena.take<float>(p.n1);
  slot.rows = arena.take<const void*>(kTile);
  slot.keyRows = arena.take<int64_t>(kTile);
  slot.slots = arena.take<int32_t>(kTile);
  slot.gemmScratch = arena.take<char>(static_cast<int64_t>(gemmScratchBytes(p)));
  return slot;
}

/**
 * sum_j x_j y_j in flash attention's row-sum order: stripe k takes the elements j = k mod 8 in order, then the tree
 * (faReduceSum). Written in blocks of 8 so that the compiler keeps the stripes in registers (same bits as j % 8).
 */
float stripedDot(const float* x, const float* y, int64_t count) {
  float part[kFaStripes] = {};
  int64_t j = 0;
  for (; j + kFaStripes <= count; j += kFaStripes) {
    for (int k = 0; k < kFaStripes; ++k) part[k] += x[j + k] * y[j + k];
  }
  for (int k = 0; j < count; ++j, ++k) part[k] += x[j] * y[j];
  return faReduceSum(part);
}

/** The same over two io rows widened exactly (D = rowsum(dO * O)). */
float stripedDot(aclDataType ioType, const uint16_t* x, const uint16_t* y, int64_t count) {
  float part[kFaStripes] = {};
  int64_t j = 0;
  for (; j + kFaStripes <= count; j += kFaStripes) {
    for (int k = 0; k < kFaStripes; ++k) part[k] += smlaIoToFloat(ioType, x[j + k]) * smlaIoToFloat(ioType, y[j + k]);
  }
  for (int k = 0; j < count; ++j, ++k) part[k] += smlaIoToFloat(ioType, x[j]) * smlaIoToFloat(ioType, y[j]);
  return faReduceSum(part);
}

/** A chunk's accumulators as one row's draws address them. */
struct ChunkAccumulators {
  float* ori = nullptr;  // row g at ori + (g - oriLo) * d
  float* cmp = nullptr;
  float* sinks = nullptr;  // [n1]
  int64_t oriLo = 0, cmpLo = 0;
};

/** The backward of query row `token` (row i of batch b). */
void backwardRow(const SmlaProblem& p, const SmlaGradSchedule& sched, const SmlaGradIo& io, int64_t b, int64_t i,
                 int64_t token, const GradSlot& slot, const ChunkAccumulators& acc) {
  const FaKernelTable& table = *sched.kernels;
  const aclDataType type = smlaProductType(p);
  const int64_t bytes = smlaOperandBytes(type), rowElements = p.n1 * p.d;
  const auto* q = static_cast<const uint16_t*>(io.q) + token * rowElements;
  const auto* dOut = static_cast<const uint16_t*>(io.dOut) + token * rowElements;
  const auto* out = static_cast<const uint16_t*>(io.out) + token * rowElements;
  const float* lse = io.lse + token * p.n1;
  auto* operands = static_cast<char*>(slot.qdo);
  smlaLoadOperands(p.ioType, type, q, rowElements, operands);
  smlaLoadOperands(p.ioType, type, dOut, rowElements, operands + rowElements * bytes);
  const void* dOutOperands = operands + rowElements * bytes;
  for (int64_t n = 0; n < p.n1; ++n) {
    slot.dRow[n] = stripedDot(p.ioType, dOut + n * p.d, out + n * p.d, p.d);
    slot.pdp[n] = 0.0f;
    slot.ones[n] = 1.0f;
  }
  std::fill(slot.dq, slot.dq + rowElements, 0.0f);
  float* oriL1 = io.oriL1 == nullptr ? nullptr : io.oriL1 + token * p.oriIndices.k;
  float* cmpL1 = io.cmpL1 == nullptr ? nullptr : io.cmpL1 + token * p.cmpIndices.k;
  if (oriL1 != nullptr) std::fill(oriL1, oriL1 + p.oriIndices.k, 0.0f);
  if (cmpL1 != nullptr) std::fill(cmpL1, cmpL1 + p.cmpIndices.k, 0.0f);
  // The operands A = [P; dS'] of the dq and dKV products: the fp32 tile itself, or its bf16 rounding.
  const void* aOperands = slot.a16 != nullptr ? static_cast<const void*>(slot.a16) : slot.s;
  const void* dsOperands = static_cast<const char*>(aOperands) + p.n1 * kTile * bytes;
  SmlaKeyCursor cursor(p, b, i, token);
  SmlaKeyTrace trace;
  trace.keys = slot.keyRows;
  trace.slots = slot.slots;
  int64_t seen = 0;
  for (int64_t keys = cursor.nextOfOnePart(slot.rows, kTile, trace); keys > 0;
       keys = cursor.nextOfOnePart(slot.rows, kTile, trace)) {
    seen += keys;
    // The keys as product operands: read in place when they are consecutive rows already of the operand type (bf16
    // on the native path), else gathered (and widened) into the tile.
    // (A hostile view may overlap its rows: a row stride below d is gathered.)
    const bool inPlace = trace.rowStride >= p.d && type == ACL_BF16;
    const void* keyOperands = inPlace ? slot.rows[0] : slot.keys;
    const int64_t keysLd = inPlace ? trace.rowStride : p.d;
    for (int64_t r = 0; r < keys && !inPlace; ++r) {
      smlaLoadOperands(p.ioType, type, slot.rows[r], p.d, static_cast<char*>(slot.keys) + r * p.d * bytes);
    }
    table.gemm(scoreShape(p, keys, keysLd), slot.qdo, keyOperands, slot.s, slot.gemmScratch);
    table.backwardRows(FaBackwardRows{slot.s, kTile, p.n1, keys, p.scale, lse, slot.ones});
    for (int64_t n = 0; n < p.n1; ++n) {
      const float* pr = slot.s + n * kTile;
      float* dpr = slot.dp + n * kTile;
      slot.pdp[n] += stripedDot(pr, dpr, keys);
      const float d = slot.dRow[n];
      for (int64_t j = 0; j < keys; ++j) dpr[j] = faFlushSubnormal(pr[j] * (dpr[j] - d));
    }
    if (slot.a16 != nullptr) faRoundRowsToBf16(slot.s, kTile, 2 * p.n1, keys, slot.a16, kTile);
    float* l1 = trace.cmp ? cmpL1 : oriL1;
    if (l1 != nullptr && !trace.dense) {
      for (int64_t j = 0; j < keys; ++j) {
        float sum = 0.0f;
        for (int64_t n = 0; n < p.n1; ++n) sum += slot.s[n * kTile + j];
        l1[slot.slots[j]] = sum / static_cast<float>(p.n1);
      }
    }
    table.gemm(dqShape(p, keys, keysLd), dsOperands, keyOperands, slot.dq, slot.gemmScratch);
    float* part = trace.cmp ? acc.cmp : acc.ori;
    if (part == nullptr) continue;
    const int64_t row0 = (trace.cmp ? sched.cmpRow0 : sched.oriRow0)[static_cast<size_t>(b)];
    const int64_t lo = trace.cmp ? acc.cmpLo : acc.oriLo;
    if (trace.dense) {
      float* c = part + (row0 + slot.keyRows[0] - lo) * p.d;
      table.gemm(dkvShape(p, keys, 1.0f, 1.0f), aOperands, dOutOperands, c, slot.gemmScratch);
      table.gemm(dkvShape(p, keys, p.scale, 1.0f), dsOperands, operands, c, slot.gemmScratch);
      continue;
    }
    table.gemm(dkvShape(p, keys, 1.0f, 0.0f), aOperands, dOutOperands, slot.tile, slot.gemmScratch);
    table.gemm(dkvShape(p, keys, p.scale, 1.0f), dsOperands, operands, slot.tile, slot.gemmScratch);
    for (int64_t r = 0; r < keys; ++r) {
      float* dst = part + (row0 + slot.keyRows[r] - lo) * p.d;
      const float* src = slot.tile + r * p.d;
      for (int64_t e = 0; e < p.d; ++e) dst[e] += src[e];
    }
  }
  auto* dq = static_cast<uint16_t*>(io.dq) + token * rowElements;
  if (seen == 0) {  // a row that saw no key: no gradient
    std::fill(dq, dq + rowElements, uint16_t{0});
    return;
  }
  for (int64_t e = 0; e < rowElements; ++e) dq[e] = smlaFloatToIo(p.ioType, slot.dq[e]);
  if (io.sinks != nullptr && acc.sinks != nullptr) {
    for (int64_t n = 0; n < p.n1; ++n) acc.sinks[n] -= faExpScalar(io.sinks[n] - lse[n]) * slot.pdp[n];
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
  for (int64_t token = chunk.token0; token < chunk.token1; ++token) {
    const int32_t b = p.tokenBatch[static_cast<size_t>(token)];
    const int64_t i = b < 0 ? -1 : token - p.batches[static_cast<size_t>(b)].qRow0;
    if (b < 0 || i >= p.batches[static_cast<size_t>(b)].s1) {  // a row no batch computes: zero gradients
      auto* dq = static_cast<uint16_t*>(io.dq) + token * p.n1 * p.d;
      std::fill(dq, dq + p.n1 * p.d, uint16_t{0});
      if (io.oriL1 != nullptr) std::fill_n(io.oriL1 + token * p.oriIndices.k, p.oriIndices.k, 0.0f);
      if (io.cmpL1 != nullptr) std::fill_n(io.cmpL1 + token * p.cmpIndices.k, p.cmpIndices.k, 0.0f);
      continue;
    }
    backwardRow(p, sched, io, b, i, token, slot, acc);
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
