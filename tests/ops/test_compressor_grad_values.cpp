// CompressorGrad values: the plan run directly on aclTensor views (and through the C API) against the fp64 golden
// (golden/compressor.h), with the naive fp32 golden as the yardstick of the precision gate (double-benchmark idea:
// our error vs fp64 at most about twice the naive fp32 computation's); exact zeros where no block routes; SIMD
// against scalar kernels and 1 / 2 / 3 threads bit for bit; BSH and TH, coff 1 and 2, cmpRatio 2..128, D 128 and
// 512, start_pos 0 / unaligned / beyond cmpRatio, seqused tails, empty batches, TH rows after cu_seqlens[B], no block
// at all, BF16 and FP16, non-contiguous inputs and outputs (and nothing written outside the output views).
//
// softmaxScore and kv come from the golden forward (golden::compressor<double>, with a random state-cache history and
// ape), so they are what a forward call hands the backward; some cases use random softmaxes instead (upstream's
// pathway 2), with the forward's zeros in padding rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "aclnnop/aclnn_compressor_grad.h"
#include "core/parallel.h"
#include "golden/compressor.h"
#include "gradkit/float_convert.h"
#include "opapi/tensor.h"
#include "ops/compressor/compressor_grad_plan.h"
#include "ops/compressor/kernels/compressor_grad_kernel.h"
#include "ops/compressor_grad_test_util.h"
#include "ops/op_test_util.h"
#include "ops/placed_tensor.h"

namespace gradkit::test {
namespace {

using namespace cgrad;  // NOLINT: the shared case, problem and gate helpers

std::vector<Case> goldenCases() {
  std::vector<Case> cases;
  uint32_t seed = 100;
  const auto add = [&](Case c) {
    c.seed = seed++;
    cases.push_back(c);
  };
  // The three named configurations in miniature, both dtypes.
  for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
    Case c4a = bsh(1, 8, 2, 4, 512);  // C4A
    c4a.dtype = dtype;
    add(c4a);
    Case c4li = bsh(2, 12, 2, 4, 128);  // C4Li
    c4li.dtype = dtype;
    add(c4li);
    Case c128a = bsh(1, 256, 1, 128, 512);  // C128A: two blocks
    c128a.dtype = dtype;
    add(c128a);
  }
  // cmpRatio 2, 3, 5 with both coff; start_pos 0, unaligned, beyond cmpRatio; seqused tails (and a batch with none).
  for (int64_t coff : {1, 2}) {
    for (int64_t cr : {2, 3, 5}) {
      Case c = bsh(3, 13, coff, cr);
      c.startPos = {0, cr + 1, 2 * cr + cr - 1};
      c.seqused = {13, 9, 0};
      add(c);
      Case t = th({0, 7, 7, 20}, 23, coff, cr);  // an empty batch and 3 rows after cu[B]
      t.startPos = {1, 0, cr};
      t.dtype = ACL_FLOAT16;
      add(t);
    }
  }
  Case unaligned = bsh(2, 10, 2, 4);  // S = 10 not a multiple of cr, start 3 < cr (prev half of block 0 padding)
  unaligned.startPos = {3, 6};
  add(unaligned);
  Case seqTail = th({0, 9, 21}, 21, 2, 4, 512);
  seqTail.seqused = {6, 12};
  seqTail.startPos = {2, 5};
  add(seqTail);
  Case longRatio = th({0, 130, 300}, 310, 2, 128);  // coff 2 with cr 128: N = 256 rows per block
  longRatio.startPos = {0, 100};
  add(longRatio);
  Case random = bsh(2, 16, 2, 4, 512);  // pathway 2: random softmaxes
  random.randomSoftmax = true;
  random.startPos = {5, 0};
  add(random);
  Case randomTh = th({0, 11, 30}, 33, 1, 5);
  randomTh.randomSoftmax = true;
  randomTh.dtype = ACL_FLOAT16;
  add(randomTh);
  Case wide = bsh(1, 12, 2, 3);  // H = 2048
  wide.hidden = 2048;
  add(wide);
  return cases;
}

// The problems of goldenCases(), made once (the golden forward behind each is the slow part).
const std::vector<Problem>& goldenProblems() {
  static const std::vector<Problem> problems = [] {
    std::vector<Problem> all;
    for (const Case& c : goldenCases()) all.push_back(makeProblem(c));
    return all;
  }();
  return problems;
}

TEST(CompressorGradValues, WithinTheGateOfTheNaiveFp32Golden) {
  double worst = 0;
  for (const Problem& p : goldenProblems()) worst = std::max(worst, expectWithinGate(p, runPlan(p)));
  RecordProperty("worst_ratio_vs_naive_fp32", std::to_string(worst));
}

TEST(CompressorGradValues, ScalarKernelsGiveTheSimdBits) {
  for (const Problem& p : goldenProblems()) {
    EXPECT_TRUE(
        sameBits(runPlan(p, &kernels::kCompressorGradSimdKernels), runPlan(p, &kernels::kCompressorGradScalarKernels)))
        << describe(p.c);
  }
}

TEST(CompressorGradValues, SmallChunksAndPieces) {
  // Chunks of 5 or 7 rows cut blocks (and a batch's last block) in the middle; pieces of 24 channels leave a
  // partial piece and partial vectors.
  for (int64_t chunk : {5, 7}) {
    Case c = th({0, 9, 9, 26}, 30, 2, 4);
    c.startPos = {2, 0, 5};
    c.options.chunkRows = chunk;
    c.options.pieceWidth = 24;
    c.seed = 40 + static_cast<uint32_t>(chunk);
    const Problem p = makeProblem(c);
    const Result simd = runPlan(p, &kernels::kCompressorGradSimdKernels);
    expectWithinGate(p, simd);
    EXPECT_TRUE(sameBits(simd, runPlan(p, &kernels::kCompressorGradScalarKernels))) << describe(c);
    // dApe does not depend on the chunking (each element sums the same terms in the same order).
    Case whole = c;
    whole.options = {};
    const Result one = runPlan(makeProblem(whole));
    EXPECT_EQ(0, std::memcmp(one.dApe.data(), simd.dApe.data(), one.dApe.size() * sizeof(float))) << describe(c);
  }
}

TEST(CompressorGradValues, SameBitsForAnyThreadCount) {
  ThreadCountGuard guard;
  std::vector<Case> cases;
  Case a = th({0, 40, 47, 90}, 96, 2, 4, 512);
  a.startPos = {3, 0, 9};
  a.options.chunkRows = 32;
  cases.push_back(a);
  Case b = bsh(2, 136, 1, 128, 512);
  b.startPos = {64, 0};
  b.dtype = ACL_FLOAT16;
  cases.push_back(b);
  for (const Case& c : cases) {
    const Problem p = makeProblem(c);
    for (const auto* table : {&kernels::kCompressorGradSimdKernels, &kernels::kCompressorGradScalarKernels}) {
      setThreadCount(1);
      const Result one = runPlan(p, table);
      expectWithinGate(p, one);
      for (int threads : {2, 3}) {
        setThreadCount(threads);
        EXPECT_TRUE(sameBits(one, runPlan(p, table))) << threads << " threads " << describe(c);
      }
    }
  }
}

TEST(CompressorGradValues, NonContiguousInputsAndOutputs) {
  Case c = th({0, 10, 19}, 22, 2, 3);
  c.startPos = {4, 0};
  c.seqused = {10, 7};
  c.stridedInputs = true;
  c.stridedOutputs = true;
  const Problem p = makeProblem(c);
  const Result strided = runPlan(p);
  expectWithinGate(p, strided);
  Case dense = c;
  dense.stridedInputs = dense.stridedOutputs = false;
  EXPECT_TRUE(sameBits(strided, runPlan(makeProblem(dense))));
  Case mixed = bsh(2, 8, 1, 4, 512);  // strided outputs only
  mixed.stridedOutputs = true;
  const Problem q = makeProblem(mixed);
  expectWithinGate(q, runPlan(q));
}

TEST(CompressorGradValues, NoBlockGivesZeros) {
  // start 1, 2 tokens of cr 4: no aligned block ends; seqused 0; TH with every batch too short. Every output is
  // written (the views start as garbage) and is exactly zero.
  std::vector<Case> cases;
  Case a = bsh(2, 2, 2, 4);
  a.startPos = {1, 0};
  cases.push_back(a);
  Case b = bsh(1, 8, 1, 4, 512);
  b.seqused = {0};
  cases.push_back(b);
  Case t = th({0, 3, 6}, 8, 2, 4);
  t.dtype = ACL_FLOAT16;
  cases.push_back(t);
  for (const Case& c : cases) {
    const Problem p = makeProblem(c);
    const Result r = runPlan(p);
    for (uint16_t v : r.dX) ASSERT_EQ(v, 0) << describe(c);
    for (uint16_t v : r.dWkv) ASSERT_EQ(v, 0) << describe(c);
    for (uint16_t v : r.dWgate) ASSERT_EQ(v, 0) << describe(c);
    for (float v : r.dApe) ASSERT_EQ(v, 0.0f) << describe(c);
    EXPECT_TRUE(r.gapsIntact);
  }
}

TEST(CompressorGradValues, UnroutedRowsAreZero) {
  // TH rows after cu[B], seqused tails, uncompressed tails and an empty batch: their dX rows are exactly 0; every
  // routed row is not all zero (random data).
  Case c = th({0, 11, 11, 25}, 31, 2, 4);
  c.seqused = {9, 0, 14};
  c.startPos = {0, 0, 2};
  const Problem p = makeProblem(c);
  const Result r = runPlan(p);
  const int64_t hidden = c.hidden;
  const auto rowZero = [&](int64_t t) {
    for (int64_t h = 0; h < hidden; ++h) {
      if (r.dX[static_cast<size_t>(t * hidden + h)] != 0) return false;
    }
    return true;
  };
  // Batch 0: positions 0..8 used, blocks end at 8: tokens 0..7 routed. Batch 2: positions 2..15, limit 16: tokens
  // 11..24 routed. Everything else (8..10, 25..30) zero.
  for (int64_t t = 0; t < 31; ++t) {
    const bool routed = t < 8 || (t >= 11 && t < 25);
    EXPECT_EQ(rowZero(t), !routed) << "row " << t;
  }
  expectWithinGate(p, r);
  // x rows that no block reads are never read: NaN there changes nothing (no 0 * NaN reaches dW).
  Problem poisoned = p;
  for (int64_t t = 0; t < 31; ++t) {
    if (t < 8 || (t >= 11 && t < 25)) continue;
    std::fill_n(poisoned.x.begin() + t * hidden, hidden, uint16_t{0x7FC0});
  }
  EXPECT_TRUE(sameBits(r, runPlan(poisoned)));
}

TEST(CompressorGradValues, CompensationKeepsCancellingSumsAccurate) {
  // kv rows nearly equal within each block (K = 8 + tiny noise): K - w cancels to ~1e-6 of K, so dZ and dApe are all
  // cancellation. The naive fp32 golden loses most digits; TwoSum(K, -w) with the compensated w keeps ours close.
  Case c = bsh(1, 64, 2, 8, 128);
  c.randomSoftmax = true;
  c.seed = 77;
  Problem p = makeProblem(c);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> tiny(-1e-5f, 1e-5f);
  for (float& k : p.kv) k = k == 0.0f ? 0.0f : 8.0f + tiny(rng);
  const Result r = runPlan(p);
  const auto g = runGolden<double>(p);
  const auto naive = runGolden<float>(p);
  const Error ours = errorOf(r.dApe, g.dApe), theirs = errorOf(naive.dApe, g.dApe);
  EXPECT_LT(ours.meanRelative, 0.1 * theirs.meanRelative) << ours.meanRelative << " vs naive " << theirs.meanRelative;
  EXPECT_LT(ours.meanRelative, 1e-4);
}

// ---------------------------------------------------------------------------------------------------------------
// Through the C API (checks, executor, stream): the same bits as the plan run directly.
Result runApi(const Problem& p) {
  Views views(p);
  const ops::CompressorGradArgs a = views.args(p.c);
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus status = aclnnCompressorGradGetWorkspaceSize(a.x, a.wkv, a.wgate, a.dCmpKv, a.softmaxScore, a.kv,
                                                                 a.cuSeqlens, a.seqused, a.startPos, a.cmpRatio, a.coff,
                                                                 a.dX, a.dWkv, a.dWgate, a.dApe, &size, &executor);
  EXPECT_EQ(status, ACLNN_SUCCESS) << recentError();
  if (status != ACLNN_SUCCESS) return {};
  std::vector<uint64_t> workspace(size / 8 + 1);
  EXPECT_EQ(aclnnCompressorGrad(workspace.data(), size, executor, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << recentError();
  return views.result();
}

TEST(CompressorGradValues, CApiMatchesThePlan) {
  Case a = bsh(2, 8, 2, 4, 512);
  a.startPos = {0, 5};
  a.stridedInputs = true;
  Case b = th({0, 6, 20}, 24, 1, 3);
  b.seqused = {6, 11};
  b.dtype = ACL_FLOAT16;
  b.stridedOutputs = true;
  for (const Case& c : {a, b}) {
    const Problem p = makeProblem(c);
    const Result api = runApi(p);
    expectWithinGate(p, api);
    EXPECT_TRUE(sameBits(api, runPlan(p))) << describe(c);
  }
}

}  // namespace
}  // namespace gradkit::test
