// What the sparse attention metadata operators write. The planners directly: a worked example on upstream's doc
// program's HCA call, computed by hand (24 cube cores, Ascend950 and A2/A3 tiles, every core's end), the all-empty
// image, split-G, and small cases checked by hand (costs 6 ceil(m/16) + 10 ceil(s2/64) per block); the
// gradient's and the L1 norm's images. Through the API: the upstream doc programs' calls under each profile's core
// count, that words outside the image keep their content, strided metadata and inputs, and that the int32 inputs reach
// the planner as upstream's source priorities say (a TND call against the same problem built by hand).
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "ops/smla_metadata_test_util.h"
#include "ops/sparse_attention/smla_metadata_planner.h"

namespace gradkit::test::smla {
namespace {

using ops::planSmlaGradMetadata;
using ops::planSmlaL1NormMetadata;
using ops::planSmlaMetadata;
using ops::SmlaMetaBatch;
using ops::SmlaMetaProblem;

using Ends = std::vector<std::pair<uint32_t, uint32_t>>;

/** The (bn2, m) end of every enabled cube-core entry of a forward image. */
Ends endsOf(const std::vector<uint32_t>& words) {
  Ends ends;
  for (int i = 0; i < 36; ++i) {
    if (words[i * 9] == 1) ends.emplace_back(words[i * 9 + 4], words[i * 9 + 5]);
  }
  return ends;
}

/** Cube-core entry `core` of an image: the nine fields. */
std::vector<uint32_t> entry(const std::vector<uint32_t>& words, int core) {
  return {words.begin() + core * 9, words.begin() + core * 9 + 9};
}

/** The doc program's HCA problem: 4 batches of 1024 rows, N1 64, r 128, band (127, 0), causal cmp. */
SmlaMetaProblem docHcaProblem(bool ascend950) {
  SmlaMetaProblem p;
  p.ascend950 = ascend950;
  p.group = 64;
  p.hasCmp = true;
  p.cmpRatio = 128;
  p.oriMaskMode = 4;
  p.cmpMaskMode = 3;
  p.oriWinLeft = 127;
  p.oriWinRight = 0;
  for (int64_t b = 0; b < 4; ++b) p.batches.push_back({1024, b * 1024, 1024, 1024, 0});
  return p;
}

/** Dense ori kv only, no mask: every row sees all `s2` keys. */
SmlaMetaProblem denseProblem(int64_t group, std::vector<SmlaMetaBatch> batches) {
  SmlaMetaProblem p;
  p.group = group;
  p.oriMaskMode = 0;
  p.batches = std::move(batches);
  return p;
}

TEST(SmlaMetadataPlanner, TileKeysOfTheDocExample) {
  // Row i: band window min(i + 1, 128) ori keys; cmp floor((1024 128 - 1024 + i + 1) / 128) = 1016 + floor((i+1)/128).
  const SmlaMetaProblem p = docHcaProblem(true);
  const SmlaMetaBatch& b = p.batches[0];
  EXPECT_EQ(ops::smlaTileKeys(p, b, 0, 0).ori, 1);
  EXPECT_EQ(ops::smlaTileKeys(p, b, 0, 0).cmp, 1016);
  EXPECT_EQ(ops::smlaTileKeys(p, b, 127, 127).ori, 128);
  EXPECT_EQ(ops::smlaTileKeys(p, b, 127, 127).cmp, 1017);
  EXPECT_EQ(ops::smlaTileKeys(p, b, 1023, 1023).cmp, 1024);
  // An A2/A3 tile of rows 4..7: the window of row 4 starts at 0, row 7's ends at 8.
  EXPECT_EQ(ops::smlaTileKeys(p, b, 4, 7).ori, 8);
  EXPECT_EQ(ops::smlaTileKeys(p, b, 200, 203).ori, 131);
}

TEST(SmlaMetadataPlanner, SpecWorkedExampleAscend950With24Cores) {
  const Ends expected{{0, 172}, {0, 342},  {0, 512}, {0, 682},  {0, 852}, {0, 1022}, {1, 170}, {1, 340},
                      {1, 510}, {1, 680},  {1, 850}, {1, 1020}, {2, 168}, {2, 338},  {2, 508}, {2, 678},
                      {2, 849}, {2, 1020}, {3, 168}, {3, 339},  {3, 510}, {3, 681},  {3, 852}, {4, 0}};
  const std::vector<uint32_t> words = planSmlaMetadata(docHcaProblem(true), 24);
  ASSERT_EQ(words.size(), 900u);
  EXPECT_EQ(endsOf(words), expected);
  // Each core starts where the previous one ended; S2 bounds, workspace index and (G = 64, no split) max blocks 0.
  EXPECT_EQ(entry(words, 0), (std::vector<uint32_t>{1, 0, 0, 0, 0, 172, 0, 0, 0}));
  EXPECT_EQ(entry(words, 6), (std::vector<uint32_t>{1, 0, 1022, 0, 1, 170, 0, 0, 0}));
  EXPECT_EQ(entry(words, 23), (std::vector<uint32_t>{1, 3, 852, 0, 4, 0, 0, 0, 0}));
  for (int core = 24; core < 36; ++core) EXPECT_EQ(entry(words, core), std::vector<uint32_t>(9, 0)) << core;
  for (size_t w = 324; w < 900; ++w) ASSERT_EQ(words[w], 0u) << "flash-decode word " << w;
}

TEST(SmlaMetadataPlanner, SpecWorkedExampleAtlasA2A3With24Cores) {
  // M tile (256 / G) G = 256: four query rows; S2 blocks of 512.
  const Ends expected{{0, 43},  {0, 85},  {0, 127}, {0, 169}, {0, 211}, {0, 253}, {1, 40},  {1, 82},
                      {1, 124}, {1, 166}, {1, 209}, {1, 252}, {2, 40},  {2, 83},  {2, 125}, {2, 168},
                      {2, 211}, {2, 254}, {3, 42},  {3, 84},  {3, 127}, {3, 170}, {3, 213}, {4, 0}};
  EXPECT_EQ(endsOf(planSmlaMetadata(docHcaProblem(false), 24)), expected);
}

TEST(SmlaMetadataPlanner, AllEmptyIsOneCoreEndingPastTheLastBatch) {
  SmlaMetaProblem p = docHcaProblem(true);
  for (SmlaMetaBatch& b : p.batches) b.qRows = 0;  // seqused_q all 0
  std::vector<uint32_t> expected(900, 0);
  expected[0] = 1;  // core 0: enabled, (0, 0, 0) .. (B N2, 0, 0)
  expected[4] = 4;
  EXPECT_EQ(planSmlaMetadata(p, 32), expected);
  p = docHcaProblem(true);
  for (SmlaMetaBatch& b : p.batches) b.oriLen = b.cmpLen = 0;  // no kv anywhere
  EXPECT_EQ(planSmlaMetadata(p, 32), expected);
  p.hasOri = p.hasCmp = false;
  EXPECT_EQ(planSmlaMetadata(p, 24), expected);
}

TEST(SmlaMetadataPlanner, NoBatchIsTheAllEmptyPlan) {
  // batchSize 0 (or TND prefix sums [0]): core 0 from (0, 0, 0) to (B N2 = 0, 0, 0), as for B empty batches. Found by
  // fuzz_sparse_flash_mla (regression no-batch-metadata-internal-error): the planner threw, a 561000.
  SmlaMetaProblem p = docHcaProblem(true);
  p.batches.clear();
  std::vector<uint32_t> expected(900, 0);
  expected[0] = 1;
  EXPECT_EQ(planSmlaMetadata(p, 32), expected);
  p = docHcaProblem(false);
  p.batches.clear();
  EXPECT_EQ(planSmlaMetadata(p, 24), expected);
  EXPECT_EQ(planSmlaGradMetadata(p, 32), (std::vector<uint32_t>{0, 0, 0xFFFFFFFFu, 0, 0, 0, 0}));
}

TEST(SmlaMetadataPlanner, WholeBatchesPerCore) {
  // G 64, 4 keys: each row one block of 6 ceil(64/16) + 10 ceil(4/64) = 34; a batch of 4 rows 136. Core 0's limit is
  // 272 / 2 = 136 (+ 17 tolerance): batch 0 fits, batch 1's first row does not (136 + 34 > 153).
  const std::vector<uint32_t> words = planSmlaMetadata(denseProblem(64, {{4, 0, 4, 0, 0}, {4, 4, 4, 0, 0}}), 2);
  EXPECT_EQ(entry(words, 0), (std::vector<uint32_t>{1, 0, 0, 0, 1, 0, 0, 0, 0}));
  EXPECT_EQ(entry(words, 1), (std::vector<uint32_t>{1, 1, 0, 0, 2, 0, 0, 0, 0}));
  EXPECT_EQ(entry(words, 2), std::vector<uint32_t>(9, 0));
}

TEST(SmlaMetadataPlanner, RowsWhenABatchDoesNotFit) {
  // One batch of 4 rows of cost 34 on 4 cores: limits 136/4, 102/3, 68/2 = 34 take a row each (34 <= 34 + 17, a
  // second row 68 > 51); the last core takes the rest of the batch whole.
  const std::vector<uint32_t> words = planSmlaMetadata(denseProblem(64, {{4, 0, 4, 0, 0}}), 4);
  EXPECT_EQ(endsOf(words), (Ends{{0, 1}, {0, 2}, {0, 3}, {1, 0}}));
  EXPECT_EQ(entry(words, 3), (std::vector<uint32_t>{1, 0, 3, 0, 1, 0, 0, 0, 0}));
}

TEST(SmlaMetadataPlanner, CausalRowsCostMoreFurtherDown) {
  // S1 = S2 = 200, causal: row i sees i + 1 keys. Costs: rows 0..63 34, 64..127 44, 128..191 44 + 34 = 78,
  // 192..199 88; total 10688, core 0's limit 5344. Rows 0..127 cost 4992; rows 128..131 (78 each, last block 34,
  // tolerance 17) reach 5304; row 132 would make 5382 > 5361.
  SmlaMetaProblem p = denseProblem(64, {{200, 0, 200, 0, 0}});
  p.oriMaskMode = 3;
  EXPECT_EQ(endsOf(planSmlaMetadata(p, 2)), (Ends{{0, 132}, {1, 0}}));
}

TEST(SmlaMetadataPlanner, SplitGHalvesTheCoresAndFillsTwoEntries) {
  // G 128 > 64 on Ascend950: 4 cube cores plan as 2; each plan entry fills entries 2i and 2i + 1, and every entry
  // of the planned cores gets the most blocks one core runs (4 rows of one block).
  const std::vector<uint32_t> words = planSmlaMetadata(denseProblem(128, {{4, 0, 4, 0, 0}, {4, 4, 4, 0, 0}}), 4);
  EXPECT_EQ(entry(words, 0), (std::vector<uint32_t>{1, 0, 0, 0, 1, 0, 0, 0, 4}));
  EXPECT_EQ(entry(words, 1), entry(words, 0));
  EXPECT_EQ(entry(words, 2), (std::vector<uint32_t>{1, 1, 0, 0, 2, 0, 0, 0, 4}));
  EXPECT_EQ(entry(words, 3), entry(words, 2));
  EXPECT_EQ(entry(words, 4), std::vector<uint32_t>(9, 0));
  // 12 cube cores plan as 6; one batch of 4 rows uses 4 (a row each, the last the rest). Unused planned cores still
  // carry the max block count (1); entries past the planned ones stay 0.
  const std::vector<uint32_t> wide = planSmlaMetadata(denseProblem(128, {{4, 0, 4, 0, 0}}), 12);
  EXPECT_EQ(endsOf(wide), (Ends{{0, 1}, {0, 1}, {0, 2}, {0, 2}, {0, 3}, {0, 3}, {1, 0}, {1, 0}}));
  EXPECT_EQ(entry(wide, 9), (std::vector<uint32_t>{0, 0, 0, 0, 0, 0, 0, 0, 1}));
  EXPECT_EQ(entry(wide, 12), std::vector<uint32_t>(9, 0));
}

TEST(SmlaMetadataPlanner, TopkLengthsCapTheKeys) {
  // Ori top-k, mask mode 0, lengths per row: row r reads min(S2, length). Lengths of 0 leave no work: with work
  // nowhere but the kv present, upstream still enables core 0 ending at (0, 0).
  SmlaMetaProblem p = denseProblem(64, {{2, 0, 1000, 0, 0}, {2, 2, 1000, 0, 0}});
  p.oriTopk = 512;
  p.oriTopkLength = {3, 700, 0, 2000};
  EXPECT_EQ(ops::smlaTileKeys(p, p.batches[0], 0, 0).ori, 3);
  EXPECT_EQ(ops::smlaTileKeys(p, p.batches[0], 1, 1).ori, 700);
  EXPECT_EQ(ops::smlaTileKeys(p, p.batches[1], 0, 0).ori, 0);
  EXPECT_EQ(ops::smlaTileKeys(p, p.batches[1], 1, 1).ori, 1000);
  p.oriTopkLength = {0, 0, 0, 0};
  EXPECT_EQ(entry(planSmlaMetadata(p, 24), 0), (std::vector<uint32_t>{1, 0, 0, 0, 0, 0, 0, 0, 0}));
  // Without lengths (mask mode 3) oriTopk caps the window.
  p.oriTopkLength.clear();
  p.oriMaskMode = 3;
  EXPECT_EQ(ops::smlaTileKeys(p, p.batches[1], 1, 1).ori, 512);
}

TEST(SmlaMetadataPlanner, UnknownPagedLengthTakesTheTopkLength) {
  SmlaMetaProblem p = denseProblem(64, {{1, 0, ops::kSmlaUnknownKvLength, 0, 0}});
  p.oriTopk = 64;
  p.oriTopkLength = {77};
  EXPECT_EQ(ops::smlaTileKeys(p, p.batches[0], 0, 0).ori, 77);
}

TEST(SmlaMetadataPlanner, GradImage) {
  // The grad doc program: 4096 rows, band (127, 0) gives at most 128 ori keys, the last row all 1024 cmp keys.
  EXPECT_EQ(planSmlaGradMetadata(docHcaProblem(true), 32), (std::vector<uint32_t>{4096, 128, 127, 0, 32, 128, 1024}));
  EXPECT_EQ(planSmlaGradMetadata(docHcaProblem(true), 24), (std::vector<uint32_t>{4096, 171, 170, 8, 24, 128, 1024}));
  // Upstream's grad example program (examples/test_aclnn_sparse_flash_mla_grad.cpp): one row, 2048 ori keys with band
  // (127, 0), 16 cmp keys of ratio 128.
  SmlaMetaProblem one = docHcaProblem(true);
  one.group = 16;
  one.batches = {{1, 0, 2048, 16, 0}};
  EXPECT_EQ(planSmlaGradMetadata(one, 32), (std::vector<uint32_t>{1, 1, 0, 31, 1, 128, 16}));
  // No rows: ceil(0 / cores) - 1 wraps as upstream's uint32.
  for (SmlaMetaBatch& b : one.batches) b.qRows = 0;
  EXPECT_EQ(planSmlaGradMetadata(one, 32), (std::vector<uint32_t>{0, 0, 0xFFFFFFFFu, 0, 0, 0, 0}));
}

TEST(SmlaMetadataPlanner, L1NormImage) {
  const auto image = [](std::vector<uint32_t> head) {
    head.resize(64, 0);
    return head;
  };
  EXPECT_EQ(planSmlaL1NormMetadata(16, 32), image({16, 1, 1, 0, 16}));
  EXPECT_EQ(planSmlaL1NormMetadata(72, 32), image({72, 3, 2, 24, 32}));   // 72 = 8 x 3 + 24 x 2
  EXPECT_EQ(planSmlaL1NormMetadata(100, 64), image({100, 3, 2, 8, 36}));  // at most 36 cores
  EXPECT_EQ(planSmlaL1NormMetadata(0, 32), image({}));                    // upstream divides by zero
}

// ----- Through the API -----

TEST(SmlaMetadataApi, DocProgramCallUnderEachProfile) {
  for (const char* soc : {"Ascend950", "Ascend910B", "Ascend910_93"}) {
    mhc::ScopedSoc scoped(soc);
    MetaCall c;
    c.docHca();
    const MetadataResult r = c.call();
    ASSERT_EQ(r.outcome.status, ACLNN_SUCCESS) << soc << " " << r.outcome.message;
    const bool a5 = std::string(soc) == "Ascend950";
    std::vector<uint32_t> expected = planSmlaMetadata(docHcaProblem(a5), a5 ? 32 : 24);
    std::vector<uint32_t> got(r.words.begin(), r.words.begin() + 900);
    EXPECT_EQ(got, expected) << soc;
    EXPECT_EQ(endsOf(got).size(), a5 ? 32u : 24u) << soc;
    for (size_t w = 900; w < 1024; ++w) ASSERT_EQ(r.words[w], kSentinel) << soc << " word " << w << " was written";
  }
}

TEST(SmlaMetadataApi, GradAndL1WriteTheirWordsOnly) {
  MetaCall g;
  g.grad = true;
  g.docHca();
  const MetadataResult r = g.call();
  ASSERT_EQ(r.outcome.status, ACLNN_SUCCESS) << r.outcome.message;
  EXPECT_EQ(std::vector<int32_t>(r.words.begin(), r.words.begin() + 7),
            (std::vector<int32_t>{4096, 128, 127, 0, 32, 128, 1024}));
  for (size_t w = 7; w < 1024; ++w) ASSERT_EQ(r.words[w], kSentinel) << "word " << w;

  L1Call l1;
  l1.layoutQ = l1.layoutK = "TND";
  l1.batchSize = 0;
  l1.cuSeqLensQ = l1.ints({3}, {0, 6, 10});
  l1.cuSeqLensK = l1.ints({3}, {0, 128, 256});
  l1.seqUsedQ = l1.ints({2}, {6, 4});
  const MetadataResult s = l1.call();
  ASSERT_EQ(s.outcome.status, ACLNN_SUCCESS) << s.outcome.message;
  std::vector<int32_t> expected{10, 1, 1, 0, 10};
  expected.resize(64, 0);
  EXPECT_EQ(s.words, expected);
}

TEST(SmlaMetadataApi, NoBatchWritesTheAllEmptyPlan) {
  // batchSize 0 with BSND, and TND prefix sums of one element: accepted by the checks, planned as no batch (once an
  // internal 561000 from the planner).
  for (const bool tnd : {false, true}) {
    for (const bool grad : {false, true}) {
      MetaCall c;
      c.grad = grad;
      c.maxSeqlenQ = c.maxSeqlenOriKv = 16;
      if (tnd) {
        c.layoutQ = c.layoutKv = "TND";
        c.cuSeqlensQ = c.ints({1}, {0});
        c.cuSeqlensOriKv = c.ints({1}, {0});
      }
      const MetadataResult r = c.call();
      ASSERT_EQ(r.outcome.status, ACLNN_SUCCESS) << tnd << grad << " " << r.outcome.message;
      std::vector<int32_t> expected = grad ? std::vector<int32_t>{0, 0, -1, 0, 0, 0, 0} : std::vector<int32_t>(900, 0);
      if (!grad) expected[0] = 1;
      EXPECT_EQ(std::vector<int32_t>(r.words.begin(), r.words.begin() + static_cast<long>(expected.size())), expected)
          << tnd << grad;
    }
  }
}

TEST(SmlaMetadataApi, StridedViewsAreReadAndWritten) {
  MetaCall c;
  c.docHca();
  c.cmpResidualKv = int32Tensor(c.pool, {4}, {0, 0, 0, 0}, true);
  c.metadata = metadataTensor(c.pool, 1024, true);
  const MetadataResult r = c.call();
  ASSERT_EQ(r.outcome.status, ACLNN_SUCCESS) << r.outcome.message;
  const std::vector<uint32_t> expected = planSmlaMetadata(docHcaProblem(true), 32);
  EXPECT_EQ(std::vector<uint32_t>(r.words.begin(), r.words.begin() + 900), expected);
  // The gaps of the strided metadata view are untouched.
  const auto* raw = static_cast<const int32_t*>(c.metadata->data);
  for (int64_t i = 0; i < 1024; ++i) ASSERT_EQ(raw[2 * i + 1], 0) << "gap " << i;
}

TEST(SmlaMetadataApi, TndLengthsReachThePlannerAsTheSourcesSay) {
  // TND q and kv, seqused_q and seqused_ori over cu_seqlens; cmp lengths from cu_seqlens_cmp_kv; residuals; CSA with
  // cmp top-k 3 in mask mode 0 (lengths per row, rows cu_seqlens_q[b] + i).
  MetaCall c;
  c.layoutQ = c.layoutKv = "TND";
  c.hasCmpKv = true;
  c.cmpRatio = 4;
  c.cmpTopk = 3;
  c.cmpMaskMode = 0;
  c.oriMaskMode = 3;
  c.oriWinLeft = c.oriWinRight = -1;
  c.cuSeqlensQ = c.ints({4}, {0, 3, 3, 8});
  c.sequsedQ = c.ints({3}, {2, 0, 5});
  c.cuSeqlensOriKv = c.ints({4}, {0, 10, 10, 30});
  c.sequsedOriKv = c.ints({3}, {9, 0, 20});
  c.cuSeqlensCmpKv = c.ints({4}, {0, 2, 2, 7});
  c.cmpResidualKv = c.ints({3}, {1, 0, 3});
  c.cmpTopkLength = c.ints({8, 1}, {1, 2, 9, 0, 3, 1, 2, 3});
  const MetadataResult r = c.call();
  ASSERT_EQ(r.outcome.status, ACLNN_SUCCESS) << r.outcome.message;

  SmlaMetaProblem p;
  p.group = 64;
  p.hasCmp = true;
  p.cmpRatio = 4;
  p.cmpTopk = 3;
  p.oriMaskMode = 3;
  p.cmpMaskMode = 0;
  p.batches = {{2, 0, 9, 2, 1}, {0, 3, 0, 0, 0}, {5, 3, 20, 5, 3}};
  p.cmpTopkLength = {1, 2, 9, 0, 3, 1, 2, 3};
  EXPECT_EQ(std::vector<uint32_t>(r.words.begin(), r.words.begin() + 900), planSmlaMetadata(p, 32));
  EXPECT_EQ(ops::smlaTileKeys(p, p.batches[2], 0, 0).cmp, 0);  // row 3's length is 0
  EXPECT_EQ(ops::smlaTileKeys(p, p.batches[2], 1, 1).cmp, 3);  // min(5 cmp keys, length 3)
  EXPECT_EQ(ops::smlaTileKeys(p, p.batches[0], 0, 0).ori, 8);  // causal: 9 - 2 + 0 + 1
}

}  // namespace
}  // namespace gradkit::test::smla
