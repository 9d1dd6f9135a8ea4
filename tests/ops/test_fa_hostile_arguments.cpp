// Flash attention's first phase against arguments a careless or hostile caller passes (the probes of issue 27):
// a keepProb that is 0 as a float, start indices at the int64 limits, stride-0 views whose sizes no workspace can
// serve, and the sparse modes whose masking only a mask tensor switches on, given none. Each is rejected with its
// code and a message naming the argument, through the forward and the backward entry points.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "ops/fa_check_test_util.h"

namespace gradkit::test::fa {
namespace {

class FaHostileForward : public FaChecksFixture<FaFwdCall, FwdEntry, FwdEntry::ScoreV2> {};
class FaHostileBackward : public FaChecksFixture<FagCall, GradEntry, GradEntry::GradV2> {};

// B * N1 * S1 * S2 keep bits of the default shape, packed.
const std::vector<int64_t> kDropMaskBytes = {2 * 4 * 16 * 24 / 8};

TEST_F(FaHostileForward, KeepProbThatIsZeroOrDenormalAsAFloatIs161002) {
  c.dropMask = c.pool.make(ACL_UINT8, kDropMaskBytes);
  for (double keepProb : {1e-300, 1e-46, 1e-40, 1.1754942e-38}) {
    c.keepProb = keepProb;
    EXPECT_FAILS(c.call(FwdEntry::ScoreV2), ACLNN_ERR_PARAM_INVALID, quoted("keepProb"), "FLT_MIN");
  }
  c.keepProb = 1.17549436e-38;  // FLT_MIN itself (as a float): 1 / keepProb is finite
  EXPECT_EQ(c.call(FwdEntry::ScoreV2).status, ACLNN_SUCCESS) << aclGetRecentErrMsg();
  c.keepProb = 0.0;
  EXPECT_FAILS(c.call(FwdEntry::Score), ACLNN_ERR_PARAM_INVALID, quoted("keepProb"), "given 0");
}

TEST_F(FaHostileBackward, KeepProbThatIsZeroOrDenormalAsAFloatIs161002) {
  c.dropMask = c.pool.make(ACL_UINT8, kDropMaskBytes);
  for (double keepProb : {1e-300, 1e-46, 1e-40}) {
    c.keepProb = keepProb;
    for (GradEntry e : {GradEntry::Grad, GradEntry::GradV2}) {
      EXPECT_FAILS(c.call(e), ACLNN_ERR_PARAM_INVALID, quoted("keepProb"), gradApi(e));
    }
  }
}

TEST_F(FaHostileForward, StartIndicesWhoseDifferenceOverflowsAre161002) {
  FaShape square;  // generated ALiBi slopes need S1 = S2
  square.s2 = square.s1;
  c.build(square);
  c.pseType = 2;
  c.pse = c.pool.make(ACL_FLOAT, {4});
  const int64_t max = std::numeric_limits<int64_t>::max(), min = std::numeric_limits<int64_t>::min();
  c.qStartIdx = c.array({max});
  c.kvStartIdx = c.array({min});
  EXPECT_FAILS(c.call(FwdEntry::ScoreV2), ACLNN_ERR_PARAM_INVALID, quoted("qStartIdxOptional"), "[-2^61, 2^61]",
               std::to_string(max));
  c.qStartIdx = c.array({0});
  EXPECT_FAILS(c.call(FwdEntry::ScoreV2), ACLNN_ERR_PARAM_INVALID, quoted("kvStartIdxOptional"), std::to_string(min));
  c.qStartIdx = c.array({int64_t{1} << 61});
  c.kvStartIdx = c.array({-(int64_t{1} << 61)});
  EXPECT_EQ(c.call(FwdEntry::ScoreV2).status, ACLNN_SUCCESS) << aclGetRecentErrMsg();
}

TEST_F(FaHostileBackward, StartIndicesWhoseDifferenceOverflowsAre161002) {
  c.qStartIdx = c.array({std::numeric_limits<int64_t>::max()});
  c.kvStartIdx = c.array({std::numeric_limits<int64_t>::min()});
  for (GradEntry e : {GradEntry::GradV2, GradEntry::GradV4}) {
    EXPECT_FAILS(c.call(e), ACLNN_ERR_PARAM_INVALID, quoted("qStartIdxOptional"), gradApi(e));
  }
}

TEST_F(FaHostileForward, TemplateAndPrefixModesWithoutAMaskAre161001) {
  for (int64_t mode : {2, 3, 4, 5, 6}) {
    c.sparseMode = mode;
    EXPECT_FAILS(c.call(FwdEntry::ScoreV2), ACLNN_ERR_PARAM_NULLPTR, quoted("attenMaskOptional"),
                 "nullptr with sparseMode " + std::to_string(mode));
  }
  for (int64_t mode : {0, 1}) {  // no mask: nothing to mask, as on CANN
    c.sparseMode = mode;
    EXPECT_EQ(c.call(FwdEntry::ScoreV2).status, ACLNN_SUCCESS) << aclGetRecentErrMsg();
  }
  c.build(tnd());
  for (int64_t mode : {7, 8}) {
    c.sparseMode = mode;
    for (FwdEntry e : {FwdEntry::VarLen, FwdEntry::VarLenV4, FwdEntry::ScoreV4}) {
      EXPECT_FAILS(c.call(e), ACLNN_ERR_PARAM_NULLPTR, quoted("attenMaskOptional"), "[2048, 2048] causal template",
                   fwdApi(e));
    }
  }
}

TEST_F(FaHostileBackward, TemplateModesWithoutAMaskAre161001) {
  c.sparseMode = 3;
  for (GradEntry e : {GradEntry::Grad, GradEntry::GradV2, GradEntry::GradV4}) {
    EXPECT_FAILS(c.call(e), ACLNN_ERR_PARAM_NULLPTR, quoted("attenMaskOptional"), "sparseMode 3", gradApi(e));
  }
}

}  // namespace
}  // namespace gradkit::test::fa
