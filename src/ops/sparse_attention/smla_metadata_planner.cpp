// Upstream: sparse_flash_mla_metadata_aicpu.cpp (BalanceSchedule, CalcSplitPlan, GenMetadata without the
// batch-consistency branches), sparse_flash_mla_grad_metadata_aicpu.cpp (GenMetadata), and the L1-norm metadata's
// BuildMetadata (arch35). Restated; the arithmetic is int64 where upstream mixes int32 and uint32 (every count here is
// bounded by the checks: batches and rows <= 2^24, lengths < 2^32).
#include "ops/sparse_attention/smla_metadata_planner.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "ops/sparse_attention/kernels/smla_semantics.h"
#include "ops/sparse_attention/smla_metadata_args.h"

namespace gradkit::ops {
namespace {

constexpr int64_t kCostWeightM = 6, kCostWeightS2 = 10;  // upstream COST_WEIGHT_M, COST_WEIGHT_S2
constexpr int64_t kAlignM = 16, kAlignS2 = 64;
constexpr int64_t kToleranceRatio = 2;  // FA_TOLERANCE_RATIO: a core may exceed its limit by half a block

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t blockCost(int64_t m, int64_t s2) {
  return kCostWeightM * ceilDiv(m, kAlignM) + kCostWeightS2 * ceilDiv(s2, kAlignS2);
}

/** The M and S2 tiles and the cores the forward plans for. */
struct Tiling {
  int64_t mBase = 1, s2Base = 128, cores = 0;
  bool splitG = false;  // Ascend950 with G > 64: each plan entry drives two consecutive cube cores
};

Tiling tilingOf(const SmlaMetaProblem& p, int64_t aicCores) {
  const int64_t g = p.group;
  if (p.ascend950) {
    const bool split = g > 64;
    return {g, 128, split ? aicCores / 2 : aicCores, split};
  }
  const bool cmpSparse = p.hasCmp && p.cmpTopk != 0;
  return {cmpSparse ? g : (256 / g) * g, 512, aicCores, false};
}

/** The top-k cap of a sparse side: the row's length (mode 0 with the tensor), else the topk argument. */
int64_t topkCap(const std::vector<int64_t>& lengths, int64_t topk, int64_t row) {
  if (lengths.empty()) return topk;
  if (row < 0 || row >= static_cast<int64_t>(lengths.size())) {
    throw std::logic_error("sparse attention metadata: a topk length row outside the tensor the check accepted");
  }
  return lengths[static_cast<size_t>(row)];
}

/** True when upstream's planner gives the batch any cost (CalcBatchCost's early returns). */
bool batchHasWork(const SmlaMetaProblem& p, const SmlaMetaBatch& b) {
  return b.qRows != 0 && ((p.hasOri && b.oriLen != 0) || (p.hasCmp && b.cmpLen != 0));
}

/** The blocks of one part (ori or cmp) of a tile of m rows: their count, total cost and the last one's cost. */
struct Part {
  int64_t blocks = 0, cost = 0, lastBlockCost = 0;
};

Part partOf(int64_t keys, int64_t m, int64_t s2Base) {
  if (keys == 0) return {};
  const int64_t blocks = ceilDiv(keys, s2Base);
  const int64_t tail = keys % s2Base;
  const int64_t normal = blockCost(m, s2Base);
  if (tail == 0) return {blocks, normal * blocks, normal};
  const int64_t tailCost = blockCost(m, tail);
  return {blocks, normal * (blocks - 1) + tailCost, tailCost};
}

/** One M tile's load (upstream's S1GCache: cost, the cost of its last block, blocks = S2 loops). */
struct TileLoad {
  int64_t cost = 0, lastBlockCost = 0, blocks = 0;
};

/** The forward's tiling of the batches and their loads. */
class ForwardLoads {
 public:
  ForwardLoads(const SmlaMetaProblem& p, const Tiling& t) : p_(p), t_(t) {}

  int64_t tiles(int64_t b) const { return ceilDiv(p_.batches[b].qRows * p_.group, t_.mBase); }

  TileLoad tile(int64_t b, int64_t index) const {
    const SmlaMetaBatch& batch = p_.batches[b];
    const int64_t tokens = batch.qRows * p_.group;
    if (tokens == 0) return {};
    const int64_t first = index * t_.mBase;
    const int64_t last = std::min(first + t_.mBase, tokens) - 1;
    const SmlaTileKeys keys = smlaTileKeys(p_, batch, first / p_.group, last / p_.group);
    const int64_t tailM = tokens % t_.mBase;
    const int64_t m = index == tiles(b) - 1 && tailM != 0 ? tailM : t_.mBase;
    const Part ori = partOf(keys.ori, m, t_.s2Base);
    const Part cmp = partOf(keys.cmp, m, t_.s2Base);
    return {ori.cost + cmp.cost, cmp.blocks > 0 ? cmp.lastBlockCost : ori.lastBlockCost, ori.blocks + cmp.blocks};
  }

 private:
  const SmlaMetaProblem& p_;
  const Tiling& t_;
};

/** A batch's load: the sum over its tiles, and the last block cost of its last tile with blocks. */
struct BatchLoad {
  int64_t cost = 0, blocks = 0, lastBlockCost = 0;
};

/** Where a core's work ends: (batch x kv head, M tile); the S2 end is always 0 (tiles are never split). */
struct CoreEnd {
  int64_t bn2 = 0, tile = 0;
};

/** The greedy split of CalcSplitPlan / AssignBlocksToCore (whole batches, then whole tiles). */
struct Split {
  std::vector<CoreEnd> ends;
  int64_t usedCores = 1;
  int64_t maxCoreBlocks = 0;  // upstream's maxS2LoopNum
};

Split splitOverCores(const SmlaMetaProblem& p, const Tiling& t) {
  const ForwardLoads loads(p, t);
  const int64_t batches = static_cast<int64_t>(p.batches.size());
  std::vector<BatchLoad> batchLoads(static_cast<size_t>(batches));
  int64_t total = 0, maxTileCost = 0;
  for (int64_t b = 0; b < batches; ++b) {
    if (!batchHasWork(p, p.batches[b])) continue;
    BatchLoad& load = batchLoads[b];
    for (int64_t i = 0; i < loads.tiles(b); ++i) {
      const TileLoad tile = loads.tile(b, i);
      load.cost += tile.cost;
      load.blocks += tile.blocks;
      maxTileCost = std::max(maxTileCost, tile.cost);
      if (tile.blocks > 0) load.lastBlockCost = tile.lastBlockCost;
    }
    total += load.cost * p.kvHeads;
  }

  Split split;
  split.ends.assign(static_cast<size_t>(t.cores), CoreEnd{});
  const int64_t bn2Count = batches * p.kvHeads;
  int64_t unassigned = total, bn2 = 0, b = 0, tile = 0, core = 0;
  int64_t batchCost = batchLoads[0].cost, batchBlocks = batchLoads[0].blocks;  // what is left of batch b
  TileLoad current = loads.tile(0, 0);
  bool finished = false;
  for (int64_t i = 0; i < t.cores && !finished && unassigned > 0; ++i) {
    core = i;
    const int64_t limit = std::max(unassigned / (t.cores - i), maxTileCost);
    int64_t cost = 0, blocks = 0;
    // Whole batches (an empty one always fits).
    while (batchCost == 0 || limit + batchLoads[b].lastBlockCost / kToleranceRatio >= cost + batchCost) {
      cost += batchCost;
      blocks += batchBlocks;
      if (++bn2 == bn2Count) {
        tile = 0;
        finished = true;
        break;
      }
      b = bn2 / p.kvHeads;
      batchCost = batchLoads[b].cost;
      batchBlocks = batchLoads[b].blocks;
      tile = 0;
      current = loads.tile(b, 0);
    }
    // Whole tiles of the batch that did not fit (never its last tile with blocks: the batch test above refused it).
    while (!finished && limit + current.lastBlockCost / kToleranceRatio >= cost + current.cost) {
      cost += current.cost;
      blocks += current.blocks;
      batchCost = std::max<int64_t>(batchCost - current.cost, 0);
      batchBlocks = std::max<int64_t>(batchBlocks - current.blocks, 0);
      do {
        if (++tile >= loads.tiles(b)) throw std::logic_error("sparse attention metadata: a core ran past its batch");
        current = loads.tile(b, tile);
      } while (current.blocks == 0);
    }
    split.ends[static_cast<size_t>(i)] = {bn2, tile};
    unassigned -= cost;
    split.maxCoreBlocks = std::max(split.maxCoreBlocks, blocks);
  }
  split.usedCores = core + 1;
  return split;
}

}  // namespace

SmlaTileKeys smlaTileKeys(const SmlaMetaProblem& p, const SmlaMetaBatch& batch, int64_t firstRow, int64_t lastRow) {
  SmlaTileKeys keys;
  const int64_t s1 = batch.qRows;
  if (s1 == 0) return keys;
  if (p.hasOri && batch.oriLen != 0) {
    const auto range = [&](int64_t row) {
      return kernels::smlaOriRange(s1, batch.oriLen, row, p.oriMaskMode, p.oriWinLeft, p.oriWinRight);
    };
    const int64_t count = std::max<int64_t>(range(lastRow).end - range(firstRow).begin, 0);
    keys.ori = count > 0 && p.oriTopk != 0
                   ? kernels::smlaIndicesRead(topkCap(p.oriTopkLength, p.oriTopk, batch.rowStart + firstRow), count)
                   : count;
  }
  if (p.hasCmp) {
    const int64_t restored = batch.cmpLen * p.cmpRatio + batch.residual;
    if (restored != 0) {
      const int64_t count = kernels::smlaCmpVisible(s1, batch.cmpLen, restored, p.cmpRatio, lastRow, p.cmpMaskMode);
      keys.cmp = count > 0 && p.cmpTopk != 0
                     ? kernels::smlaIndicesRead(topkCap(p.cmpTopkLength, p.cmpTopk, batch.rowStart + firstRow), count)
                     : count;
    }
  }
  return keys;
}

std::vector<uint32_t> planSmlaMetadata(const SmlaMetaProblem& p, int64_t aicCores) {
  const Tiling t = tilingOf(p, aicCores);
  // No batch (batchSize 0, or TND prefix sums of one element: the checks accept both) is the all-empty plan below:
  // one core from (0, 0, 0) to (B N2 = 0, 0, 0).
  if (aicCores < 1 || (t.splitG ? 2 * t.cores : t.cores) > kSmlaAicEntries) {
    throw std::logic_error("sparse attention metadata: core count outside what the check accepts");
  }
  std::vector<uint32_t> words(static_cast<size_t>(kSmlaPlanWords), 0);
  if (t.cores == 0) return words;  // upstream writes nothing for 0 planning cores
  const bool anyWork =
      std::any_of(p.batches.begin(), p.batches.end(), [&](const SmlaMetaBatch& b) { return batchHasWork(p, b); });
  Split split;
  if (anyWork) {
    split = splitOverCores(p, t);
  } else {  // all empty: one core ending past the last batch
    split.ends.assign(static_cast<size_t>(t.cores), CoreEnd{});
    split.ends[0] = {static_cast<int64_t>(p.batches.size()) * p.kvHeads, 0};
  }
  for (int64_t i = 0; i < t.cores; ++i) {
    for (int64_t slot = t.splitG ? 2 * i : i; slot <= (t.splitG ? 2 * i + 1 : i); ++slot) {
      uint32_t* entry = &words[static_cast<size_t>(slot * kSmlaAicFields)];
      if (t.splitG) entry[kFaMaxS2Blocks] = static_cast<uint32_t>(split.maxCoreBlocks);
      if (i >= split.usedCores) continue;
      const CoreEnd start = i == 0 ? CoreEnd{} : split.ends[static_cast<size_t>(i - 1)];
      const CoreEnd end = split.ends[static_cast<size_t>(i)];
      entry[kFaCoreEnable] = 1;
      entry[kFaBn2Start] = static_cast<uint32_t>(start.bn2);
      entry[kFaMStart] = static_cast<uint32_t>(start.tile);
      entry[kFaBn2End] = static_cast<uint32_t>(end.bn2);
      entry[kFaMEnd] = static_cast<uint32_t>(end.tile);
    }
  }
  return words;
}

std::vector<uint32_t> planSmlaGradMetadata(const SmlaMetaProblem& p, int64_t aicCores) {
  if (aicCores < 1) throw std::logic_error("sparse attention metadata: no cube core");
  int64_t total = 0, maxOri = 0, maxCmp = 0;
  for (const SmlaMetaBatch& b : p.batches) total += b.qRows;
  for (const SmlaMetaBatch& b : p.batches) {
    if (!batchHasWork(p, b)) continue;
    for (int64_t row = 0; row < b.qRows; ++row) {  // the gradient's M tile is G: one query row
      const SmlaTileKeys keys = smlaTileKeys(p, b, row, row);
      maxOri = std::max(maxOri, keys.ori);
      maxCmp = std::max(maxCmp, keys.cmp);
    }
  }
  const int64_t former = ceilDiv(total, aicCores);
  std::vector<uint32_t> words(static_cast<size_t>(kSmlaGradPlanWords), 0);
  words[kGradTotalRows] = static_cast<uint32_t>(total);
  words[kGradFormerCoreRows] = static_cast<uint32_t>(former);
  words[kGradRemainCoreRows] = static_cast<uint32_t>(former - 1);  // 0xFFFFFFFF for no rows, as upstream's uint32
  words[kGradRemainCores] = static_cast<uint32_t>(former * aicCores - total);
  words[kGradUsedCores] = static_cast<uint32_t>(std::min(total, aicCores));
  words[kGradMaxOriKeys] = static_cast<uint32_t>(maxOri);
  words[kGradMaxCmpKeys] = static_cast<uint32_t>(maxCmp);
  return words;
}

std::vector<uint32_t> planSmlaL1NormMetadata(int64_t totalRows, int64_t aicCores) {
  std::vector<uint32_t> words(static_cast<size_t>(kSmlaL1NormMetadataWords), 0);
  const int64_t cores = std::min({totalRows, aicCores, kSmlaL1MaxCores});
  if (cores <= 0) return words;  // no rows: zeros (upstream divides by zero)
  const int64_t remainder = totalRows % cores;
  words[kL1TotalRows] = static_cast<uint32_t>(totalRows);
  words[kL1FormerCoreRows] = static_cast<uint32_t>(ceilDiv(totalRows, cores));
  words[kL1RemainCoreRows] = static_cast<uint32_t>(totalRows / cores);
  words[kL1RemainCores] = static_cast<uint32_t>(remainder == 0 ? 0 : cores - remainder);
  words[kL1Cores] = static_cast<uint32_t>(cores);
  return words;
}

}  // namespace gradkit::ops
