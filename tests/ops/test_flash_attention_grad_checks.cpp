// The first phase of every flash attention backward entry point (aclnnFlashAttentionScoreGrad V1-V4,
// aclnnFlashAttentionUnpaddingScoreGrad V1-V5): valid calls in every layout, sparse mode and pse type pass; every
// rule of spec fag.md 2.4-2.15 fails with its code and a message naming the argument. Only the first phase runs (the
// plan may still be a placeholder), so a valid call is asserted by its status and executor only.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ops/fa_check_test_util.h"

namespace gradkit::test::fa {
namespace {

constexpr GradEntry kPaddedEntries[] = {GradEntry::Grad, GradEntry::GradV2, GradEntry::GradV3, GradEntry::GradV4};
constexpr GradEntry kTndEntries[] = {GradEntry::Unpad,   GradEntry::UnpadV2, GradEntry::UnpadV3,
                                     GradEntry::UnpadV4, GradEntry::UnpadV5, GradEntry::GradV4};

class FagChecks : public FaChecksFixture<FagCall, GradEntry, GradEntry::GradV2> {};

TEST_F(FagChecks, ValidCallsPassInEveryPaddedLayoutAndDtypeThroughEveryPaddedEntryPoint) {
  for (const char* layout : {"BNSD", "BSND", "BSH", "SBH"}) {
    for (aclDataType dtype : {ACL_FLOAT16, ACL_BF16, ACL_FLOAT}) {
      FaShape s;
      s.layout = layout;
      s.dtype = dtype;
      c.build(s);
      for (GradEntry e : kPaddedEntries) {
        const Outcome o = c.call(e);
        EXPECT_EQ(o.status, ACLNN_SUCCESS) << gradApi(e) << " " << layout << ": " << o.message;
      }
    }
  }
}

TEST_F(FagChecks, ValidTndCallsPassThroughEveryVarLenEntryPointAndGradV4) {
  c.build(tnd());
  for (GradEntry e : kTndEntries) {
    const Outcome o = c.call(e);
    EXPECT_EQ(o.status, ACLNN_SUCCESS) << gradApi(e) << ": " << o.message;
  }
  c.statsLayout = "same_as_input";
  EXPECT_EQ(c.call(GradEntry::UnpadV4).status, ACLNN_SUCCESS);
  EXPECT_EQ(c.call(GradEntry::GradV4).status, ACLNN_SUCCESS);
}

TEST_F(FagChecks, TndAcceptsTrailingZeroBatchesAndRowsBeyondTheLastEnd) {
  c.build(tnd());
  c.actualSeqQLen = c.array({5, 5, 16, 0, 0});
  c.actualSeqKvLen = c.array({7, 10, 20, 0, 0});  // T2 = 24: rows 20..23 belong to no batch
  const Outcome o = c.call(GradEntry::Unpad);
  EXPECT_EQ(o.status, ACLNN_SUCCESS) << o.message;
}

TEST_F(FagChecks, UpstreamGradV4UnitTestCallPasses) {
  // hicann's op_api UT: SBH [256, 1, 192] FLOAT, uint8 mask [256, 256], outDtype 1, 0-dim dpse / rope outputs.
  FaShape s;
  s.layout = "SBH", s.b = 1, s.n1 = 1, s.n2 = 1, s.s1 = 256, s.s2 = 256, s.d = 192, s.dv = 192, s.dtype = ACL_FLOAT;
  c.build(s);
  c.attenMask = c.pool.make(ACL_UINT8, {256, 256});
  c.outDtype = 1;
  c.dpse = c.pool.make(ACL_FLOAT, {});
  c.dqRope = c.pool.make(ACL_FLOAT, {});
  c.dkRope = c.pool.make(ACL_FLOAT, {});
  const Outcome o = c.call(GradEntry::GradV4);
  EXPECT_EQ(o.status, ACLNN_SUCCESS) << o.message;
}

TEST_F(FagChecks, EverySparseModeWithItsMaskPasses) {
  const int64_t s1 = c.shape.s1, s2 = c.shape.s2, b = c.shape.b;
  struct ModeMask {
    int64_t mode;
    std::vector<int64_t> mask;
  };
  const ModeMask padded[] = {{0, {s1, s2}},       {0, {1, 1, s1, s2}}, {0, {b, 1, s1, s2}}, {0, {b, 4, s1, s2}},
                             {1, {s1, s2}},       {2, {2048, 2048}},   {3, {2048, 2048}},   {4, {2048, 2048}},
                             {5, {b, 1, s1, s2}}, {5, {b, 4, s1, s2}}, {6, {3072, 2048}}};
  for (const ModeMask& m : padded) {
    c.sparseMode = m.mode;
    c.attenMask = c.pool.make(m.mode == 1 ? ACL_UINT8 : ACL_BOOL, m.mask);
    c.prefix = c.array({s2 - s1, s2});  // S1 <= S2: each in [S2 - S1, S2]
    const Outcome o = c.call(GradEntry::GradV2);
    EXPECT_EQ(o.status, ACLNN_SUCCESS) << "mode " << m.mode << ": " << o.message;
  }
  c.build(tnd());
  for (int64_t mode : {0, 1, 2, 3, 4, 6, 7, 8}) {
    c.sparseMode = mode;
    c.preTokens = 65536, c.nextTokens = mode == 7 ? 0 : 65536;
    const bool full = mode == 0 || mode == 1;
    c.attenMask =
        c.pool.make(ACL_BOOL, full ? std::vector<int64_t>{11, 14}
                                   : (mode == 6 ? std::vector<int64_t>{3072, 2048} : std::vector<int64_t>{2048, 2048}));
    c.prefix = c.array({7, 3, 14});
    const Outcome o = c.call(GradEntry::UnpadV2);
    EXPECT_EQ(o.status, ACLNN_SUCCESS) << "TND mode " << mode << ": " << o.message;
  }
}

TEST_F(FagChecks, EveryPseTypeAndShapePasses) {
  const int64_t b = 2, n = 4, s1 = 16, s2 = 24;
  for (const std::vector<int64_t>& shape :
       {std::vector<int64_t>{b, n, s1, s2}, std::vector<int64_t>{b, n, 1, s2}, std::vector<int64_t>{1, n, s1, s2}}) {
    for (int64_t type : {0, 1}) {
      c.pse = c.pool.make(ACL_FLOAT16, shape);
      c.pseType = type;
      const Outcome o = c.call(GradEntry::GradV2);
      EXPECT_EQ(o.status, ACLNN_SUCCESS) << o.message;
    }
  }
  FaShape square;
  square.s2 = square.s1;
  c.build(square);
  for (int64_t type : {2, 3}) {
    for (const std::vector<int64_t>& slopes : {std::vector<int64_t>{n}, std::vector<int64_t>{b, n}}) {
      c.pse = c.pool.make(ACL_FLOAT, slopes);
      c.pseType = type;
      c.qStartIdx = c.array({3}), c.kvStartIdx = c.array({0});
      const Outcome o = c.call(GradEntry::GradV2);
      EXPECT_EQ(o.status, ACLNN_SUCCESS) << o.message;
    }
  }
  // V1 has no pseType: a slopes tensor is read as a pseType 1 bias of the wrong dtype.
  EXPECT_FAILS(c.call(GradEntry::Grad), ACLNN_ERR_PARAM_INVALID, quoted("pseShiftOptional"), "the dtype of query");
}

TEST_F(FagChecks, CompressedAlibiPseNeedsSquareCausalAttentionOverTheFirst1024Rows) {
  FaShape s;
  s.b = 1, s.n1 = 1, s.n2 = 1, s.s1 = 1040, s.s2 = 1040, s.d = 8, s.dv = 8;
  c.build(s);
  c.pse = c.pool.make(ACL_FLOAT16, {1, 1, 1024, 1040});
  c.sparseMode = 3;
  c.attenMask = c.pool.make(ACL_BOOL, {2048, 2048});
  Outcome o = c.call(GradEntry::GradV2);
  EXPECT_EQ(o.status, ACLNN_SUCCESS) << o.message;
  c.sparseMode = 0;
  c.attenMask = c.pool.make(ACL_BOOL, {1040, 1040});
  c.nextTokens = 0;
  EXPECT_EQ(c.call(GradEntry::GradV2).status, ACLNN_SUCCESS);
  c.nextTokens = 5;
  EXPECT_FAILS(c.call(GradEntry::GradV2), ACLNN_ERR_PARAM_INVALID, quoted("pseShiftOptional"), "causal");
  c.attenMask = nullptr;
  c.nextTokens = 0;
  EXPECT_FAILS(c.call(GradEntry::GradV2), ACLNN_ERR_PARAM_INVALID, quoted("pseShiftOptional"), "causal");
  // S1 < 1024: the table holds more rows than there are queries.
  c.build(FaShape{});
  c.pse = c.pool.make(ACL_FLOAT16, {1, 4, 1024, 24});
  EXPECT_FAILS(c.call(GradEntry::GradV2), ACLNN_ERR_PARAM_INVALID, quoted("pseShiftOptional"), "S1 = S2 >= 1024");
}

TEST_F(FagChecks, TndPseIsTheCompressedAlibiFormOverSquareNonEmptyBatches) {
  FaShape s = tnd();
  s.seqQ = {5, 11}, s.seqKv = {5, 11};
  c.build(s);
  c.sparseMode = 3;
  c.attenMask = c.pool.make(ACL_BOOL, {2048, 2048});
  c.pse = c.pool.make(ACL_FLOAT16, {2, 4, 1024, 11});
  Outcome o = c.call(GradEntry::UnpadV2);
  EXPECT_EQ(o.status, ACLNN_SUCCESS) << o.message;
  c.pse = c.pool.make(ACL_FLOAT16, {2, 4, 11, 11});
  EXPECT_FAILS(c.call(GradEntry::UnpadV2), ACLNN_ERR_PARAM_INVALID, quoted("pseShiftOptional"), "1024");
  s.seqKv = {6, 10};
  c.build(s);
  c.sparseMode = 3;
  c.attenMask = c.pool.make(ACL_BOOL, {2048, 2048});
  c.pse = c.pool.make(ACL_FLOAT16, {2, 4, 1024, 10});
  EXPECT_FAILS(c.call(GradEntry::UnpadV2), ACLNN_ERR_PARAM_INVALID, quoted("pseShiftOptional"), "S1 = S2");
  c.build(tnd());  // batch 1 has no queries
  c.attenMask = c.pool.make(ACL_BOOL, {2048, 2048});
  c.pse = c.pool.make(ACL_FLOAT16, {3, 4, 1024, 14});
  EXPECT_FAILS(c.call(GradEntry::UnpadV2), ACLNN_ERR_PARAM_INVALID, quoted("pseShiftOptional"), "length 0");
}

TEST_F(FagChecks, AllEmptyOutputsSucceedWithoutFurtherChecks) {
  FaShape s;
  s.b = 0;
  c.build(s);
  c.headNum = -3;  // not looked at
  const Outcome o = c.call(GradEntry::GradV2);
  EXPECT_EQ(o.status, ACLNN_SUCCESS) << o.message;
}

TEST_F(FagChecks, EmptySizesWithOutputsToWriteAre161002) {
  FaShape s;
  s.s2 = 0;
  c.build(s);  // dk, dv empty but dq not
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("query"), "S2 = 0");
}

TEST_F(FagChecks, NullRequiredPointersAre161001) {
  const struct {
    const char* name;
    const aclTensor** slot;
  } required[] = {{"query", &c.query},
                  {"keyIn", &c.key},
                  {"value", &c.value},
                  {"dy", &c.dy},
                  {"attentionInOptional", &c.attentionIn},
                  {"dqOut", &c.dq},
                  {"dkOut", &c.dk},
                  {"dvOut", &c.dv},
                  {"softmaxMaxOptional", &c.softmaxMax},
                  {"softmaxSumOptional", &c.softmaxSum}};
  for (const auto& r : required) {
    const aclTensor* saved = *r.slot;
    *r.slot = nullptr;
    for (GradEntry e : {GradEntry::Grad, GradEntry::GradV4}) {
      EXPECT_FAILS(c.call(e), ACLNN_ERR_PARAM_NULLPTR, quoted(r.name), gradApi(e));
    }
    *r.slot = saved;
  }
  c.nullLayout = true;
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_NULLPTR, quoted("inputLayout"));
  c.nullLayout = false;
  c.nullWorkspaceSize = true;
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_NULLPTR, quoted("workspaceSize"));
  c.nullWorkspaceSize = false;
  c.nullExecutor = true;
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_NULLPTR, quoted("executor"));
}

TEST_F(FagChecks, GradV4ExistsOnlyInTheAscend950Profile) {
  for (const char* soc : {"Ascend910B", "Ascend910_93"}) {
    ScopedSoc scoped(soc);
    EXPECT_FAILS(c.call(GradEntry::GradV4), ACLNN_ERR_PARAM_INVALID, "aclnnFlashAttentionScoreGradV4", soc,
                 "Ascend950");
    EXPECT_EQ(c.call(GradEntry::GradV2).status, ACLNN_SUCCESS);
  }
}

TEST_F(FagChecks, SinkAndFp8ScalesAreNotSupportedYet) {
  c.sink = c.pool.make(ACL_FLOAT, {4});
  EXPECT_FAILS(c.call(GradEntry::GradV3), ACLNN_ERR_PARAM_INVALID, quoted("sinkInOptional"), "not supported yet");
  EXPECT_FAILS(c.call(GradEntry::GradV4), ACLNN_ERR_PARAM_INVALID, quoted("sinkInOptional"), "not supported yet");
  c.sink = c.pool.make(ACL_FLOAT, {0});
  EXPECT_EQ(c.call(GradEntry::GradV3).status, ACLNN_SUCCESS) << "an empty sink is no sink";
  c.dScaleQ = c.pool.make(ACL_FLOAT, {2, 4, 1, 1});
  EXPECT_FAILS(c.call(GradEntry::GradV4), ACLNN_ERR_PARAM_INVALID, quoted("dScaleQOptional"), "FP8");
  c.dScaleQ = nullptr;
  c.dScaleDy = c.pool.make(ACL_FLOAT, {2, 4, 1, 1});
  EXPECT_FAILS(c.call(GradEntry::GradV4), ACLNN_ERR_PARAM_INVALID, quoted("dScaleDyOptional"), "FP8");
  c.dScaleDy = nullptr;
  c.outDtype = 2;
  EXPECT_FAILS(c.call(GradEntry::GradV4), ACLNN_ERR_PARAM_INVALID, quoted("outDtype"), "given 2");
}

TEST_F(FagChecks, LayoutAndHeadNumRules) {
  c.headNum = 0;
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("headNum"), "headNum > 0");
  c.headNum = 2;
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("headNum"), "N1 = 4");
  c.headNum = 4;
  c.layout = "NSD";
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("inputLayout"), "\"NSD\"");
  c.layout = "TND";
  EXPECT_FAILS(c.call(GradEntry::Grad), ACLNN_ERR_PARAM_INVALID, quoted("inputLayout"), "VarLen");
  c.layout = "BNSD";
  EXPECT_FAILS(c.call(GradEntry::Unpad), ACLNN_ERR_PARAM_INVALID, quoted("inputLayout"), "\"TND\"");
  c.layout = "BSND";  // query is BNSD [2, 4, 16, 32]: N1 read as 16
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("headNum"));
  c.layout = "BSH";
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("query"), "3 dims");
}

TEST_F(FagChecks, SizeRulesOfTheLayouts) {
  FaShape s;
  s.layout = "BSH";
  c.build(s);
  c.headNum = 3;  // H = 128 is not 3 * D
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("query"), "headNum * D");
  s = FaShape{};
  s.n2 = 3;
  c.build(s);
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("keyIn"), "dividing N1 = 4");
  c.build(FaShape{});
  c.key = c.pool.make(ACL_FLOAT16, {2, 2, 24, 16});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("keyIn"), "D = 32");
  c.key = c.pool.make(ACL_FLOAT16, {3, 2, 24, 32});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("keyIn"), "B = 2");
  c.build(FaShape{});
  c.value = c.pool.make(ACL_FLOAT16, {2, 2, 23, 16});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("value"), "except the last");
  s = FaShape{};
  s.dv = 40;
  c.build(s);
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("value"), "D_V <= D = 32");
  s = FaShape{};
  s.b = 1, s.s1 = 2, s.s2 = 2, s.d = 800, s.dv = 8;
  c.build(s);
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("query"), "<= 768", "D = 800");
  s = FaShape{};
  s.b = 1, s.s1 = 1, s.s2 = 1, s.n1 = 258, s.n2 = 2, s.d = 8, s.dv = 8;
  c.build(s);
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("query"), "[1, 256]");
}

TEST_F(FagChecks, TndSequenceArrayRules) {
  c.build(tnd());
  c.actualSeqQLen = nullptr;
  EXPECT_FAILS(c.call(GradEntry::Unpad), ACLNN_ERR_PARAM_NULLPTR, quoted("actualSeqQLenOptional"));
  c.actualSeqQLen = c.array({5, 5, 16});
  c.actualSeqKvLen = c.array({});
  EXPECT_FAILS(c.call(GradEntry::Unpad), ACLNN_ERR_PARAM_INVALID, quoted("actualSeqKvLenOptional"), "at least 1");
  c.actualSeqKvLen = c.array({7, 24});
  EXPECT_FAILS(c.call(GradEntry::Unpad), ACLNN_ERR_PARAM_INVALID, quoted("actualSeqKvLenOptional"), "3 entries");
  c.actualSeqKvLen = c.array({7, 3, 24});
  EXPECT_FAILS(c.call(GradEntry::Unpad), ACLNN_ERR_PARAM_INVALID, quoted("actualSeqKvLenOptional"), "non-decreasing",
               "entry 1 = 3");
  c.actualSeqKvLen = c.array({7, 0, 24});  // a 0 before a positive entry is not a trailing zero
  EXPECT_FAILS(c.call(GradEntry::Unpad), ACLNN_ERR_PARAM_INVALID, quoted("actualSeqKvLenOptional"), "entry 1 = 0");
  c.actualSeqKvLen = c.array({-1, 10, 24});
  EXPECT_FAILS(c.call(GradEntry::Unpad), ACLNN_ERR_PARAM_INVALID, quoted("actualSeqKvLenOptional"), "non-negative");
  c.actualSeqKvLen = c.array({7, 10, 25});
  EXPECT_FAILS(c.call(GradEntry::Unpad), ACLNN_ERR_PARAM_INVALID, quoted("actualSeqKvLenOptional"), "T2", "given 25");
  c.actualSeqKvLen = nullptr;
  EXPECT_FAILS(c.call(GradEntry::GradV4), ACLNN_ERR_PARAM_NULLPTR, quoted("actualSeqKvLenOptional"));
}

TEST_F(FagChecks, SoftmaxInLayoutIsEmptyOrSameAsInput) {
  c.build(tnd());
  c.statsLayout = "NTD";
  EXPECT_FAILS(c.call(GradEntry::UnpadV4), ACLNN_ERR_PARAM_INVALID, quoted("softmaxInLayout"), "same_as_input");
  EXPECT_FAILS(c.call(GradEntry::UnpadV5), ACLNN_ERR_PARAM_INVALID, quoted("softmaxInLayout"), "\"NTD\"");
}

TEST_F(FagChecks, DtypeRules) {
  FaShape s;
  s.dtype = ACL_INT32;
  c.build(s);
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("query"), "FLOAT16");
  c.build(FaShape{});
  c.key = c.pool.make(ACL_FLOAT, {2, 2, 24, 32});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("keyIn"), "the dtype of query");
  c.build(FaShape{});
  c.dy = c.pool.make(ACL_BF16, {2, 4, 16, 16});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("dy"), "the dtype of query");
  c.build(FaShape{});
  c.dq = c.pool.make(ACL_FLOAT, {2, 4, 16, 32});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("dqOut"), "the dtype of query");
  c.build(FaShape{});
  c.softmaxSum = c.pool.make(ACL_FLOAT16, {2, 4, 16, 8});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("softmaxSumOptional"), "FLOAT");
}

TEST_F(FagChecks, ShapeRulesOfDyAttentionInStatisticsAndOutputs) {
  const struct {
    const char* name;
    const aclTensor** slot;
    aclDataType dtype;
    std::vector<int64_t> wrong;
  } cases[] = {{"dy", &c.dy, ACL_FLOAT16, {2, 4, 16, 32}},
               {"attentionInOptional", &c.attentionIn, ACL_FLOAT16, {2, 4, 15, 16}},
               {"softmaxMaxOptional", &c.softmaxMax, ACL_FLOAT, {2, 4, 16, 1}},
               {"softmaxSumOptional", &c.softmaxSum, ACL_FLOAT, {2, 4, 16}},
               {"dqOut", &c.dq, ACL_FLOAT16, {2, 4, 16, 16}},
               {"dkOut", &c.dk, ACL_FLOAT16, {2, 4, 24, 32}},
               {"dvOut", &c.dv, ACL_FLOAT16, {2, 2, 24, 32}}};
  for (const auto& k : cases) {
    const aclTensor* saved = *k.slot;
    *k.slot = c.pool.make(k.dtype, k.wrong);
    EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted(k.name), "shape");
    *k.slot = saved;
  }
  c.build(tnd());
  c.softmaxMax = c.pool.make(ACL_FLOAT, {3, 4, 11, 8});
  EXPECT_FAILS(c.call(GradEntry::Unpad), ACLNN_ERR_PARAM_INVALID, quoted("softmaxMaxOptional"), "[16, 4, 8]");
}

TEST_F(FagChecks, InnerPreciseAndSparseModeRanges) {
  c.innerPrecise = 4;
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("innerPrecise"), "given 4");
  c.innerPrecise = 0;
  c.sparseMode = 7;
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("sparseMode"), "TND only");
  c.sparseMode = -1;
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("sparseMode"), "given -1");
  c.build(tnd());
  c.sparseMode = 9;
  EXPECT_FAILS(c.call(GradEntry::Unpad), ACLNN_ERR_PARAM_INVALID, quoted("sparseMode"), "0..8");
  c.sparseMode = 5;
  EXPECT_FAILS(c.call(GradEntry::Unpad), ACLNN_ERR_PARAM_INVALID, quoted("sparseMode"), "sparseMode 6");
}

TEST_F(FagChecks, MaskDtypeAndShapePerMode) {
  c.attenMask = c.pool.make(ACL_FLOAT16, {16, 24});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("attenMaskOptional"), "BOOL");
  c.attenMask = c.pool.make(ACL_BOOL, {24, 16});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("attenMaskOptional"), "[S1, S2] = [16, 24]");
  c.attenMask = c.pool.make(ACL_BOOL, {2, 2, 16, 24});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("attenMaskOptional"), "[B, N1, S1, S2]");
  c.sparseMode = 2;
  c.attenMask = c.pool.make(ACL_BOOL, {16, 24});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("attenMaskOptional"), "[2048, 2048]");
  c.sparseMode = 6;
  c.attenMask = c.pool.make(ACL_BOOL, {2048, 2048});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("attenMaskOptional"), "[3072, 2048]");
  c.sparseMode = 5;
  c.attenMask = c.pool.make(ACL_BOOL, {16, 24});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("attenMaskOptional"), "[B, 1, S1, S2]");
}

TEST_F(FagChecks, PrefixRules) {
  c.sparseMode = 6;
  c.attenMask = c.pool.make(ACL_BOOL, {3072, 2048});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("prefixOptional"), "sparseMode 6 requires");
  c.prefix = c.array({10});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("prefixOptional"), "B = 2 entries");
  c.prefix = c.array({7, 10});  // S1 = 16 <= S2 = 24: [8, 24]
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("prefixOptional"), "entry 0 in [8, 24]", "given 7");
  c.prefix = c.array({8, 25});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("prefixOptional"), "entry 1", "given 25");
}

TEST_F(FagChecks, TokenBandRules) {
  c.attenMask = c.pool.make(ACL_BOOL, {16, 24});
  c.preTokens = -30, c.nextTokens = 10;
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("nextTokens"), "preTokens + nextTokens >= 0");
  c.preTokens = -25, c.nextTokens = 40;
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("preTokens"), ">= -S2");
  c.preTokens = 40, c.nextTokens = -17;
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("nextTokens"), ">= -S1");
  c.preTokens = std::numeric_limits<int64_t>::max(), c.nextTokens = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(fails().status, ACLNN_SUCCESS) << "huge tokens saturate";
  c.sparseMode = 4;  // bottom-right origin: pre' = pre + S1 - S2 = pre - 8
  c.attenMask = c.pool.make(ACL_BOOL, {2048, 2048});
  c.preTokens = -17, c.nextTokens = 40;
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("preTokens"), "sparseMode 4");
  c.preTokens = -16;
  EXPECT_EQ(fails().status, ACLNN_SUCCESS);
  c.attenMask = nullptr;  // no mask (sparseMode 0): tokens unused
  c.sparseMode = 0;
  c.preTokens = -1000, c.nextTokens = -1000;
  EXPECT_EQ(fails().status, ACLNN_SUCCESS);
}

TEST_F(FagChecks, VarlenBandModesCheckTheirBandBatch) {
  c.build(tnd());  // lengths Q {5, 0, 11}, KV {7, 3, 14}
  c.attenMask = c.pool.make(ACL_BOOL, {2048, 2048});
  c.sparseMode = 7;  // band batch = 2 (last with queries): S1 = 11, S2 = 14
  c.preTokens = 13, c.nextTokens = 0;
  EXPECT_FAILS(c.call(GradEntry::Unpad), ACLNN_ERR_PARAM_INVALID, quoted("preTokens"), "band batch 2");
  c.preTokens = 14, c.nextTokens = 1;
  EXPECT_FAILS(c.call(GradEntry::Unpad), ACLNN_ERR_PARAM_INVALID, quoted("nextTokens"), "<= 0");
  c.nextTokens = -4;
  EXPECT_FAILS(c.call(GradEntry::Unpad), ACLNN_ERR_PARAM_INVALID, quoted("nextTokens"), "S1 - S2");
  c.nextTokens = -3;
  EXPECT_EQ(c.call(GradEntry::Unpad).status, ACLNN_SUCCESS);
  c.sparseMode = 8;  // band batch = 0: S1 = 5, S2 = 7
  c.preTokens = 6;
  EXPECT_FAILS(c.call(GradEntry::Unpad), ACLNN_ERR_PARAM_INVALID, quoted("preTokens"), "band batch 0");
}

TEST_F(FagChecks, PseRules) {
  c.pseType = 4;
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("pseType"), "given 4");
  c.pseType = 2;
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("pseShiftOptional"), "slopes", "nullptr");
  c.pse = c.pool.make(ACL_FLOAT16, {4});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("pseShiftOptional"), "FLOAT");
  c.pse = c.pool.make(ACL_FLOAT, {2, 2});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("pseShiftOptional"), "[N1] = [4]");
  c.pse = c.pool.make(ACL_FLOAT, {4});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("pseShiftOptional"), "S1 = S2");
  c.pseType = 1;
  c.pse = c.pool.make(ACL_FLOAT, {2, 4, 16, 24});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("pseShiftOptional"), "the dtype of query");
  c.pse = c.pool.make(ACL_FLOAT16, {2, 4, 16, 16});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("pseShiftOptional"), "[B, N1, S1, S2]");
  c.build(tnd());
  c.attenMask = c.pool.make(ACL_BOOL, {2048, 2048});
  c.sparseMode = 7, c.preTokens = 14, c.nextTokens = 0;
  c.pse = c.pool.make(ACL_FLOAT, {4});
  c.pseType = 2;
  EXPECT_FAILS(c.call(GradEntry::UnpadV2), ACLNN_ERR_PARAM_INVALID, quoted("pseShiftOptional"), "sparseMode 7");
  FaShape s = tnd();
  s.seqQ = {5, 11}, s.seqKv = {5, 11};
  c.build(s);
  c.attenMask = c.pool.make(ACL_BOOL, {2048, 2048});
  c.sparseMode = 8, c.preTokens = 65536, c.nextTokens = 65536;
  c.pse = c.pool.make(ACL_FLOAT, {4});
  c.pseType = 2;
  EXPECT_EQ(c.call(GradEntry::UnpadV2).status, ACLNN_SUCCESS);
  c.qStartIdx = c.array({2});
  EXPECT_FAILS(c.call(GradEntry::UnpadV2), ACLNN_ERR_PARAM_INVALID, quoted("pseShiftOptional"), "sparseMode 8");
}

TEST_F(FagChecks, DropoutRules) {
  for (double bad : {0.0, -0.5, 1.5, std::nan("")}) {
    c.keepProb = bad;
    EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("keepProb"), "(0, 1]");
  }
  c.keepProb = 0.9;
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("dropMaskOptional"), "nullptr");
  EXPECT_EQ(c.call(GradEntry::GradV4).status, ACLNN_SUCCESS) << "GradV4 draws the mask from seed / offset";
  c.offset = -1;
  EXPECT_FAILS(c.call(GradEntry::GradV4), ACLNN_ERR_PARAM_INVALID, quoted("offset"), "given -1");
  const int64_t bytes = 2 * 4 * 16 * 24 / 8;
  c.dropMask = c.pool.make(ACL_FLOAT16, {bytes});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("dropMaskOptional"), "UINT8");
  c.dropMask = c.pool.make(ACL_UINT8, {bytes - 1});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("dropMaskOptional"), "at least", std::to_string(bytes));
  c.dropMask = c.pool.make(ACL_UINT8, {4, bytes / 4});
  EXPECT_EQ(fails().status, ACLNN_SUCCESS) << "any shape with enough bytes";
  c.build(tnd());  // N1 * (5*7 + 0*3 + 11*14) = 756 bits = 95 bytes (ceil)
  c.keepProb = 0.5;
  c.dropMask = c.pool.make(ACL_UINT8, {94});
  EXPECT_FAILS(c.call(GradEntry::Unpad), ACLNN_ERR_PARAM_INVALID, quoted("dropMaskOptional"), "95 bytes");
  c.dropMask = c.pool.make(ACL_UINT8, {95});
  EXPECT_EQ(c.call(GradEntry::Unpad).status, ACLNN_SUCCESS);
}

TEST_F(FagChecks, RopeRulesOfUnpaddingV3AndV5) {
  FaShape s = tnd();
  s.dtype = ACL_BF16;
  c.build(s);
  c.attenMask = c.pool.make(ACL_BOOL, {2048, 2048});
  c.sparseMode = 3;
  c.addRope(16);
  for (GradEntry e : {GradEntry::UnpadV3, GradEntry::UnpadV5}) {
    const Outcome o = c.call(e);
    EXPECT_EQ(o.status, ACLNN_SUCCESS) << gradApi(e) << ": " << o.message;
  }
  const aclTensor* keyRope = c.keyRope;
  c.keyRope = nullptr;
  EXPECT_FAILS(c.call(GradEntry::UnpadV3), ACLNN_ERR_PARAM_NULLPTR, quoted("keyInRope"), "pairs");
  c.keyRope = keyRope;
  const aclTensor* dqRope = c.dqRope;
  c.dqRope = nullptr;
  EXPECT_FAILS(c.call(GradEntry::UnpadV3), ACLNN_ERR_PARAM_NULLPTR, quoted("dqRopeOut"));
  c.dqRope = dqRope;
  c.attenMask = nullptr;
  EXPECT_FAILS(c.call(GradEntry::UnpadV3), ACLNN_ERR_PARAM_NULLPTR, quoted("attenMaskOptional"), "rope");
  c.attenMask = c.pool.make(ACL_BOOL, {2048, 2048});
  c.keepProb = 0.9;
  c.dropMask = c.pool.make(ACL_UINT8, {1024});
  EXPECT_FAILS(c.call(GradEntry::UnpadV3), ACLNN_ERR_PARAM_INVALID, quoted("dropMaskOptional"), "rope");
  c.keepProb = 1.0, c.dropMask = nullptr;
  c.queryRope = c.pool.make(ACL_BF16, {16, 4, 12});
  c.keyRope = c.pool.make(ACL_BF16, {24, 2, 12});
  EXPECT_FAILS(c.call(GradEntry::UnpadV3), ACLNN_ERR_PARAM_INVALID, quoted("queryRope"), "multiples of 8");
  c.queryRope = c.pool.make(ACL_BF16, {16, 4, 40});
  EXPECT_FAILS(c.call(GradEntry::UnpadV3), ACLNN_ERR_PARAM_INVALID, quoted("queryRope"), "D = 32");
  s.dtype = ACL_FLOAT16;
  c.build(s);
  c.attenMask = c.pool.make(ACL_BOOL, {2048, 2048});
  c.addRope(16);
  EXPECT_FAILS(c.call(GradEntry::UnpadV3), ACLNN_ERR_PARAM_INVALID, quoted("query"), "BFLOAT16");
}

TEST_F(FagChecks, RopeOfGradV4IsD128WithRope64) {
  FaShape s;
  s.d = 128, s.dv = 128, s.dtype = ACL_FLOAT16;
  c.build(s);
  c.addRope(64);
  Outcome o = c.call(GradEntry::GradV4);
  EXPECT_EQ(o.status, ACLNN_SUCCESS) << o.message;
  c.build(FaShape{});
  c.addRope(16);
  EXPECT_FAILS(c.call(GradEntry::GradV4), ACLNN_ERR_PARAM_INVALID, quoted("queryRopeOptional"), "D_rope = 64");
  c.build(s);
  c.addRope(64);
  c.dkRope = c.pool.make(ACL_FLOAT16, {2, 2, 24, 32});
  EXPECT_FAILS(c.call(GradEntry::GradV4), ACLNN_ERR_PARAM_INVALID, quoted("dkRopeOut"), "shape");
}

TEST_F(FagChecks, NullDataOfATensorWithElementsIs161002) {
  // aclCreateTensor refuses such a view; a descriptor changed afterwards must still be caught.
  const_cast<aclTensor*>(c.dy)->data = nullptr;
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("dy"), "non-null data");
}

TEST_F(FagChecks, OutputsMayNotOverlapInputsOrEachOther) {
  c.dq = c.pool.alias(c.query, ACL_FLOAT16, {2, 4, 16, 32});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("dqOut"), "query");
  c.build(FaShape{});
  c.dv = c.pool.alias(c.dk, ACL_FLOAT16, {2, 2, 24, 16});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("dvOut"), "dkOut");
  c.build(FaShape{});
  c.dk = c.pool.make(ACL_FLOAT16, {2, 2, 24, 32}, {0, 0, 32, 1});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("dkOut"), "different addresses");
}

TEST_F(FagChecks, MessagesNameTheEntryPointTheCallerUsed) {
  c.headNum = 0;
  for (GradEntry e : kPaddedEntries) {
    EXPECT_FAILS(c.call(e), ACLNN_ERR_PARAM_INVALID, std::string(gradApi(e)) + ":", quoted("headNum"));
  }
}

}  // namespace
}  // namespace gradkit::test::fa
