// The chunk schedule of the sparse MLA backward (smla_grad_kernel.h): the chunks' query rows, the KV rows each can
// reach (from the one visibility rule, smla_semantics.h) and where their accumulators live. Made in the plan from the
// shapes and lengths alone, so the bits never depend on the thread count.
#include <algorithm>
#include <numeric>

#include "ops/flash_attention/kernels/fa_softmax.h"
#include "ops/sparse_attention/kernels/smla_grad_kernel.h"
#include "ops/sparse_attention/kernels/smla_semantics.h"

namespace gradkit::kernels {
namespace {

int64_t roundUp16(int64_t floats) { return (floats + 15) / 16 * 16; }

/** The chunks of `count` equal runs of query rows (the last shorter), their reach and cost, without offsets. */
std::vector<SmlaGradChunk> chunksOf(const SmlaProblem& p, const SmlaGradSchedule& s, int64_t count) {
  const int64_t perChunk = (p.tokens + count - 1) / count;
  std::vector<SmlaGradChunk> chunks;
  for (int64_t t0 = 0; t0 < p.tokens; t0 += perChunk) {
    SmlaGradChunk c;
    c.token0 = t0;
    c.token1 = std::min(p.tokens, t0 + perChunk);
    c.oriLo = c.cmpLo = INT64_MAX;
    c.oriHi = c.cmpHi = INT64_MIN;
    for (int64_t token = c.token0; token < c.token1; ++token) {
      const int32_t b = p.tokenBatch[static_cast<size_t>(token)];
      if (b < 0) continue;
      const SmlaBatch& x = p.batches[static_cast<size_t>(b)];
      const int64_t i = token - x.qRow0;
      if (i >= x.s1) continue;
      const SmlaRange ori = smlaOriRange(x.s1, x.s2, i, p.oriMaskMode, p.oriWinLeft, p.oriWinRight);
      if (ori.size() > 0) {
        const int64_t row0 = s.oriRow0[static_cast<size_t>(b)];
        c.oriLo = std::min(c.oriLo, row0 + ori.begin);
        c.oriHi = std::max(c.oriHi, row0 + ori.end);
        c.cost += p.oriIndices.k > 0 ? std::min(p.oriIndices.k, ori.size()) : ori.size();
      }
      const int64_t visible = p.hasCmp ? smlaCmpVisible(x.s1, x.c, x.restored, p.cmpRatio, i, p.cmpMaskMode) : 0;
      if (visible > 0) {
        const int64_t row0 = s.cmpRow0[static_cast<size_t>(b)];
        c.cmpLo = std::min(c.cmpLo, row0);
        c.cmpHi = std::max(c.cmpHi, row0 + visible);
        c.cost += p.cmpIndices.k > 0 ? std::min(p.cmpIndices.k, visible) : visible;
      }
    }
    if (c.oriLo > c.oriHi) c.oriLo = c.oriHi = 0;
    if (c.cmpLo > c.cmpHi) c.cmpLo = c.cmpHi = 0;
    chunks.push_back(c);
  }
  return chunks;
}

/** Places each chunk's accumulators (ori rows, cmp rows, N1 dSinks partials); returns the floats in all. */
int64_t placeAccumulators(const SmlaProblem& p, const SmlaGradSchedule& s, std::vector<SmlaGradChunk>& chunks) {
  int64_t floats = 0;
  for (SmlaGradChunk& c : chunks) {
    c.oriOffset = floats;
    if (s.wantsOri) floats += roundUp16((c.oriHi - c.oriLo) * p.d);
    c.cmpOffset = floats;
    if (s.wantsCmp) floats += roundUp16((c.cmpHi - c.cmpLo) * p.d);
    c.sinkOffset = floats;
    floats += roundUp16(p.n1);
  }
  return floats;
}

}  // namespace

SmlaGradSchedule smlaGradSchedule(const SmlaProblem& p, int64_t oriRows, int64_t cmpRows, int64_t oriRowsPerBatch,
                                  int64_t cmpRowsPerBatch, bool wantsOri, bool wantsCmp, int threads) {
  SmlaGradSchedule s;
  s.kernels = &faKernels();
  s.gradOps = &smlaGradOps();
  s.oriRows = oriRows;
  s.cmpRows = cmpRows;
  s.wantsOri = wantsOri;
  s.wantsCmp = wantsCmp && p.hasCmp;
  for (size_t b = 0; b < p.batches.size(); ++b) {
    const SmlaBatch& x = p.batches[b];
    const auto batch = static_cast<int64_t>(b);
    s.oriRow0.push_back(oriRowsPerBatch > 0 ? batch * oriRowsPerBatch : x.oriRow0);
    s.cmpRow0.push_back(cmpRowsPerBatch > 0 ? batch * cmpRowsPerBatch : x.cmpRow0);
  }
  // The chunk count depends on the shapes only: the most that fit the budget.
  int64_t count = std::clamp<int64_t>(p.tokens, 1, kSmlaGradChunks);
  for (;;) {
    s.chunks = chunksOf(p, s, count);
    s.accumulatorFloats = placeAccumulators(p, s, s.chunks);
    if (count == 1 || s.accumulatorFloats * 4 <= kSmlaGradAccumulatorBudget) break;
    count = (count + 1) / 2;
  }
  s.order.resize(s.chunks.size());
  std::iota(s.order.begin(), s.order.end(), 0);
  std::stable_sort(s.order.begin(), s.order.end(), [&](int32_t x, int32_t y) {
    return s.chunks[static_cast<size_t>(x)].cost > s.chunks[static_cast<size_t>(y)].cost;
  });
  s.threads = static_cast<int>(std::clamp<int64_t>(static_cast<int64_t>(s.chunks.size()), 1, std::max(1, threads)));
  s.slotBytes = smlaGradSlotBytes(p);
  return s;
}

size_t smlaGradScratchBytes(const SmlaGradSchedule& s) {
  return s.slotBytes * static_cast<size_t>(s.threads) + static_cast<size_t>(s.accumulatorFloats) * sizeof(float);
}

}  // namespace gradkit::kernels
