// runTwoPhase: how a suite's case is decided when the first phase rejects, a rejection is expected, or the
// second phase fails; and that a successful call runs the second phase with the planned workspace.
#include <gtest/gtest.h>

#include "harness/acl_session.h"
#include "harness/host_tensor.h"
#include "harness/two_phase.h"

namespace gradkit::cli {
namespace {

using nlohmann::json;

class TwoPhase : public ::testing::Test {
 protected:
  TwoPhase() {
    TensorDefaults defaults;
    defaults.dtype = ACL_FLOAT;
    defaults.shape = {8};
    out_ = std::make_unique<HostTensor>(parseTensorSpec(json(), "out", defaults));
    before_ = out_->host();
  }
  AclSession session_;
  std::unique_ptr<HostTensor> out_;
  std::vector<unsigned char> before_;
};

TEST_F(TwoPhase, ExpectedRejectionPassesOnlyWithTheSameCodeAndUntouchedOutput) {
  const PlanCall reject = [](uint64_t*, aclOpExecutor**) { return aclnnStatus{ACLNN_ERR_PARAM_INVALID}; };
  const RunCall neverRun = [](void*, uint64_t, aclOpExecutor*, aclrtStream) -> aclnnStatus {
    ADD_FAILURE() << "the second phase ran after a rejection";
    return ACLNN_SUCCESS;
  };
  VerifyRow row;
  EXPECT_FALSE(
      runTwoPhase("op", reject, neverRun, session_.stream(), ACLNN_ERR_PARAM_INVALID, {{out_.get(), &before_}}, row));
  EXPECT_TRUE(row.passed);

  VerifyRow wrongCode;
  EXPECT_FALSE(runTwoPhase("op", reject, neverRun, session_.stream(), ACLNN_ERR_PARAM_NULLPTR, {{out_.get(), &before_}},
                           wrongCode));
  EXPECT_FALSE(wrongCode.passed);
  EXPECT_NE(wrongCode.note.find("returned 161002 (expected 161001)"), std::string::npos) << wrongCode.note;

  // A rejecting plan that wrote the output anyway fails the case.
  const PlanCall writeThenReject = [this](uint64_t*, aclOpExecutor**) {
    const float one = 1.0f;
    aclrtMemcpy(out_->deviceData(), 4, &one, 4, ACL_MEMCPY_HOST_TO_DEVICE);
    return aclnnStatus{ACLNN_ERR_PARAM_INVALID};
  };
  VerifyRow written;
  EXPECT_FALSE(runTwoPhase("op", writeThenReject, neverRun, session_.stream(), ACLNN_ERR_PARAM_INVALID,
                           {{out_.get(), &before_}}, written));
  EXPECT_FALSE(written.passed);
  EXPECT_NE(written.note.find("written by a rejected call"), std::string::npos) << written.note;
}

TEST_F(TwoPhase, SecondPhaseGetsThePlannedWorkspaceAndItsFailureIsReported) {
  const PlanCall plan = [](uint64_t* size, aclOpExecutor** executor) {
    *size = 100;
    *executor = nullptr;
    return aclnnStatus{ACLNN_SUCCESS};
  };
  uint64_t seenSize = 0;
  void* seenWorkspace = nullptr;
  const RunCall succeed = [&](void* workspace, uint64_t size, aclOpExecutor*, aclrtStream) {
    seenWorkspace = workspace;
    seenSize = size;
    return aclnnStatus{ACLNN_SUCCESS};
  };
  VerifyRow row;
  EXPECT_TRUE(runTwoPhase("op", plan, succeed, session_.stream(), 0, {{out_.get(), &before_}}, row));
  EXPECT_EQ(seenSize, 100u);
  EXPECT_NE(seenWorkspace, nullptr);

  const RunCall fail = [](void*, uint64_t, aclOpExecutor*, aclrtStream) { return aclnnStatus{ACLNN_ERR_INNER}; };
  VerifyRow failed;
  EXPECT_FALSE(runTwoPhase("aclnnSomething", plan, fail, session_.stream(), 0, {{out_.get(), &before_}}, failed));
  EXPECT_FALSE(failed.passed);
  EXPECT_NE(failed.note.find("aclnnSomething returned 561000"), std::string::npos) << failed.note;
}

}  // namespace
}  // namespace gradkit::cli
