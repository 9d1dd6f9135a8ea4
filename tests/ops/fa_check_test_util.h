// Helpers for the flash attention argument-check tests: a shape configuration (layout, B, N1, N2, S1, S2, D, D_V,
// TND lengths), the shapes it implies written out here independently of src/, and one valid call of every forward
// and backward entry point whose arguments a test may break before calling. Only the first phase is called.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_flash_attention_score.h"
#include "aclnnop/aclnn_flash_attention_score_grad.h"
#include "ops/mhc_test_util.h"

namespace gradkit::test::fa {

using mhc::failsWith;
using mhc::Outcome;
using mhc::quoted;
using mhc::ScopedSoc;
using mhc::TensorPool;

/** The sizes of one call. TND uses seqQ / seqKv (lengths) instead of B, S1, S2. */
struct FaShape {
  std::string layout = "BNSD";
  int64_t b = 2, n1 = 4, n2 = 2, s1 = 16, s2 = 24, d = 32, dv = 16;
  std::vector<int64_t> seqQ = {5, 0, 11}, seqKv = {7, 3, 14};
  aclDataType dtype = ACL_FLOAT16;

  bool tnd() const { return layout == "TND"; }
  int64_t t1() const { return std::accumulate(seqQ.begin(), seqQ.end(), int64_t{0}); }
  int64_t t2() const { return std::accumulate(seqKv.begin(), seqKv.end(), int64_t{0}); }
  int64_t batches() const { return tnd() ? static_cast<int64_t>(seqQ.size()) : b; }

  /** query-like (queryRows) or key-like dims with `heads` heads and last dim `last`. */
  std::vector<int64_t> dims(bool queryRows, int64_t heads, int64_t last) const {
    const int64_t rows = queryRows ? s1 : s2;
    if (layout == "BNSD") return {b, heads, rows, last};
    if (layout == "BSND") return {b, rows, heads, last};
    if (layout == "BSH") return {b, rows, heads * last};
    if (layout == "SBH") return {rows, b, heads * last};
    return {queryRows ? t1() : t2(), heads, last};
  }
  std::vector<int64_t> stats() const {
    return tnd() ? std::vector<int64_t>{t1(), n1, 8} : std::vector<int64_t>{b, n1, s1, 8};
  }
};

/** Cumulative ends without a leading 0 ({2, 2, 2} -> {2, 4, 6}). */
inline std::vector<int64_t> cumulative(const std::vector<int64_t>& lengths) {
  std::vector<int64_t> ends(lengths.size());
  std::partial_sum(lengths.begin(), lengths.end(), ends.begin());
  return ends;
}

struct IntArrayDeleter {
  void operator()(aclIntArray* a) const { aclDestroyIntArray(a); }
};

/** The arguments both directions share, over one TensorPool. */
class FaCallBase {
 public:
  aclIntArray* array(const std::vector<int64_t>& values) {
    aclIntArray* a = aclCreateIntArray(values.data(), values.size());
    arrays_.emplace_back(a);
    return a;
  }

  TensorPool pool;
  FaShape shape;
  const aclTensor *query = nullptr, *key = nullptr, *value = nullptr, *pse = nullptr, *dropMask = nullptr,
                  *paddingMask = nullptr, *attenMask = nullptr, *queryRope = nullptr, *keyRope = nullptr,
                  *sink = nullptr, *dScaleQ = nullptr;
  const aclIntArray *prefix = nullptr, *actualSeqQLen = nullptr, *actualSeqKvLen = nullptr, *qStartIdx = nullptr,
                    *kvStartIdx = nullptr;
  double scaleValue = 0.125, keepProb = 1.0;
  int64_t preTokens = 65536, nextTokens = 65536, headNum = 0, innerPrecise = 0, sparseMode = 0, pseType = 1;
  int64_t seed = 0, offset = 0, outDtype = 0;
  std::string layout;
  std::string statsLayout;  // softmaxIn/OutLayout
  bool nullLayout = false, nullWorkspaceSize = false, nullExecutor = false;

 protected:
  void buildInputs(const FaShape& s) {
    shape = s;
    query = pool.make(s.dtype, s.dims(true, s.n1, s.d));
    key = pool.make(s.dtype, s.dims(false, s.n2, s.d));
    value = pool.make(s.dtype, s.dims(false, s.n2, s.dv));
    pse = dropMask = paddingMask = attenMask = queryRope = keyRope = sink = dScaleQ = nullptr;
    prefix = qStartIdx = kvStartIdx = nullptr;
    actualSeqQLen = s.tnd() ? array(cumulative(s.seqQ)) : nullptr;
    actualSeqKvLen = s.tnd() ? array(cumulative(s.seqKv)) : nullptr;
    headNum = s.n1;
    layout = s.layout;
  }

  /** Runs one first phase; a success must hand out an executor, a failure none. */
  template <class Call>
  Outcome run(Call&& call) {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    Outcome outcome;
    outcome.status = call(nullWorkspaceSize ? nullptr : &size, nullExecutor ? nullptr : &executor);
    outcome.message = aclGetRecentErrMsg();
    if (outcome.status == ACLNN_SUCCESS) {
      EXPECT_NE(executor, nullptr);
    } else {
      EXPECT_EQ(executor, nullptr) << "a failed call must not hand out an executor";
    }
    if (executor != nullptr) aclDestroyAclOpExecutor(executor);
    return outcome;
  }

  char* layoutArg() { return nullLayout ? nullptr : layout.data(); }
  char* statsLayoutArg() { return statsLayout.data(); }

 private:
  std::vector<std::unique_ptr<aclIntArray, IntArrayDeleter>> arrays_;
};

enum class GradEntry { Grad, GradV2, GradV3, GradV4, Unpad, UnpadV2, UnpadV3, UnpadV4, UnpadV5 };

inline const char* gradApi(GradEntry e) {
  switch (e) {
    case GradEntry::Grad:
      return "aclnnFlashAttentionScoreGrad";
    case GradEntry::GradV2:
      return "aclnnFlashAttentionScoreGradV2";
    case GradEntry::GradV3:
      return "aclnnFlashAttentionScoreGradV3";
    case GradEntry::GradV4:
      return "aclnnFlashAttentionScoreGradV4";
    case GradEntry::Unpad:
      return "aclnnFlashAttentionUnpaddingScoreGrad";
    case GradEntry::UnpadV2:
      return "aclnnFlashAttentionUnpaddingScoreGradV2";
    case GradEntry::UnpadV3:
      return "aclnnFlashAttentionUnpaddingScoreGradV3";
    case GradEntry::UnpadV4:
      return "aclnnFlashAttentionUnpaddingScoreGradV4";
    case GradEntry::UnpadV5:
      return "aclnnFlashAttentionUnpaddingScoreGradV5";
  }
  return "";
}

/** One backward call: build() makes it valid for a shape; call() runs the chosen entry point's first phase. */
class FagCall : public FaCallBase {
 public:
  void build(const FaShape& s) {
    buildInputs(s);
    dy = pool.make(s.dtype, s.dims(true, s.n1, s.dv));
    attentionIn = pool.make(s.dtype, s.dims(true, s.n1, s.dv));
    softmaxMax = pool.make(ACL_FLOAT, s.stats());
    softmaxSum = pool.make(ACL_FLOAT, s.stats());
    softmaxIn = dpse = dqRope = dkRope = dsink = dScaleDy = nullptr;
    dq = pool.make(s.dtype, s.dims(true, s.n1, s.d));
    dk = pool.make(s.dtype, s.dims(false, s.n2, s.d));
    dv = pool.make(s.dtype, s.dims(false, s.n2, s.dv));
  }

  /** queryRope / keyRope of rope dim `dRope` with their gradient outputs. */
  void addRope(int64_t dRope) {
    queryRope = pool.make(shape.dtype, shape.dims(true, shape.n1, dRope));
    keyRope = pool.make(shape.dtype, shape.dims(false, shape.n2, dRope));
    dqRope = pool.make(shape.dtype, shape.dims(true, shape.n1, dRope));
    dkRope = pool.make(shape.dtype, shape.dims(false, shape.n2, dRope));
  }

  Outcome call(GradEntry e) {
    return run([&](uint64_t* ws, aclOpExecutor** ex) -> aclnnStatus {
      switch (e) {
        case GradEntry::Grad:
          return aclnnFlashAttentionScoreGradGetWorkspaceSize(
              query, key, value, dy, pse, dropMask, paddingMask, attenMask, softmaxMax, softmaxSum, softmaxIn,
              attentionIn, prefix, scaleValue, keepProb, preTokens, nextTokens, headNum, layoutArg(), innerPrecise,
              sparseMode, dq, dk, dv, dpse, ws, ex);
        case GradEntry::GradV2:
          return aclnnFlashAttentionScoreGradV2GetWorkspaceSize(
              query, key, value, dy, pse, dropMask, paddingMask, attenMask, softmaxMax, softmaxSum, softmaxIn,
              attentionIn, prefix, qStartIdx, kvStartIdx, scaleValue, keepProb, preTokens, nextTokens, headNum,
              layoutArg(), innerPrecise, sparseMode, pseType, dq, dk, dv, dpse, ws, ex);
        case GradEntry::GradV3:
          return aclnnFlashAttentionScoreGradV3GetWorkspaceSize(
              query, key, value, dy, pse, dropMask, paddingMask, attenMask, softmaxMax, softmaxSum, softmaxIn,
              attentionIn, sink, prefix, qStartIdx, kvStartIdx, scaleValue, keepProb, preTokens, nextTokens, headNum,
              layoutArg(), innerPrecise, sparseMode, pseType, dq, dk, dv, dpse, dsink, ws, ex);
        case GradEntry::GradV4:
          return aclnnFlashAttentionScoreGradV4GetWorkspaceSize(
              query, key, value, dy, pse, dropMask, paddingMask, attenMask, softmaxMax, softmaxSum, softmaxIn,
              attentionIn, sink, queryRope, keyRope, dScaleQ, nullptr, nullptr, dScaleDy, nullptr, prefix,
              actualSeqQLen, actualSeqKvLen, qStartIdx, kvStartIdx, scaleValue, keepProb, preTokens, nextTokens,
              headNum, layoutArg(), statsLayoutArg(), innerPrecise, sparseMode, pseType, seed, offset, outDtype, dq, dk,
              dv, dqRope, dkRope, dpse, dsink, ws, ex);
        case GradEntry::Unpad:
          return aclnnFlashAttentionUnpaddingScoreGradGetWorkspaceSize(
              query, key, value, dy, pse, dropMask, paddingMask, attenMask, softmaxMax, softmaxSum, softmaxIn,
              attentionIn, prefix, actualSeqQLen, actualSeqKvLen, scaleValue, keepProb, preTokens, nextTokens, headNum,
              layoutArg(), innerPrecise, sparseMode, dq, dk, dv, dpse, ws, ex);
        case GradEntry::UnpadV2:
          return aclnnFlashAttentionUnpaddingScoreGradV2GetWorkspaceSize(
              query, key, value, dy, pse, dropMask, paddingMask, attenMask, softmaxMax, softmaxSum, softmaxIn,
              attentionIn, prefix, actualSeqQLen, actualSeqKvLen, qStartIdx, kvStartIdx, scaleValue, keepProb,
              preTokens, nextTokens, headNum, layoutArg(), innerPrecise, sparseMode, pseType, dq, dk, dv, dpse, ws, ex);
        case GradEntry::UnpadV3:
          return aclnnFlashAttentionUnpaddingScoreGradV3GetWorkspaceSize(
              query, queryRope, key, keyRope, value, dy, pse, dropMask, paddingMask, attenMask, softmaxMax, softmaxSum,
              softmaxIn, attentionIn, prefix, actualSeqQLen, actualSeqKvLen, qStartIdx, kvStartIdx, scaleValue,
              keepProb, preTokens, nextTokens, headNum, layoutArg(), innerPrecise, sparseMode, pseType, dq, dqRope, dk,
              dkRope, dv, dpse, ws, ex);
        case GradEntry::UnpadV4:
          return aclnnFlashAttentionUnpaddingScoreGradV4GetWorkspaceSize(
              query, key, value, dy, pse, dropMask, paddingMask, attenMask, softmaxMax, softmaxSum, softmaxIn,
              attentionIn, prefix, actualSeqQLen, actualSeqKvLen, scaleValue, keepProb, preTokens, nextTokens, headNum,
              layoutArg(), innerPrecise, sparseMode, dq, dk, dv, dpse, statsLayoutArg(), ws, ex);
        case GradEntry::UnpadV5:
          return aclnnFlashAttentionUnpaddingScoreGradV5GetWorkspaceSize(
              query, queryRope, key, keyRope, value, dy, pse, dropMask, paddingMask, attenMask, softmaxMax, softmaxSum,
              softmaxIn, attentionIn, sink, prefix, actualSeqQLen, actualSeqKvLen, qStartIdx, kvStartIdx, scaleValue,
              keepProb, preTokens, nextTokens, headNum, layoutArg(), innerPrecise, sparseMode, pseType,
              statsLayoutArg(), dq, dqRope, dk, dkRope, dv, dpse, dsink, ws, ex);
      }
      return -1;
    });
  }

  const aclTensor *dy = nullptr, *attentionIn = nullptr, *softmaxMax = nullptr, *softmaxSum = nullptr,
                  *softmaxIn = nullptr, *dScaleDy = nullptr;
  const aclTensor *dq = nullptr, *dk = nullptr, *dv = nullptr, *dpse = nullptr, *dqRope = nullptr, *dkRope = nullptr,
                  *dsink = nullptr;
};

enum class FwdEntry { Score, ScoreV2, ScoreV3, ScoreV4, VarLen, VarLenV2, VarLenV3, VarLenV4, VarLenV5, VarLenV5Max };

inline const char* fwdApi(FwdEntry e) {
  switch (e) {
    case FwdEntry::Score:
      return "aclnnFlashAttentionScore";
    case FwdEntry::ScoreV2:
      return "aclnnFlashAttentionScoreV2";
    case FwdEntry::ScoreV3:
      return "aclnnFlashAttentionScoreV3";
    case FwdEntry::ScoreV4:
      return "aclnnFlashAttentionScoreV4";
    case FwdEntry::VarLen:
      return "aclnnFlashAttentionVarLenScore";
    case FwdEntry::VarLenV2:
      return "aclnnFlashAttentionVarLenScoreV2";
    case FwdEntry::VarLenV3:
      return "aclnnFlashAttentionVarLenScoreV3";
    case FwdEntry::VarLenV4:
      return "aclnnFlashAttentionVarLenScoreV4";
    case FwdEntry::VarLenV5:
    case FwdEntry::VarLenV5Max:
      return "aclnnFlashAttentionVarLenScoreV5";
  }
  return "";
}

/** One forward call: build() makes it valid for a shape; call() runs the chosen entry point's first phase. */
class FaFwdCall : public FaCallBase {
 public:
  void build(const FaShape& s) {
    buildInputs(s);
    softmaxMaxOut = pool.make(ACL_FLOAT, s.stats());
    softmaxSumOut = pool.make(ACL_FLOAT, s.stats());
    softmaxOutOut = nullptr;
    attentionOut = pool.make(s.dtype, s.dims(true, s.n1, s.dv));
  }

  void addRope(int64_t dRope) {
    queryRope = pool.make(shape.dtype, shape.dims(true, shape.n1, dRope));
    keyRope = pool.make(shape.dtype, shape.dims(false, shape.n2, dRope));
  }

  Outcome call(FwdEntry e) {
    return run([&](uint64_t* ws, aclOpExecutor** ex) -> aclnnStatus {
      switch (e) {
        case FwdEntry::Score:
          return aclnnFlashAttentionScoreGetWorkspaceSize(query, key, value, pse, dropMask, paddingMask, attenMask,
                                                          prefix, scaleValue, keepProb, preTokens, nextTokens, headNum,
                                                          layoutArg(), innerPrecise, sparseMode, softmaxMaxOut,
                                                          softmaxSumOut, softmaxOutOut, attentionOut, ws, ex);
        case FwdEntry::ScoreV2:
          return aclnnFlashAttentionScoreV2GetWorkspaceSize(
              query, key, value, pse, dropMask, paddingMask, attenMask, prefix, qStartIdx, kvStartIdx, scaleValue,
              keepProb, preTokens, nextTokens, headNum, layoutArg(), innerPrecise, sparseMode, pseType, softmaxMaxOut,
              softmaxSumOut, softmaxOutOut, attentionOut, ws, ex);
        case FwdEntry::ScoreV3:
          return aclnnFlashAttentionScoreV3GetWorkspaceSize(
              query, key, value, pse, dropMask, paddingMask, attenMask, sink, prefix, qStartIdx, kvStartIdx, scaleValue,
              keepProb, preTokens, nextTokens, headNum, layoutArg(), innerPrecise, sparseMode, pseType, softmaxMaxOut,
              softmaxSumOut, softmaxOutOut, attentionOut, ws, ex);
        case FwdEntry::ScoreV4:
          return aclnnFlashAttentionScoreV4GetWorkspaceSize(
              query, key, value, pse, dropMask, paddingMask, attenMask, queryRope, keyRope, dScaleQ, nullptr, nullptr,
              sink, prefix, actualSeqQLen, actualSeqKvLen, qStartIdx, kvStartIdx, scaleValue, keepProb, preTokens,
              nextTokens, headNum, layoutArg(), innerPrecise, sparseMode, outDtype, pseType, statsLayoutArg(), seed,
              offset, softmaxMaxOut, softmaxSumOut, softmaxOutOut, attentionOut, ws, ex);
        case FwdEntry::VarLen:
          return aclnnFlashAttentionVarLenScoreGetWorkspaceSize(
              query, key, value, pse, dropMask, paddingMask, attenMask, prefix, actualSeqQLen, actualSeqKvLen,
              scaleValue, keepProb, preTokens, nextTokens, headNum, layoutArg(), innerPrecise, sparseMode,
              softmaxMaxOut, softmaxSumOut, softmaxOutOut, attentionOut, ws, ex);
        case FwdEntry::VarLenV2:
          return aclnnFlashAttentionVarLenScoreV2GetWorkspaceSize(
              query, key, value, pse, dropMask, paddingMask, attenMask, prefix, actualSeqQLen, actualSeqKvLen,
              qStartIdx, kvStartIdx, scaleValue, keepProb, preTokens, nextTokens, headNum, layoutArg(), innerPrecise,
              sparseMode, pseType, softmaxMaxOut, softmaxSumOut, softmaxOutOut, attentionOut, ws, ex);
        case FwdEntry::VarLenV3:
          return aclnnFlashAttentionVarLenScoreV3GetWorkspaceSize(
              query, queryRope, key, keyRope, value, pse, dropMask, paddingMask, attenMask, prefix, actualSeqQLen,
              actualSeqKvLen, qStartIdx, kvStartIdx, scaleValue, keepProb, preTokens, nextTokens, headNum, layoutArg(),
              innerPrecise, sparseMode, pseType, softmaxMaxOut, softmaxSumOut, softmaxOutOut, attentionOut, ws, ex);
        case FwdEntry::VarLenV4:
          return aclnnFlashAttentionVarLenScoreV4GetWorkspaceSize(
              query, key, value, pse, dropMask, paddingMask, attenMask, prefix, actualSeqQLen, actualSeqKvLen,
              scaleValue, keepProb, preTokens, nextTokens, headNum, layoutArg(), innerPrecise, sparseMode,
              statsLayoutArg(), softmaxMaxOut, softmaxSumOut, softmaxOutOut, attentionOut, ws, ex);
        case FwdEntry::VarLenV5:
          return aclnnFlashAttentionVarLenScoreV5GetWorkspaceSize(
              query, queryRope, key, keyRope, value, pse, dropMask, paddingMask, attenMask, sink, prefix, actualSeqQLen,
              actualSeqKvLen, qStartIdx, kvStartIdx, scaleValue, keepProb, preTokens, nextTokens, headNum, layoutArg(),
              innerPrecise, sparseMode, pseType, statsLayoutArg(), softmaxMaxOut, softmaxSumOut, softmaxOutOut,
              attentionOut, ws, ex);
        case FwdEntry::VarLenV5Max:
          return aclnnFlashAttentionVarLenScoreV5GetMaxWorkspaceSize(
              query, queryRope, key, keyRope, value, pse, dropMask, paddingMask, attenMask, sink, prefix, actualSeqQLen,
              actualSeqKvLen, qStartIdx, kvStartIdx, scaleValue, keepProb, preTokens, nextTokens, headNum, layoutArg(),
              innerPrecise, sparseMode, pseType, statsLayoutArg(), softmaxMaxOut, softmaxSumOut, softmaxOutOut,
              attentionOut, ws, ex);
      }
      return -1;
    });
  }

  const aclTensor *softmaxMaxOut = nullptr, *softmaxSumOut = nullptr, *softmaxOutOut = nullptr, *attentionOut = nullptr;
};

/**
 * The fixture of the forward and backward check tests: the Ascend950 profile, the default (BNSD) call built, the
 * recent error cleared. `Call` is FaFwdCall or FagCall; fails() calls kDefault (the V2 entry point) unless told.
 */
template <class Call, class Entry, Entry kDefault>
class FaChecksFixture : public ::testing::Test {
 public:
  void SetUp() override {
    soc_.emplace("Ascend950");
    c.build(FaShape{});
    recentError();
  }
  static FaShape tnd() {
    FaShape s;
    s.layout = "TND";
    return s;
  }
  Outcome fails(Entry e = kDefault) { return c.call(e); }

  std::optional<ScopedSoc> soc_;
  Call c;
};

}  // namespace gradkit::test::fa

/** Expects `outcome` to carry status `code` and a message containing every one of the following strings. */
#define EXPECT_FAILS(outcome, code, ...) EXPECT_TRUE(failsWith(outcome, code, {__VA_ARGS__}))
