// The forward of sparse MLA attention: one task per query row (token), all N1 heads at once since they share the one
// KV head. Per tile of up to kSmlaKeyTile keys (smla_keys.h): the keys' rows gathered into a dense tile (K = V, so one
// tile serves both products), S = Q K^T (TileGemm), the online softmax step of flash attention's table (running max
// from the sink, running sum from 1), the output rows scaled by alpha and O += P V (TileGemm, accumulating). On the
// native bf16 path the operands are bf16 and P is rounded to bf16 before P V (as Ascend's cube unit and upstream's
// golden do); elsewhere q and the keys are widened exactly to fp32 and P stays fp32. The row's bits depend only on its
// keys: never on the thread that runs it or on the kernel table.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>

#include "core/parallel.h"
#include "core/tile_gemm.h"
#include "gradkit/float_convert.h"
#include "ops/flash_attention/kernels/fa_tile.h"
#include "ops/sparse_attention/kernels/smla_grad_ops.h"
#include "ops/sparse_attention/kernels/smla_keys.h"
#include "ops/sparse_attention/kernels/smla_operands.h"

namespace gradkit::kernels {
namespace {

/** One worker's buffers. */
struct SmlaSlot {
  void* q = nullptr;            // [n1][d] product operands
  void* keys = nullptr;         // [kSmlaKeyTile][d] product operands
  float* s = nullptr;           // [n1][kSmlaKeyTile] scores, then P
  uint16_t* p16 = nullptr;      // [n1][kSmlaKeyTile] P in bf16 (native path)
  float* o = nullptr;           // [n1][d]
  float* rowMax = nullptr;      // [n1]
  float* rowSum = nullptr;      // [n1]
  float* alpha = nullptr;       // [n1]
  const void** rows = nullptr;  // [kSmlaKeyTile] key addresses
  void* gemmScratch = nullptr;
};

GemmShape valueShape(const SmlaProblem& p, int64_t keys) {
  const aclDataType type = smlaProductType(p);
  return {p.n1, p.d, keys, false, false, kSmlaKeyTile, p.d, p.d, type, 1.0f, 1.0f, p.tileSums};
}

/** The most scratch either product needs for any tile (an odd key count makes TileGemm pack operands). */
size_t gemmScratchBytes(const SmlaProblem& p) {
  size_t bytes = 0;
  for (int64_t keys = 1; keys <= kSmlaKeyTile; ++keys) {
    bytes = std::max(
        {bytes, TileGemm(smlaScoreShape(p, keys)).scratchBytes(), TileGemm(valueShape(p, keys)).scratchBytes()});
  }
  return bytes;
}

SmlaSlot carveSlot(const SmlaProblem& p, FaArena& arena) {
  const int64_t bytes = smlaOperandBytes(smlaProductType(p));
  SmlaSlot slot;
  slot.q = arena.take<char>(p.n1 * p.d * bytes);
  slot.keys = arena.take<char>(kSmlaKeyTile * p.d * bytes);
  slot.s = arena.take<float>(p.n1 * kSmlaKeyTile);
  if (p.tilePath == TilePath::NativeBf16) slot.p16 = arena.take<uint16_t>(p.n1 * kSmlaKeyTile);
  slot.o = arena.take<float>(p.n1 * p.d);
  slot.rowMax = arena.take<float>(p.n1);
  slot.rowSum = arena.take<float>(p.n1);
  slot.alpha = arena.take<float>(p.n1);
  slot.rows = arena.take<const void*>(kSmlaKeyTile);
  slot.gemmScratch = arena.take<char>(static_cast<int64_t>(gemmScratchBytes(p)));
  return slot;
}

/** Query row `token` of batch b (row i of it): out and lse of its n1 heads. */
void forwardRow(const SmlaProblem& p, const SmlaSchedule& schedule, const SmlaForwardIo& io, int64_t b, int64_t i,
                int64_t token, const SmlaSlot& slot) {
  const FaKernelTable& table = *schedule.kernels;
  const aclDataType type = smlaProductType(p);
  const int64_t rowElements = p.n1 * p.d;
  auto* out = static_cast<uint16_t*>(io.out) + token * rowElements;
  float* lse = io.lse == nullptr ? nullptr : io.lse + token * p.n1;
  smlaLoadOperands(p.ioType, type, static_cast<const uint16_t*>(io.q) + token * rowElements, rowElements, slot.q);
  std::fill(slot.o, slot.o + rowElements, 0.0f);
  for (int64_t n = 0; n < p.n1; ++n) {
    slot.rowMax[n] = io.sinks[n];
    slot.rowSum[n] = 1.0f;
  }
  SmlaKeyCursor cursor(p, b, i, token);
  int64_t seen = 0;
  for (int64_t keys = cursor.next(slot.rows, kSmlaKeyTile); keys > 0; keys = cursor.next(slot.rows, kSmlaKeyTile)) {
    seen += keys;
    smlaLoadKeyOperands(p, slot.rows, keys, slot.keys);
    table.gemm(smlaScoreShape(p, keys), slot.q, slot.keys, slot.s, slot.gemmScratch);
    FaForwardRows rows;
    rows.s = slot.s;
    rows.ld = kSmlaKeyTile;
    rows.rows = p.n1;
    rows.cols = keys;
    rows.scale = p.scale;
    rows.rowMax = slot.rowMax;
    rows.rowSum = slot.rowSum;
    rows.rowAlpha = slot.alpha;
    table.forwardRows(rows);
    for (int64_t n = 0; n < p.n1; ++n) {
      if (slot.alpha[n] == 1.0f) continue;
      float* o = slot.o + n * p.d;
      for (int64_t e = 0; e < p.d; ++e) o[e] *= slot.alpha[n];
    }
    const void* probabilities = slot.s;
    if (slot.p16 != nullptr) {
      table.roundRowsToBf16(slot.s, kSmlaKeyTile, p.n1, keys, slot.p16, kSmlaKeyTile);
      probabilities = slot.p16;
    }
    table.gemm(valueShape(p, keys), probabilities, slot.keys, slot.o, slot.gemmScratch);
  }
  if (seen == 0) {  // upstream writes 0 for a row that sees no key (not the sink's lse)
    std::fill(out, out + rowElements, uint16_t{0});
    if (lse != nullptr) std::fill(lse, lse + p.n1, 0.0f);
    return;
  }
  for (int64_t n = 0; n < p.n1; ++n) {
    const float l = slot.rowSum[n];
    float* o = slot.o + n * p.d;
    for (int64_t e = 0; e < p.d; ++e) o[e] = o[e] / l;  // vector divisions: the bits of each o[e] / l
    if (lse != nullptr) lse[n] = slot.rowMax[n] + std::log(l);
  }
  schedule.steps->roundToIo(p.ioType, slot.o, rowElements, out);
}

}  // namespace

SmlaSchedule smlaForwardSchedule(const SmlaProblem& problem, int threads) {
  SmlaSchedule schedule;
  schedule.kernels = &faKernels();
  schedule.steps = &smlaGradOps();
  schedule.threads = static_cast<int>(std::clamp<int64_t>(problem.tokens, 1, std::max(1, threads)));
  FaArena counter(nullptr);
  carveSlot(problem, counter);
  schedule.slotBytes = counter.used();
  return schedule;
}

size_t smlaScratchBytes(const SmlaSchedule& schedule) {
  return schedule.slotBytes * static_cast<size_t>(schedule.threads);
}

void smlaForward(const SmlaProblem& p, const SmlaSchedule& schedule, const SmlaForwardIo& io, void* scratch) {
  std::atomic<int64_t> next{0};
  parallelFor(schedule.threads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t w = begin; w < end; ++w) {
      FaArena arena(static_cast<char*>(scratch) + static_cast<size_t>(w) * schedule.slotBytes);
      const SmlaSlot slot = carveSlot(p, arena);
      for (int64_t token = next.fetch_add(1); token < p.tokens; token = next.fetch_add(1)) {
        const int32_t b = p.tokenBatch[static_cast<size_t>(token)];
        const int64_t i = b < 0 ? -1 : token - p.batches[static_cast<size_t>(b)].qRow0;
        if (b < 0 || i >= p.batches[static_cast<size_t>(b)].s1) {  // a row no batch computes: 0
          auto* out = static_cast<uint16_t*>(io.out) + token * p.n1 * p.d;
          std::fill(out, out + p.n1 * p.d, uint16_t{0});
          if (io.lse != nullptr) std::fill(io.lse + token * p.n1, io.lse + (token + 1) * p.n1, 0.0f);
          continue;
        }
        forwardRow(p, schedule, io, b, i, token, slot);
      }
    }
  });
}

}  // namespace gradkit::kernels
