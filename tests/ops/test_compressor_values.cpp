// aclnnCompressor results through the public API against the fp64 golden (golden/compressor.h; the history read
// through the test's own view of the state cache before the call): C4A, C4Li and C128A scaled down (H = 1024..1536,
// few tokens), BSH and TH, coff 1 and 2, start_pos 0 / unaligned / beyond cmpRatio, seqused tails, empty batches,
// TH rows beyond cu_seqlens[B], gradEnabled on and off, both cache modes with the cache contents after the call
// (ring wrap-around, blocks shared between batches: reads see the cache before the call, later writes win), BF16 and
// FP16, non-contiguous inputs, outputs and caches, empty x. Gates: the double benchmark (our error against fp64 no
// worse than twice the naive fp32 computation's), exact zeros where the spec says zero, cmpKv within one io ulp of
// the fp64 value (plus the fp32 projection's error floor) and nearly always its rounding. Then the kernels: SIMD =
// scalar bits, the same bits for any thread count, the exp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/parallel.h"
#include "ops/compressor/compressor_args.h"
#include "ops/compressor/compressor_plan.h"
#include "ops/compressor/kernels/compressor_fwd_kernel.h"
#include "ops/compressor_test_util.h"

namespace gradkit::test::compressor {
namespace {

struct Result {
  std::vector<uint16_t> cmpKv;
  std::vector<float> score, kv, cache;
  uint64_t workspace = 0;
  bool operator==(const Result& other) const {
    return cmpKv == other.cmpKv && std::memcmp(score.data(), other.score.data(), score.size() * 4) == 0 &&
           std::memcmp(kv.data(), other.kv.data(), kv.size() * 4) == 0 &&
           std::memcmp(cache.data(), other.cache.data(), cache.size() * 4) == 0;
  }
};

Result collect(FwdCall& call, uint64_t workspace) {
  return {call.cmpKv.dense(), call.softmaxScore.dense(), call.kv.dense(), call.cacheValues(), workspace};
}

Result runApi(const FwdCase& c, const FwdData& data) {
  FwdCall call(c, data);
  const uint64_t workspace = call.run();
  return collect(call, workspace);
}

// The plan run directly (bypassing the stream), optionally with a given kernel table.
Result runPlan(const FwdCase& c, const FwdData& data, const kernels::CompressorFwdKernels* table = nullptr) {
  FwdCall call(c, data);
  const ops::CompressorArgs args{call.x.tensor.get(),
                                 call.wkv.tensor.get(),
                                 call.wgate.tensor.get(),
                                 call.cache.tensor.get(),
                                 call.ape.tensor.get(),
                                 call.table.tensor.get(),
                                 call.cuSeqlens.tensor.get(),
                                 call.seqused.tensor.get(),
                                 call.startPos.tensor.get(),
                                 c.cmpRatio,
                                 c.coff,
                                 c.cacheMode,
                                 call.strideDim0,
                                 c.gradEnabled,
                                 call.cmpKv.tensor.get(),
                                 call.softmaxScore.tensor.get(),
                                 call.kv.tensor.get()};
  ops::CompressorPlan plan = ops::planCompressor(args);
  if (table != nullptr) plan.kernels = table;
  std::vector<unsigned char> workspace(plan.workspace.totalBytes());
  EXPECT_EQ(plan.run(workspace.data()), ACLNN_SUCCESS);
  return collect(call, plan.workspace.totalBytes());
}

// Every gate of the file comment, for one case.
void expectMatchesGolden(const FwdCase& c, const FwdData& data, const Result& r) {
  const FwdGolden<double> exact = fwdGolden<double>(c, data);
  const FwdGolden<float> naive = fwdGolden<float>(c, data);
  ASSERT_EQ(r.cmpKv.size(), exact.out.cmpKv.size());

  // cmpKv: zeros on padding rows; elsewhere within one io ulp of the fp64 value plus kProjectionFloor, and nearly
  // always its rounding. The floor: the projections sum H ~ 1000-1500 products of order-1 values in fp32 (in
  // oneDNN's order, which depends on the ISA); their partial sums reach ~sqrt(H) ~ 40, so each carries an error of a
  // few 1e-7, more than one fp16 ulp where cancellation leaves a small value (|value| < 2^-8; seen on AVX-512: 2 ulp
  // at 4.2e-4, where the naive fp32 computation itself was 1.9 ulp off).
  constexpr double kProjectionFloor = 0x1p-20;
  int64_t rounded = 0, total = 0;
  for (size_t i = 0; i < r.cmpKv.size(); ++i) {
    const double want = exact.out.cmpKv[i];
    if (want == 0.0) {
      EXPECT_EQ(r.cmpKv[i], 0) << "cmpKv[" << i << "] should be an exact zero";
      continue;
    }
    const double got = ioValue(c.dtype, r.cmpKv[i]);
    ASSERT_LE(std::fabs(got - want), ioUlp(c.dtype, want) + kProjectionFloor)
        << "cmpKv[" << i << "]: " << got << " vs " << want;
    rounded += r.cmpKv[i] == ioBits(c.dtype, want);
    ++total;
  }
  EXPECT_GE(rounded, total - std::max<int64_t>(1, total / 100)) << rounded << " of " << total << " correctly rounded";

  if (c.gradEnabled) {
    for (const auto* pair : {&r.score, &r.kv}) {
      const bool isScore = pair == &r.score;
      const auto& want = isScore ? exact.out.softmaxScore : exact.out.kv;
      const auto& naiveOut = isScore ? naive.out.softmaxScore : naive.out.kv;
      ASSERT_EQ(pair->size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) {
        if (want[i] == 0.0) {
          ASSERT_EQ((*pair)[i], 0.0f) << (isScore ? "softmaxScore" : "kv") << "[" << i << "] should be zero";
        }
      }
      EXPECT_TRUE(withinBenchmark(errorsOf(*pair, want), errorsOf(naiveOut, want)))
          << (isScore ? "softmaxScore" : "kv");
    }
  } else {
    for (float v : r.score) ASSERT_EQ(v, FwdCall::kSentinel) << "softmaxScoreOut written without gradEnabled";
    for (float v : r.kv) ASSERT_EQ(v, FwdCall::kSentinel) << "kvOut written without gradEnabled";
  }

  // The cache: written rows against the fp64 projections (double benchmark), every other value untouched.
  ASSERT_EQ(r.cache.size(), data.cache.size());
  for (size_t i = 0; i < r.cache.size(); ++i) {
    if (!exact.cacheWritten[i]) {
      ASSERT_EQ(std::memcmp(&r.cache[i], &data.cache[i], 4), 0) << "cache element " << i << " changed";
    }
  }
  EXPECT_TRUE(withinBenchmark(errorsOf(r.cache, exact.cacheAfter, exact.cacheWritten),
                              errorsOf(naive.cacheAfter, exact.cacheAfter, exact.cacheWritten)))
      << "state cache";
}

void checkCase(FwdCase c) {
  const FwdData data = randomData(c);
  SCOPED_TRACE(::testing::Message() << (c.th ? "TH" : "BSH") << " D " << c.headDim << " coff " << c.coff << " cr "
                                    << c.cmpRatio << " dtype " << c.dtype << " cacheMode " << c.cacheMode);
  expectMatchesGolden(c, data, runApi(c, data));
}

FwdCase bsh(int64_t batch, int64_t s, int64_t d, int64_t coff, int64_t cr) {
  FwdCase c;
  c.batch = batch;
  c.seqLen = s;
  c.headDim = d;
  c.coff = coff;
  c.cmpRatio = cr;
  return c;
}

FwdCase th(std::vector<int64_t> cu, int64_t tokens, int64_t d, int64_t coff, int64_t cr) {
  FwdCase c;
  c.th = true;
  c.batch = static_cast<int64_t>(cu.size()) - 1;
  c.cuSeqlens = std::move(cu);
  c.tokens = tokens;
  c.headDim = d;
  c.coff = coff;
  c.cmpRatio = cr;
  return c;
}

TEST(CompressorValues, C4ABshBf16WithHistoryAndSeqused) {
  FwdCase c = bsh(2, 10, 512, 2, 4);
  c.startPos = {0, 6};
  c.seqused = {10, 9};
  c.blockSize = 8;
  checkCase(c);
}

TEST(CompressorValues, C4LiThFp16SpecExampleWithRowsBeyondCuSeqlens) {
  // Spec 3.3's worked example (cu = [0, 5, 5, 13], start_pos = [0, 0, 3]) with two rows no batch owns.
  FwdCase c = th({0, 5, 5, 13}, 15, 128, 2, 4);
  c.startPos = {0, 0, 3};
  c.dtype = ACL_FLOAT16;
  c.hidden = 1536;
  checkCase(c);
  c.seqused = {4, 0, 7};
  c.seed = 2;
  checkCase(c);
}

TEST(CompressorValues, C128ABothLayouts) {
  FwdCase c = bsh(1, 200, 512, 1, 128);
  c.startPos = {100};  // the first block: 100 history rows, 28 tokens
  c.blockSize = 64;
  checkCase(c);
  FwdCase t = th({0, 130, 140}, 140, 512, 1, 128);
  t.dtype = ACL_FLOAT16;
  t.blockSize = 128;
  t.startPos = {0, 120};
  checkCase(t);
}

TEST(CompressorValues, EveryStartPosCoffLayoutAndTail) {
  uint32_t seed = 10;
  for (int64_t coff : {1, 2}) {
    for (int64_t sp : {0, 3, 8, 9}) {  // 0, unaligned, aligned >= cr, unaligned >= cr
      for (bool layoutTh : {false, true}) {
        FwdCase c = layoutTh ? th({0, 11, 11, 16}, 17, 128, coff, 4) : bsh(3, 11, 128, coff, 4);
        c.startPos = {sp, sp + 1, 2 * sp};
        c.seqused = layoutTh ? std::vector<int64_t>{9, 0, 5} : std::vector<int64_t>{11, 0, 6};  // an empty batch
        c.dtype = seed % 2 ? ACL_FLOAT16 : ACL_BF16;
        c.seed = seed++;
        c.blockSize = 5;
        checkCase(c);
      }
    }
  }
}

TEST(CompressorValues, OddCmpRatio) {
  FwdCase c = bsh(2, 20, 128, 2, 7);
  c.startPos = {0, 10};
  checkCase(c);
}

TEST(CompressorValues, GradDisabledLeavesTheIntermediatesAndGivesTheSameCmpKv) {
  FwdCase c = bsh(2, 9, 128, 2, 4);
  c.startPos = {2, 5};
  c.gradEnabled = false;
  checkCase(c);
  const FwdData data = randomData(c);
  const Result off = runApi(c, data);
  c.gradEnabled = true;
  const Result on = runApi(c, data);
  EXPECT_EQ(off.cmpKv, on.cmpKv);
  EXPECT_TRUE(std::memcmp(off.cache.data(), on.cache.data(), off.cache.size() * 4) == 0);
}

TEST(CompressorValues, RingBufferCacheWrapsAround) {
  for (int64_t coff : {1, 2}) {
    FwdCase c = bsh(3, 7, 128, coff, 4);
    c.cacheMode = 2;
    c.startPos = {0, 5, 12};
    c.blockSize = coff * 4 + 7 - 1;  // the smallest ring: positions wrap
    c.seed = 30 + static_cast<uint32_t>(coff);
    checkCase(c);
    FwdCase t = th({0, 6, 6, 15}, 15, 128, coff, 4);
    t.cacheMode = 2;
    t.startPos = {3, 0, 21};
    t.seqused = {6, 0, 9};
    t.blockSize = coff * 4 + 9 - 1;
    t.dtype = ACL_FLOAT16;
    checkCase(t);
  }
}

TEST(CompressorValues, SharedCacheBlocksReadBeforeAnyWriteAndLaterWritesWin) {
  // cacheMode 2, both batches on ring 0: batch 0 writes positions 0..6 (slots 0..6) while batch 1 reads its history
  // (positions 0..4) from the same slots; the reads see the cache before the call, batch 1's writes land last.
  FwdCase ring = bsh(2, 7, 128, 2, 4);
  ring.cacheMode = 2;
  ring.startPos = {0, 5};
  ring.blockSize = 14;
  ring.table = {0, 0};
  ring.blockNum = 2;
  checkCase(ring);
  // cacheMode 1, both batches on block 1 for their first column; block 0 is never written.
  FwdCase paged = bsh(2, 6, 128, 1, 4);
  paged.startPos = {0, 3};
  paged.blockSize = 16;
  paged.table = {1, 1};
  paged.tableColumns = 1;
  paged.blockNum = 3;
  checkCase(paged);
  // Table entries 0 in cacheMode 1: not written (batch 1); history read through them reads block 0 (batch 0).
  FwdCase zero = bsh(2, 6, 128, 2, 4);
  zero.startPos = {6, 0};
  zero.blockSize = 4;
  zero.table = {0, 0, 2, 0, 0, 0};
  zero.tableColumns = 3;
  zero.blockNum = 3;
  checkCase(zero);
  // Entries outside [0, block_num) in cacheMode 1: the writes through them are skipped (batch 0's column 2, all of
  // batch 1), every other cache value untouched; batch 0 reads its history through columns 0 and 1.
  FwdCase outside = bsh(2, 6, 128, 2, 4);
  outside.startPos = {6, 0};
  outside.blockSize = 4;
  outside.table = {1, 2, 9, 5, -3, 0};
  outside.tableColumns = 3;
  outside.blockNum = 3;
  checkCase(outside);
}

TEST(CompressorValues, NonContiguousInputsOutputsAndCaches) {
  FwdCase c = bsh(2, 9, 128, 2, 4);
  c.startPos = {5, 0};
  c.stridedInputs = true;
  c.stridedOutputs = true;
  c.cacheBlockPad = 13;
  checkCase(c);
  c.passStrideDim0 = false;  // stateCacheStrideDim0 = 0: the tensor's own dim-0 stride
  checkCase(c);
  c.passStrideOnly = true;  // a dense-looking tensor, the real block stride only in stateCacheStrideDim0
  checkCase(c);
  c.passStrideOnly = false;
  c.cacheChannelStride = 2;  // every other float: history rows gathered
  c.cacheMode = 2;
  c.blockSize = 16;
  checkCase(c);
  FwdCase t = th({0, 4, 13}, 14, 512, 1, 4);
  t.startPos = {2, 7};
  t.dtype = ACL_FLOAT16;
  t.stridedInputs = t.stridedOutputs = true;
  t.cacheChannelStride = 2;
  checkCase(t);
}

TEST(CompressorValues, EmptyXComputesNothingAndLeavesTheCache) {
  for (int variant = 0; variant < 3; ++variant) {
    FwdCase c = variant == 0 ? bsh(0, 5, 128, 2, 4) : variant == 1 ? bsh(2, 0, 128, 2, 4) : th({0, 0}, 0, 128, 1, 4);
    if (variant == 0) c.blockNum = 1;
    const FwdData data = randomData(c);
    const Result r = runApi(c, data);
    EXPECT_EQ(r.workspace, 0u);
    EXPECT_TRUE(r.cmpKv.empty());
    EXPECT_EQ(std::memcmp(r.cache.data(), data.cache.data(), r.cache.size() * 4), 0);
  }
}

TEST(CompressorValues, SameBitsForAnyThreadCountAndScalarKernels) {
  FwdCase c = th({0, 9, 9, 30}, 33, 128, 2, 4);
  c.startPos = {1, 0, 6};
  c.hidden = 1024;
  const FwdData data = randomData(c);
  setThreadCount(1);
  const Result reference = runPlan(c, data);
  for (int threads : {2, 3, 8}) {
    setThreadCount(threads);
    EXPECT_TRUE(runPlan(c, data) == reference) << threads << " threads";
  }
  setThreadCount(0);
  EXPECT_TRUE(runPlan(c, data, &kernels::kCompressorFwdScalarKernels) == reference) << "scalar kernels";
  EXPECT_TRUE(runPlan(c, data, &kernels::kCompressorFwdSimdKernels) == reference) << "SIMD kernels";
  EXPECT_TRUE(runApi(c, data) == reference) << "through the API";
}

TEST(CompressorValues, WorkspaceIsWhatThePlanBooks) {
  // C4A with T = 8, H = 1024 (C = 1024 channels per weight): the projections [T, 2C] fp32 always; with FP16 also the
  // weights widened to fp32 and one widened x panel. The rest is the GEMM scratch (at most one widened weight where
  // oneDNN has no BF16 kernel) and the block scratch.
  const uint64_t projections = 8 * 2048 * 4, wideWeights = 2048 * 1024 * 4, panel = 8 * 1024 * 4;
  const uint64_t slack = 1024 * 1024 * 4 + (uint64_t{4} << 20);
  for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
    FwdCase c = bsh(1, 8, 512, 2, 4);
    c.dtype = dtype;
    const FwdData data = randomData(c);
    const uint64_t workspace = runApi(c, data).workspace;
    const uint64_t floor = projections + (dtype == ACL_FLOAT16 ? wideWeights + panel : 0);
    EXPECT_GE(workspace, floor) << dtype;
    EXPECT_LT(workspace, floor + slack) << dtype;
  }
}

// The block kernel alone: SIMD and scalar give the same bits on random rows with padding, history-like rows without
// APE, channel tails, and extreme scores.
TEST(CompressorFwdKernels, SimdEqualsScalarBits) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int64_t d : {1, 7, 8, 16, 37, 128}) {
    for (int64_t n : {2, 8, 9, 256}) {
      for (bool half : {false, true}) {
        std::vector<float> values(static_cast<size_t>(3 * n * d));
        for (auto& v : values) v = (rng() % 50 == 0 ? 80.0f : 3.0f) * normal(rng);
        std::vector<const float*> kv(n), score(n), ape(n);
        for (int64_t i = 0; i < n; ++i) {
          const bool padding = i % 2 == 0 && i < n / 2;
          kv[i] = padding ? nullptr : values.data() + i * d;
          score[i] = values.data() + (n + i) * d;
          ape[i] = i % 3 == 0 ? nullptr : values.data() + (2 * n + i) * d;
        }
        std::vector<uint16_t> cmp[2];
        std::vector<float> sm[2], kvOut[2];
        for (int k = 0; k < 2; ++k) {
          cmp[k].assign(static_cast<size_t>(d), 0);
          sm[k].assign(static_cast<size_t>(n * d), -1.0f);
          kvOut[k].assign(static_cast<size_t>(n * d), -1.0f);
          kernels::CompressorFwdBlock block;
          block.rows = n;
          block.headDim = d;
          block.kv = kv.data();
          block.score = score.data();
          block.ape = ape.data();
          block.half = half;
          block.cmpKv = cmp[k].data();
          block.softmaxScore = sm[k].data();
          block.kvOut = kvOut[k].data();
          std::vector<float> scratch(static_cast<size_t>(kernels::compressorFwdScratchFloats(n)));
          (k == 0 ? kernels::kCompressorFwdSimdKernels : kernels::kCompressorFwdScalarKernels)
              .block(block, scratch.data());
        }
        EXPECT_EQ(cmp[0], cmp[1]) << "d " << d << " n " << n;
        EXPECT_EQ(std::memcmp(sm[0].data(), sm[1].data(), sm[0].size() * 4), 0) << "d " << d << " n " << n;
        EXPECT_EQ(std::memcmp(kvOut[0].data(), kvOut[1].data(), kvOut[0].size() * 4), 0);
      }
    }
  }
}

TEST(CompressorFwdKernels, WidenHalfIsExact) {
  std::vector<uint16_t> bits(65536);
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<uint16_t>(i);
  std::vector<float> simd(bits.size()), scalar(bits.size());
  kernels::kCompressorFwdSimdKernels.widenHalf(bits.data(), simd.data(), static_cast<int64_t>(bits.size()));
  kernels::kCompressorFwdScalarKernels.widenHalf(bits.data(), scalar.data(), static_cast<int64_t>(bits.size()));
  for (size_t i = 0; i < bits.size(); ++i) {
    const float want = halfToFloat(bits[i]);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(simd[i]) && std::isnan(scalar[i]));
    } else {
      EXPECT_EQ(simd[i], want) << i;
      EXPECT_EQ(scalar[i], want) << i;
    }
  }
}

TEST(CompressorFwdKernels, ExpWithinTwoUlpFlushesBelowFltMinAndKeepsNan) {
  for (float x = -87.3f; x <= 0.0f; x += 0.0137f) {
    const double want = std::exp(static_cast<double>(x));
    const double got = kernels::compressorFwdExp(x);
    const double ulp = std::ldexp(1.0, std::ilogb(want) - 23);
    ASSERT_LE(std::fabs(got - want), 2 * std::max(ulp, std::ldexp(1.0, -149))) << x;
  }
  EXPECT_EQ(kernels::compressorFwdExp(0.0f), 1.0f);
  EXPECT_EQ(kernels::compressorFwdExp(-88.0f), 0.0f);
  EXPECT_EQ(kernels::compressorFwdExp(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_TRUE(std::isnan(kernels::compressorFwdExp(std::numeric_limits<float>::quiet_NaN())));
}

}  // namespace
}  // namespace gradkit::test::compressor
