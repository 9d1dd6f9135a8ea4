// The softmax L1 norm of sparse MLA attention: one task per query row (token), all N1 heads at once since they share
// the keys. Per tile of up to kSmlaKeyTile keys (smla_keys.h, with each key's row and list entry: its output column):
// the keys' rows gathered into a dense tile, S = Q K^T (TileGemm, as the forward), P = exp(s * scale - lse) (flash
// attention's backward softmax step with the row sum 1), then per column the heads' P summed in head order and divided
// by N1. On the native bf16 path the product operands are bf16, elsewhere q and the keys are widened exactly to fp32.
// The row's bits depend only on its keys: never on the thread that runs it or on the kernel table.
#include <algorithm>
#include <atomic>

#include "core/parallel.h"
#include "core/tile_gemm.h"
#include "ops/flash_attention/kernels/fa_tile.h"
#include "ops/sparse_attention/kernels/smla_keys.h"
#include "ops/sparse_attention/kernels/smla_l1_kernel.h"
#include "ops/sparse_attention/kernels/smla_operands.h"

namespace gradkit::kernels {
namespace {

/** One worker's buffers. */
struct SmlaL1Slot {
  void* q = nullptr;            // [n1][d] product operands
  void* keyOperands = nullptr;  // [kSmlaKeyTile][d] product operands
  float* s = nullptr;           // [n1][kSmlaKeyTile] scores, then P
  float* ones = nullptr;        // [n1] the row sums P is divided by
  float* sum = nullptr;         // [kSmlaKeyTile] the heads' sum of a column
  const void** rows = nullptr;  // [kSmlaKeyTile] key addresses
  int64_t* keys = nullptr;      // [kSmlaKeyTile] the keys' rows in their batch
  int32_t* slots = nullptr;     // [kSmlaKeyTile] the keys' list entries (-1: dense)
  void* gemmScratch = nullptr;
};

size_t gemmScratchBytes(const SmlaProblem& p) {
  size_t bytes = 0;
  for (int64_t keys = 1; keys <= kSmlaKeyTile; ++keys)
    bytes = std::max(bytes, TileGemm(smlaScoreShape(p, keys)).scratchBytes());
  return bytes;
}

SmlaL1Slot carveSlot(const SmlaProblem& p, FaArena& arena) {
  const int64_t bytes = smlaOperandBytes(smlaProductType(p));
  SmlaL1Slot slot;
  slot.q = arena.take<char>(p.n1 * p.d * bytes);
  slot.keyOperands = arena.take<char>(kSmlaKeyTile * p.d * bytes);
  slot.s = arena.take<float>(p.n1 * kSmlaKeyTile);
  slot.ones = arena.take<float>(p.n1);
  slot.sum = arena.take<float>(kSmlaKeyTile);
  slot.rows = arena.take<const void*>(kSmlaKeyTile);
  slot.keys = arena.take<int64_t>(kSmlaKeyTile);
  slot.slots = arena.take<int32_t>(kSmlaKeyTile);
  slot.gemmScratch = arena.take<char>(static_cast<int64_t>(gemmScratchBytes(p)));
  return slot;
}

/** Query row `token` of batch b (row i of it): its L1 norm row (zeroed first). */
void l1Row(const SmlaProblem& p, const FaKernelTable& table, const SmlaL1Io& io, int64_t b, int64_t i, int64_t token,
           const SmlaL1Slot& slot) {
  float* out = io.out + token * io.width;
  std::fill(out, out + io.width, 0.0f);
  const int64_t rowElements = p.n1 * p.d;
  smlaLoadOperands(p.ioType, smlaProductType(p), static_cast<const uint16_t*>(io.q) + token * rowElements, rowElements,
                   slot.q);
  const float* lse = io.lse + token * p.n1;
  const float heads = static_cast<float>(p.n1);
  SmlaKeyCursor cursor(p, b, i, token);  // the problem has no ori rows: every draw is of the cmp part
  SmlaKeyTrace trace;
  trace.keys = slot.keys;
  trace.slots = slot.slots;
  for (int64_t keys = cursor.nextOfOnePart(slot.rows, kSmlaKeyTile, trace); keys > 0;
       keys = cursor.nextOfOnePart(slot.rows, kSmlaKeyTile, trace)) {
    smlaLoadKeyOperands(p, slot.rows, keys, slot.keyOperands);
    table.gemm(smlaScoreShape(p, keys), slot.q, slot.keyOperands, slot.s, slot.gemmScratch);
    FaBackwardRows rows;
    rows.s = slot.s;
    rows.ld = kSmlaKeyTile;
    rows.rows = p.n1;
    rows.cols = keys;
    rows.scale = p.scale;
    rows.rowMax = lse;
    rows.rowSum = slot.ones;
    table.backwardRows(rows);
    std::copy(slot.s, slot.s + keys, slot.sum);
    for (int64_t h = 1; h < p.n1; ++h) {  // the heads in order: element-wise adds, the same bits in any vector width
      const float* ph = slot.s + h * kSmlaKeyTile;
      for (int64_t c = 0; c < keys; ++c) slot.sum[c] += ph[c];
    }
    for (int64_t c = 0; c < keys; ++c) {
      out[slot.slots[c] >= 0 ? slot.slots[c] : slot.keys[c]] = slot.sum[c] / heads;
    }
  }
}

}  // namespace

SmlaSchedule smlaL1Schedule(const SmlaProblem& problem, int threads) {
  SmlaSchedule schedule;
  schedule.kernels = &faKernels();
  schedule.threads = static_cast<int>(std::clamp<int64_t>(problem.tokens, 1, std::max(1, threads)));
  FaArena counter(nullptr);
  carveSlot(problem, counter);
  schedule.slotBytes = counter.used();
  return schedule;
}

void smlaSoftmaxL1Norm(const SmlaProblem& p, const SmlaSchedule& schedule, const SmlaL1Io& io, void* scratch) {
  const FaKernelTable& table = *schedule.kernels;
  std::atomic<int64_t> next{0};
  parallelFor(schedule.threads, 1, [&](int64_t begin, int64_t end) {
    for (int64_t w = begin; w < end; ++w) {
      FaArena arena(static_cast<char*>(scratch) + static_cast<size_t>(w) * schedule.slotBytes);
      const SmlaL1Slot slot = carveSlot(p, arena);
      std::fill(slot.ones, slot.ones + p.n1, 1.0f);
      for (int64_t token = next.fetch_add(1); token < p.tokens; token = next.fetch_add(1)) {
        const int32_t b = p.tokenBatch[static_cast<size_t>(token)];
        const int64_t i = b < 0 ? -1 : token - p.batches[static_cast<size_t>(b)].qRow0;
        if (b < 0 || i >= p.batches[static_cast<size_t>(b)].s1) {  // a row no batch computes: 0
          std::fill(io.out + token * io.width, io.out + (token + 1) * io.width, 0.0f);
          continue;
        }
        l1Row(p, table, io, b, i, token, slot);
      }
    }
  });
}

}  // namespace gradkit::kernels
