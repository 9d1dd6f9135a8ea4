#include "ops/compressor/compressor_plan.h"

#include <algorithm>
#include <array>
#include <memory>
#include <stdexcept>

#include "core/kernel_select.h"
#include "core/parallel.h"
#include "opapi/tensor.h"

namespace gradkit::ops {
namespace {

constexpr int64_t kMaxBlockRows = 256;     // N = coff * cmpRatio <= 2 * 128
constexpr int64_t kPackGrain = 16;         // weight rows per widening task
constexpr int64_t kWidenGrain = 64;        // fp16 x rows per widening task
constexpr int64_t kCacheColumnGrain = 64;  // state-cache channels per write task

// One projection of a panel: [rows, H] . W^T for one weight W [C, H], into C columns of the [T, 2C] projections.
std::shared_ptr<const Gemm> panelGemm(int64_t rows, const CompressorProblem& p, bool half) {
  GemmShape shape;
  shape.m = rows;
  shape.n = p.channels();
  shape.k = p.hidden;
  shape.transB = true;  // wkv / wgate are [C, H]
  shape.ldc = 2 * p.channels();
  shape.inputType = half ? ACL_FLOAT : ACL_BF16;
  return std::make_shared<const Gemm>(shape);
}

// Where the N rows of one block come from, for the block kernel.
struct BlockRows {
  std::array<const float*, kMaxBlockRows> kv{}, score{}, ape{};
};

}  // namespace

bool compressorHasNoWork(const CompressorArgs& args) { return args.x->isEmpty(); }

CompressorPlan planCompressor(const CompressorArgs& args) {
  CompressorPlan plan;
  plan.problem =
      compressorProblemOf(*args.x, *args.wkv, args.cuSeqlens, args.seqused, args.startPos, args.cmpRatio, args.coff);
  const CompressorProblem& p = plan.problem;
  WorkspaceBooking& booking = plan.workspace;
  plan.half = args.x->dtype == ACL_FLOAT16;
  plan.gradEnabled = args.gradEnabled;
  plan.cacheMode = args.cacheMode;
  plan.cacheMap = compressorCacheMapOf(*args.stateCache, *args.stateBlockTable, args.cacheMode, p);
  plan.cache = compressorEffectiveStateCache(*args.stateCache, args.stateCacheStrideDim0);

  plan.x = StagedTensor::planUnlessDense(*args.x, "x staging", booking);
  plan.wkv = StagedTensor::planUnlessDense(*args.wkv, "wkv staging", booking);
  plan.wgate = StagedTensor::planUnlessDense(*args.wgate, "wgate staging", booking);
  plan.ape = StagedTensor::planUnlessDense(*args.ape, "ape staging", booking);
  plan.cmpKv = StagedTensor::planUnlessDense(*args.cmpKv, "cmpKvOut staging", booking);
  if (plan.gradEnabled) {
    plan.softmaxScore = StagedTensor::planUnlessDense(*args.softmaxScore, "softmaxScoreOut staging", booking);
    plan.kv = StagedTensor::planUnlessDense(*args.kv, "kvOut staging", booking);
  }

  const int64_t width = 2 * p.channels();
  if (plan.half) {  // BF16 weights go to the GEMM as they are; FP16 ones are widened once
    plan.weights =
        booking.bookArray("wkv, wgate widened to fp32", static_cast<uint64_t>(width * p.hidden), sizeof(float));
  }
  const int64_t panelRows = std::min(p.tokens, kCompressorPanelRows);
  if (plan.half) {
    plan.panel =
        booking.bookArray("x panel widened to fp32", static_cast<uint64_t>(panelRows * p.hidden), sizeof(float));
  }
  if (p.tokens >= kCompressorPanelRows) plan.fullPanelGemm = panelGemm(kCompressorPanelRows, p, plan.half);
  if (p.tokens % kCompressorPanelRows != 0) {
    plan.lastPanelGemm = panelGemm(p.tokens % kCompressorPanelRows, p, plan.half);
  }
  size_t gemmBytes = 0;
  for (const auto& gemm : {plan.fullPanelGemm, plan.lastPanelGemm}) {
    if (gemm) gemmBytes = std::max(gemmBytes, gemm->scratchBytes());
  }
  plan.gemmScratch = booking.book("projection GEMM scratch", gemmBytes);
  plan.projections =
      booking.bookArray("projections KV | G [T, 2*coff*D]", static_cast<uint64_t>(p.tokens * width), sizeof(float));

  const int64_t rows = p.outputRows();
  plan.rowBatch.assign(static_cast<size_t>(rows), -1);
  plan.rowBlock.assign(static_cast<size_t>(rows), -1);
  int64_t packed = 0;  // TH: the rows of the batches before b, kept running (outputRow would re-sum them)
  for (int64_t b = 0; b < p.batch; ++b) {
    const int64_t first = p.th ? packed : p.outputRow(b, 0);
    for (int64_t j = 0; j < p.blocks(b); ++j) {
      plan.rowBatch[first + j] = b;
      plan.rowBlock[first + j] = j;
    }
    packed += p.blocks(b);
  }
  const int64_t n = p.blockRows();
  if (n > kMaxBlockRows) throw std::logic_error("compressor: more than 256 rows per block passed the checks");
  const bool gatherHistory = plan.cache.strides[2] != 1;
  plan.slotFloats = kernels::compressorFwdScratchFloats(n) + (gatherHistory ? 2 * n * p.headDim : 0);
  plan.slotFloats = (plan.slotFloats + 15) / 16 * 16;  // each slot 64-byte aligned
  plan.slots = std::max<int64_t>(1, std::min<int64_t>(threadCount(), rows));
  plan.blockScratch = booking.bookArray("block scratch (per thread)",
                                        static_cast<uint64_t>(plan.slots * plan.slotFloats), sizeof(float));
  plan.kernels = &chooseKernels(kernels::kCompressorFwdSimdKernels, kernels::kCompressorFwdScalarKernels);
  return plan;
}

namespace {

// Phase 1 helpers: FP16 weights widened once ([wkv; wgate] as [2C, H] fp32), then the projections panel by panel.
void widenWeights(const CompressorPlan& plan, const void* wkv, const void* wgate, float* wide) {
  const CompressorProblem& p = plan.problem;
  const int64_t channels = p.channels(), hidden = p.hidden;
  parallelFor(2 * channels, kPackGrain, [&](int64_t begin, int64_t end) {
    for (int64_t row = begin; row < end; ++row) {
      const auto* from = static_cast<const uint16_t*>(row < channels ? wkv : wgate) + (row % channels) * hidden;
      plan.kernels->widenHalf(from, wide + row * hidden, hidden);
    }
  });
}

void project(const CompressorPlan& plan, const void* x, const void* wkv, const void* wgate, void* memory) {
  const CompressorProblem& p = plan.problem;
  const int64_t hidden = p.hidden, width = 2 * p.channels();
  auto* out = plan.projections.in<float>(memory);
  float* panel = plan.half ? plan.panel.in<float>(memory) : nullptr;
  void* scratch = plan.gemmScratch.in(memory);
  for (int64_t first = 0; first < p.tokens; first += kCompressorPanelRows) {
    const int64_t count = std::min(kCompressorPanelRows, p.tokens - first);
    const Gemm& gemm = count == kCompressorPanelRows ? *plan.fullPanelGemm : *plan.lastPanelGemm;
    const auto* rows = static_cast<const uint16_t*>(x) + first * hidden;
    const void* a = rows;
    if (plan.half) {
      parallelFor(count, kWidenGrain, [&](int64_t begin, int64_t end) {
        plan.kernels->widenHalf(rows + begin * hidden, panel + begin * hidden, (end - begin) * hidden);
      });
      a = panel;
    }
    gemm.run(a, wkv, out + first * width, scratch);                   // KV: columns [0, C)
    gemm.run(a, wgate, out + first * width + p.channels(), scratch);  // G: columns [C, 2C)
  }
}

// Phase 2: the rows of output row `row` (block j of batch b) for the kernel; history rows gathered into `history`
// when the cache's channel stride is not 1.
void gatherRows(const CompressorPlan& plan, int64_t b, int64_t j, const float* projections, const float* ape,
                float* history, BlockRows& rows) {
  const CompressorProblem& p = plan.problem;
  const int64_t cr = p.cmpRatio, coff = p.coff, d = p.headDim, channels = p.channels(), width = 2 * channels;
  const int64_t sp = p.start(b), q = sp / cr + j, first = p.firstToken(b);
  const auto* cache = static_cast<const float*>(plan.cache.firstElement());
  const int64_t s0 = plan.cache.strides[0], s1 = plan.cache.strides[1], s2 = plan.cache.strides[2];
  for (int64_t n = 0; n < p.blockRows(); ++n) {
    const int64_t r = n / coff, h = n % coff;
    const int64_t position = (q - (coff - 1) + h) * cr + r;
    if (position < 0) {
      rows.kv[n] = rows.score[n] = rows.ape[n] = nullptr;
    } else if (position < sp) {
      const float* state = cache + plan.cacheMap.entry(b, position) * s0 + (position % plan.cacheMap.blockSize) * s1;
      const float* kvState = state + h * d * s2;
      const float* scoreState = state + (channels + h * d) * s2;
      if (s2 != 1) {
        float* kvCopy = history + 2 * n * d;
        for (int64_t c = 0; c < d; ++c) {
          kvCopy[c] = kvState[c * s2];
          kvCopy[d + c] = scoreState[c * s2];
        }
        kvState = kvCopy;
        scoreState = kvCopy + d;
      }
      rows.kv[n] = kvState;
      rows.score[n] = scoreState;
      rows.ape[n] = nullptr;  // the history's score already holds its APE
    } else {
      const float* token = projections + (first + position - sp) * width;
      rows.kv[n] = token + h * d;
      rows.score[n] = token + channels + h * d;
      rows.ape[n] = ape + r * channels + h * d;
    }
  }
}

void computeBlocks(const CompressorPlan& plan, const float* ape, void* memory) {
  const CompressorProblem& p = plan.problem;
  const int64_t rowsOut = static_cast<int64_t>(plan.rowBatch.size());
  const int64_t d = p.headDim, n = p.blockRows();
  const auto* projections = plan.projections.in<const float>(memory);
  auto* cmpKv = static_cast<uint16_t*>(plan.cmpKv.target(memory));
  auto* score = plan.gradEnabled ? static_cast<float*>(plan.softmaxScore.target(memory)) : nullptr;
  auto* kvOut = plan.gradEnabled ? static_cast<float*>(plan.kv.target(memory)) : nullptr;
  float* slotBase = plan.blockScratch.in<float>(memory);
  // Slot s runs rows [s * rows / slots, (s + 1) * rows / slots); a row's bits do not depend on its slot.
  parallelFor(plan.slots, 1, [&](int64_t begin, int64_t end) {
    BlockRows rows;
    for (int64_t slot = begin; slot < end; ++slot) {
      float* scratch = slotBase + slot * plan.slotFloats;
      float* history = scratch + kernels::compressorFwdScratchFloats(n);
      for (int64_t row = slot * rowsOut / plan.slots; row < (slot + 1) * rowsOut / plan.slots; ++row) {
        float* rowScore = score != nullptr ? score + row * n * d : nullptr;
        float* rowKv = kvOut != nullptr ? kvOut + row * n * d : nullptr;
        const int64_t b = plan.rowBatch[row];
        if (b < 0) {  // padding: zeros in every output
          std::fill(cmpKv + row * d, cmpKv + (row + 1) * d, uint16_t{0});
          if (rowScore != nullptr) std::fill(rowScore, rowScore + n * d, 0.0f);
          if (rowKv != nullptr) std::fill(rowKv, rowKv + n * d, 0.0f);
          continue;
        }
        gatherRows(plan, b, plan.rowBlock[row], projections, ape, history, rows);
        kernels::CompressorFwdBlock block;
        block.rows = n;
        block.headDim = d;
        block.kv = rows.kv.data();
        block.score = rows.score.data();
        block.ape = rows.ape.data();
        block.half = plan.half;
        block.cmpKv = cmpKv + row * d;
        block.softmaxScore = rowScore;
        block.kvOut = rowKv;
        plan.kernels->block(block, scratch);
      }
    }
  });
}

// Phase 3: kv_state = KV, score_state = G + APE of every written token, batches and positions in order; each task
// owns a slice of the 2C channels of every cache row, so a row written twice keeps the later token's values.
void writeStateCache(const CompressorPlan& plan, const float* ape, void* memory) {
  const CompressorProblem& p = plan.problem;
  const int64_t channels = p.channels(), width = 2 * channels, cr = p.cmpRatio;
  const auto* projections = plan.projections.in<const float>(memory);
  auto* cache = static_cast<float*>(plan.cache.firstElement());
  const int64_t s0 = plan.cache.strides[0], s1 = plan.cache.strides[1], s2 = plan.cache.strides[2];
  parallelFor(width, kCacheColumnGrain, [&](int64_t begin, int64_t end) {
    for (int64_t b = 0; b < p.batch; ++b) {
      const PositionRange range = compressorWriteRange(p, plan.cacheMode, b);
      const int64_t sp = p.start(b), first = p.firstToken(b);
      for (int64_t position = range.first; position < range.end; ++position) {
        if (!plan.cacheMap.writes(b, position)) continue;
        float* state = cache + plan.cacheMap.entry(b, position) * s0 + (position % plan.cacheMap.blockSize) * s1;
        const float* token = projections + (first + position - sp) * width;
        const float* apeRow = ape + (position % cr) * channels;
        for (int64_t c = begin; c < end; ++c) {
          state[c * s2] = c < channels ? token[c] : token[c] + apeRow[c - channels];
        }
      }
    }
  });
}

}  // namespace

aclnnStatus CompressorPlan::run(void* memory) const {
  const void* xData = x.read(memory);
  const void* wkvData = wkv.read(memory);
  const void* wgateData = wgate.read(memory);
  const auto* apeData = static_cast<const float*>(ape.read(memory));
  if (half) {
    auto* wide = weights.in<float>(memory);
    widenWeights(*this, wkvData, wgateData, wide);
    wkvData = wide;
    wgateData = wide + problem.channels() * problem.hidden;
  }
  project(*this, xData, wkvData, wgateData, memory);
  computeBlocks(*this, apeData, memory);
  cmpKv.writeBack(memory);
  if (gradEnabled) {
    softmaxScore.writeBack(memory);
    kv.writeBack(memory);
  }
  writeStateCache(*this, apeData, memory);
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
