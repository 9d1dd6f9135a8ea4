// The first phase of every flash attention forward entry point (aclnnFlashAttentionScore V1-V4,
// aclnnFlashAttentionVarLenScore V1-V5 and V5GetMaxWorkspaceSize): valid calls in every layout pass; the forward's
// own rules (its null pointers, outputs, empty sizes, what is not supported yet, the V4 profile gate) fail with
// their code and a message naming the argument, and the rules it shares with the backward name the forward's
// arguments (key, realShiftOptional). Only the first phase runs (the plan may still be a placeholder).
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "ops/fa_check_test_util.h"

namespace gradkit::test::fa {
namespace {

constexpr FwdEntry kPaddedEntries[] = {FwdEntry::Score, FwdEntry::ScoreV2, FwdEntry::ScoreV3, FwdEntry::ScoreV4};
constexpr FwdEntry kTndEntries[] = {FwdEntry::VarLen,   FwdEntry::VarLenV2, FwdEntry::VarLenV3,   FwdEntry::VarLenV4,
                                    FwdEntry::VarLenV5, FwdEntry::ScoreV4,  FwdEntry::VarLenV5Max};

class FaChecks : public FaChecksFixture<FaFwdCall, FwdEntry, FwdEntry::ScoreV2> {};

TEST_F(FaChecks, ValidCallsPassInEveryPaddedLayoutAndDtypeThroughEveryPaddedEntryPoint) {
  for (const char* layout : {"BNSD", "BSND", "BSH", "SBH"}) {
    for (aclDataType dtype : {ACL_FLOAT16, ACL_BF16, ACL_FLOAT}) {
      FaShape s;
      s.layout = layout;
      s.dtype = dtype;
      c.build(s);
      for (FwdEntry e : kPaddedEntries) {
        const Outcome o = c.call(e);
        EXPECT_EQ(o.status, ACLNN_SUCCESS) << fwdApi(e) << " " << layout << ": " << o.message;
      }
    }
  }
}

TEST_F(FaChecks, ValidTndCallsPassThroughEveryVarLenEntryPointAndScoreV4) {
  c.build(tnd());
  for (FwdEntry e : kTndEntries) {
    const Outcome o = c.call(e);
    EXPECT_EQ(o.status, ACLNN_SUCCESS) << fwdApi(e) << ": " << o.message;
  }
  c.statsLayout = "same_as_input";
  EXPECT_EQ(c.call(FwdEntry::VarLenV4).status, ACLNN_SUCCESS);
  c.statsLayout = "BNSD";
  EXPECT_FAILS(c.call(FwdEntry::VarLenV4), ACLNN_ERR_PARAM_INVALID, quoted("softmaxOutLayout"), "same_as_input");
}

TEST_F(FaChecks, MaskedAndPseCallsPass) {
  c.sparseMode = 3;
  c.attenMask = c.pool.make(ACL_BOOL, {2048, 2048});
  c.pse = c.pool.make(ACL_FLOAT16, {2, 4, 1, 24});
  c.pseType = 0;
  const Outcome o = c.call(FwdEntry::ScoreV2);
  EXPECT_EQ(o.status, ACLNN_SUCCESS) << o.message;
  c.keepProb = 0.5;
  c.dropMask = c.pool.make(ACL_UINT8, {2 * 4 * 16 * 24 / 8});
  EXPECT_EQ(c.call(FwdEntry::Score).status, ACLNN_SUCCESS);
}

TEST_F(FaChecks, NullRequiredPointersAre161001) {
  const struct {
    const char* name;
    const aclTensor** slot;
  } required[] = {{"query", &c.query},
                  {"key", &c.key},
                  {"value", &c.value},
                  {"softmaxMaxOut", &c.softmaxMaxOut},
                  {"softmaxSumOut", &c.softmaxSumOut},
                  {"attentionOutOut", &c.attentionOut}};
  for (const auto& r : required) {
    const aclTensor* saved = *r.slot;
    *r.slot = nullptr;
    for (FwdEntry e : {FwdEntry::Score, FwdEntry::ScoreV4}) {
      EXPECT_FAILS(c.call(e), ACLNN_ERR_PARAM_NULLPTR, quoted(r.name), fwdApi(e));
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
  c.nullExecutor = false;
  c.build(tnd());
  c.actualSeqQLen = nullptr;
  EXPECT_FAILS(c.call(FwdEntry::VarLen), ACLNN_ERR_PARAM_NULLPTR, quoted("actualSeqQLenOptional"));
}

TEST_F(FaChecks, ScoreV4ExistsOnlyInTheAscend950ProfileAndDrawsItsOwnDropMask) {
  c.keepProb = 0.9;
  EXPECT_EQ(c.call(FwdEntry::ScoreV4).status, ACLNN_SUCCESS) << "no dropMask: the Philox stream of seed / offset";
  EXPECT_FAILS(c.call(FwdEntry::ScoreV2), ACLNN_ERR_PARAM_INVALID, quoted("dropMaskOptional"), "nullptr");
  c.offset = -16;
  EXPECT_FAILS(c.call(FwdEntry::ScoreV4), ACLNN_ERR_PARAM_INVALID, quoted("offset"), "given -16");
  c.offset = 0;
  ScopedSoc a2("Ascend910B");
  EXPECT_FAILS(c.call(FwdEntry::ScoreV4), ACLNN_ERR_PARAM_INVALID, "aclnnFlashAttentionScoreV4", "Ascend910B",
               "Ascend950");
}

TEST_F(FaChecks, SinkFp8ScalesAndOutDtypeAreNotSupportedYet) {
  c.sink = c.pool.make(ACL_FLOAT, {4});
  EXPECT_FAILS(c.call(FwdEntry::ScoreV3), ACLNN_ERR_PARAM_INVALID, quoted("sinkOptional"), "not supported yet");
  EXPECT_FAILS(c.call(FwdEntry::ScoreV4), ACLNN_ERR_PARAM_INVALID, quoted("sinkOptional"), "not supported yet");
  c.sink = c.pool.make(ACL_FLOAT, {});  // 0-dim: absent
  EXPECT_EQ(c.call(FwdEntry::ScoreV3).status, ACLNN_SUCCESS);
  c.sink = nullptr;
  c.dScaleQ = c.pool.make(ACL_FLOAT, {2, 4, 1, 1});
  EXPECT_FAILS(c.call(FwdEntry::ScoreV4), ACLNN_ERR_PARAM_INVALID, quoted("dScaleQOptional"), "FP8");
  c.dScaleQ = nullptr;
  c.outDtype = 3;
  EXPECT_FAILS(c.call(FwdEntry::ScoreV4), ACLNN_ERR_PARAM_INVALID, quoted("outDtype"), "given 3");
  c.build(tnd());
  c.sink = c.pool.make(ACL_FLOAT, {4});
  EXPECT_FAILS(c.call(FwdEntry::VarLenV5), ACLNN_ERR_PARAM_INVALID, quoted("sinkOptional"));
  EXPECT_FAILS(c.call(FwdEntry::VarLenV5Max), ACLNN_ERR_PARAM_INVALID,
               "aclnnFlashAttentionVarLenScoreV5:", quoted("sinkOptional"));
}

TEST_F(FaChecks, OutputDtypeAndShapeRules) {
  c.attentionOut = c.pool.make(ACL_FLOAT, {2, 4, 16, 16});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("attentionOutOut"), "the dtype of query");
  c.attentionOut = c.pool.make(ACL_FLOAT16, {2, 4, 16, 32});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("attentionOutOut"), "[2, 4, 16, 16]");
  c.build(FaShape{});
  c.softmaxMaxOut = c.pool.make(ACL_FLOAT16, {2, 4, 16, 8});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("softmaxMaxOut"), "FLOAT");
  c.softmaxMaxOut = c.pool.make(ACL_FLOAT, {2, 4, 16, 8});
  c.softmaxSumOut = c.pool.make(ACL_FLOAT, {2, 4, 16, 1});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("softmaxSumOut"), "[B, N1, S1, 8]");
  c.build(tnd());
  c.softmaxSumOut = c.pool.make(ACL_FLOAT, {4, 16, 8});
  EXPECT_FAILS(c.call(FwdEntry::VarLen), ACLNN_ERR_PARAM_INVALID, quoted("softmaxSumOut"), "[T1, N1, 8]");
}

TEST_F(FaChecks, EmptyQueriesComputeNothingButEmptyKeysAreNotSupported) {
  for (bool emptyBatch : {true, false}) {  // B = 0, then S1 = 0: nothing to compute
    FaShape s;
    (emptyBatch ? s.b : s.s1) = 0;
    c.build(s);
    const Outcome o = fails();
    EXPECT_EQ(o.status, ACLNN_SUCCESS) << o.message;
  }
  FaShape s;
  s.s2 = 0;
  c.build(s);
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("key"), "S2 = 0");
}

TEST_F(FaChecks, SharedRulesNameTheForwardArguments) {
  c.key = c.pool.make(ACL_FLOAT16, {2, 2, 24, 16});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("key"), "D = 32");
  c.build(FaShape{});
  c.key = c.pool.make(ACL_BF16, {2, 2, 24, 32});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("key"), "the dtype of query");
  c.build(FaShape{});
  c.pseType = 2;
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("realShiftOptional"), "slopes");
  c.pseType = 1;
  c.pse = c.pool.make(ACL_FLOAT16, {2, 4, 16, 23});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("realShiftOptional"), "[B, N1, S1, S2]");
  c.pse = nullptr;
  c.headNum = 0;
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("headNum"));
  c.headNum = 4;
  c.layout = "TND";
  EXPECT_FAILS(c.call(FwdEntry::Score), ACLNN_ERR_PARAM_INVALID, quoted("inputLayout"));
  c.layout = "BNSD";
  EXPECT_FAILS(c.call(FwdEntry::VarLen), ACLNN_ERR_PARAM_INVALID, quoted("inputLayout"), "\"TND\"");
  c.sparseMode = 2;
  c.attenMask = c.pool.make(ACL_BOOL, {16, 24});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("attenMaskOptional"), "[2048, 2048]");
  c.attenMask = nullptr;
  c.sparseMode = 0;
  c.keepProb = 0.0;
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("keepProb"), "(0, 1]");
}

TEST_F(FaChecks, RopeOfVarLenV3AndV5) {
  FaShape s = tnd();
  s.dtype = ACL_BF16;
  c.build(s);
  c.attenMask = c.pool.make(ACL_BOOL, {2048, 2048});
  c.sparseMode = 3;
  c.addRope(16);
  for (FwdEntry e : {FwdEntry::VarLenV3, FwdEntry::VarLenV5}) {
    const Outcome o = c.call(e);
    EXPECT_EQ(o.status, ACLNN_SUCCESS) << fwdApi(e) << ": " << o.message;
  }
  c.queryRope = nullptr;
  EXPECT_FAILS(c.call(FwdEntry::VarLenV3), ACLNN_ERR_PARAM_NULLPTR, quoted("queryRope"), "pairs");
  c.addRope(16);
  c.pse = c.pool.make(ACL_BF16, {3, 4, 1024, 14});
  EXPECT_FAILS(c.call(FwdEntry::VarLenV3), ACLNN_ERR_PARAM_INVALID, quoted("realShiftOptional"), "rope");
}

TEST_F(FaChecks, OutputsMayNotOverlapInputsOrEachOther) {
  c.attentionOut = c.pool.alias(c.value, ACL_FLOAT16, {2, 4, 16, 16});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("attentionOutOut"), "value");
  c.build(FaShape{});
  c.softmaxSumOut = c.pool.alias(c.softmaxMaxOut, ACL_FLOAT, {2, 4, 16, 8});
  EXPECT_FAILS(fails(), ACLNN_ERR_PARAM_INVALID, quoted("softmaxSumOut"), "softmaxMaxOut");
}

TEST_F(FaChecks, MessagesNameTheEntryPointTheCallerUsed) {
  c.build(tnd());
  c.headNum = 0;
  for (FwdEntry e : kTndEntries) {
    EXPECT_FAILS(c.call(e), ACLNN_ERR_PARAM_INVALID, std::string(fwdApi(e)) + ":", quoted("headNum"));
  }
}

}  // namespace
}  // namespace gradkit::test::fa
