// Executors: the second phase's checks, one-shot and repeatable lifetimes, errors raised by the body.
#include <atomic>
#include <latch>
#include <memory>
#include <vector>

#include "api_test_util.h"
#include "base/error.h"
#include "runtime/executor.h"

using gradkit_test::ApiFixture;
using gradkit_test::hex;
using gradkit_test::mentions;
using gradkit_test::recentError;

namespace {

constexpr const char* kApi = "aclnnFakeOp";

class ApiExecutor : public ApiFixture {
 protected:
  void SetUp() override {
    ApiFixture::SetUp();
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS);
    ASSERT_EQ(aclrtCreateStream(&stream_), ACL_SUCCESS);
  }
  void TearDown() override {
    aclrtDestroyStream(stream_);
    ApiFixture::TearDown();
  }

  /** An executor whose body adds one to `runs` and records the workspace it was given. */
  aclOpExecutor* counting(uint64_t workspaceSize = 0) {
    return gradkit::newExecutor(kApi, workspaceSize, [this](void* workspace) {
      ++runs_;
      seenWorkspace_ = workspace;
      return ACLNN_SUCCESS;
    });
  }

  aclrtStream stream_ = nullptr;
  std::atomic<int> runs_{0};
  void* seenWorkspace_ = nullptr;
};

TEST_F(ApiExecutor, OneShotRunsOnceOnTheStream) {
  aclOpExecutor* executor = counting();
  ASSERT_NE(executor, nullptr);
  const auto info = gradkit::describeExecutor(executor);
  ASSERT_TRUE(info.has_value());
  EXPECT_EQ(info->api, kApi);
  EXPECT_FALSE(info->repeatable);
  EXPECT_TRUE(info->hasBody);
  EXPECT_EQ(gradkit::launch(kApi, nullptr, 0, executor, stream_), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(runs_.load(), 1);
  // It freed itself after running: the table no longer knows the pointer (it is not dereferenced).
  EXPECT_EQ(gradkit::launch(kApi, nullptr, 0, executor, stream_), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {kApi, "executor", hex(executor), "already run"}));
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"aclDestroyAclOpExecutor", hex(executor)}));
  EXPECT_EQ(runs_.load(), 1);
}

TEST_F(ApiExecutor, OneShotCannotBeLaunchedTwiceWhileQueued) {
  std::latch release(1);
  ASSERT_EQ(gradkit::rt::enqueue(stream_, [&release] { return release.wait(), ACL_SUCCESS; }), 0);
  aclOpExecutor* executor = counting();
  EXPECT_EQ(gradkit::launch(kApi, nullptr, 0, executor, stream_), ACLNN_SUCCESS);
  EXPECT_EQ(gradkit::launch(kApi, nullptr, 0, executor, stream_), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"executor", "already launched"}));
  EXPECT_EQ(aclSetAclOpExecutorRepeatable(executor), ACLNN_ERR_PARAM_INVALID) << "too late once launched";
  EXPECT_TRUE(mentions(recentError(), {"aclSetAclOpExecutorRepeatable", "already launched"}));
  release.count_down();
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(runs_.load(), 1);
}

TEST_F(ApiExecutor, RepeatableRunsUntilDestroyed) {
  aclOpExecutor* executor = counting();
  EXPECT_EQ(aclSetAclOpExecutorRepeatable(executor), ACLNN_SUCCESS);
  EXPECT_TRUE(gradkit::describeExecutor(executor)->repeatable);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(gradkit::launch(kApi, nullptr, 0, executor, stream_), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(runs_.load(), 3);
  EXPECT_EQ(gradkit::launch(kApi, nullptr, 0, executor, nullptr), ACLNN_SUCCESS) << "on the default stream too";
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  EXPECT_EQ(runs_.load(), 4);
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
  EXPECT_EQ(gradkit::launch(kApi, nullptr, 0, executor, stream_), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"executor", "destroyed"}));
}

TEST_F(ApiExecutor, DestroyWhileQueuedWaitsForTheRun) {
  std::latch release(1);
  ASSERT_EQ(gradkit::rt::enqueue(stream_, [&release] { return release.wait(), ACL_SUCCESS; }), 0);
  aclOpExecutor* executor = counting();
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(executor), ACLNN_SUCCESS);
  ASSERT_EQ(gradkit::launch(kApi, nullptr, 0, executor, stream_), ACLNN_SUCCESS);
  ASSERT_EQ(gradkit::launch(kApi, nullptr, 0, executor, stream_), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);  // deferred: two runs are still queued
  EXPECT_EQ(gradkit::launch(kApi, nullptr, 0, executor, stream_), ACLNN_ERR_PARAM_INVALID);
  recentError();
  release.count_down();
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(runs_.load(), 2) << "the queued runs still ran";
}

TEST_F(ApiExecutor, UnlaunchedOneShotCanBeDestroyed) {
  aclOpExecutor* executor = counting();
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
  EXPECT_EQ(runs_.load(), 0);
  EXPECT_EQ(aclDestroyAclOpExecutor(nullptr), ACLNN_SUCCESS);
}

TEST_F(ApiExecutor, NullExecutor) {
  EXPECT_EQ(gradkit::launch(kApi, nullptr, 0, nullptr, stream_), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(mentions(recentError(), {kApi, "executor", "aclnnFakeOpGetWorkspaceSize", "nullptr", "161001"}));
  EXPECT_EQ(aclSetAclOpExecutorRepeatable(nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(mentions(recentError(), {"aclSetAclOpExecutorRepeatable", "executor", "nullptr"}));
}

TEST_F(ApiExecutor, WorkspaceChecks) {
  aclOpExecutor* executor = counting(256);
  void* workspace = nullptr;
  ASSERT_EQ(aclrtMalloc(&workspace, 256, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(gradkit::launch(kApi, workspace, 255, executor, stream_), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {kApi, "workspaceSize", ">= 256", "given 255", "161002"}));
  EXPECT_EQ(gradkit::launch(kApi, nullptr, 256, executor, stream_), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(mentions(recentError(), {kApi, "workspace", "256 bytes", "nullptr"}));
  void* tooLate = static_cast<char*>(workspace) + 64;
  EXPECT_EQ(gradkit::launch(kApi, tooLate, 256, executor, stream_), ACLNN_ERR_PARAM_INVALID);
  // 256 requested bytes are 288 usable ones (CANN's rounding): 224 are left after 64.
  EXPECT_TRUE(mentions(recentError(), {"workspace", hex(tooLate), "224 bytes left"}));
  EXPECT_EQ(runs_.load(), 0);
  // A rejected launch leaves the executor usable.
  EXPECT_EQ(gradkit::launch(kApi, workspace, 512, executor, stream_), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(runs_.load(), 1);
  EXPECT_EQ(seenWorkspace_, workspace);
  EXPECT_EQ(aclrtFree(workspace), ACL_SUCCESS);
}

TEST_F(ApiExecutor, BodyErrorIsReportedBySynchronize) {
  aclOpExecutor* executor = gradkit::newExecutor(
      kApi, 0, [](void*) { return gradkit::fail(ACLNN_ERR_PARAM_INVALID, kApi, "self", "a finite threshold", "inf"); });
  EXPECT_EQ(gradkit::launch(kApi, nullptr, 0, executor, stream_), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {kApi, "self", "given inf"}));
}

TEST_F(ApiExecutor, ThrowingBodyStillReleasesTheExecutor) {
  aclOpExecutor* executor = gradkit::newExecutor(kApi, 0, [](void*) -> aclnnStatus { throw std::bad_alloc(); });
  EXPECT_EQ(gradkit::launch(kApi, nullptr, 0, executor, stream_), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_ERROR_RT_INTERNAL_ERROR);
  EXPECT_TRUE(mentions(recentError(), {"bad_alloc"}));
  EXPECT_EQ(gradkit::launch(kApi, nullptr, 0, executor, stream_), ACLNN_ERR_PARAM_INVALID) << "it was released";
  recentError();
}

TEST_F(ApiExecutor, EmptyBodyEnqueuesOnlyTheRelease) {
  aclOpExecutor* executor = gradkit::newExecutor(kApi, 0, {});  // empty tensors: nothing to compute
  EXPECT_EQ(gradkit::launch(kApi, nullptr, 0, executor, stream_), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(gradkit::launch(kApi, nullptr, 0, executor, stream_), ACLNN_ERR_PARAM_INVALID);
  recentError();
  aclOpExecutor* repeatable = gradkit::newExecutor(kApi, 0, {});
  ASSERT_EQ(aclSetAclOpExecutorRepeatable(repeatable), ACLNN_SUCCESS);
  EXPECT_EQ(gradkit::launch(kApi, nullptr, 0, repeatable, stream_), ACLNN_SUCCESS);
  EXPECT_EQ(gradkit::launch(kApi, nullptr, 0, repeatable, stream_), ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyAclOpExecutor(repeatable), ACLNN_SUCCESS);
}

TEST_F(ApiExecutor, EnqueueFailureIsRuntimeError) {
  aclOpExecutor* executor = counting();
  const auto bogus = reinterpret_cast<aclrtStream>(static_cast<uintptr_t>(0xbad20));
  EXPECT_EQ(gradkit::launch(kApi, nullptr, 0, executor, bogus), ACLNN_ERR_RUNTIME_ERROR);
  EXPECT_TRUE(mentions(recentError(), {kApi, "stream", "0xbad20", "cannot enqueue", "361001"}));
  // Not queued, so still launchable.
  EXPECT_EQ(gradkit::launch(kApi, nullptr, 0, executor, stream_), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(runs_.load(), 1);
}

TEST_F(ApiExecutor, UnknownExecutorIsRejected) {
  auto memory = std::make_unique<uint64_t[]>(8);  // a real address, never handed out by newExecutor
  auto* stray = reinterpret_cast<aclOpExecutor*>(memory.get());
  EXPECT_EQ(gradkit::launch(kApi, nullptr, 0, stray, stream_), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"executor", hex(stray), "unknown"}));
  EXPECT_EQ(aclSetAclOpExecutorRepeatable(stray), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(aclDestroyAclOpExecutor(stray), ACLNN_ERR_PARAM_INVALID);
  recentError();
}

TEST_F(ApiExecutor, AnExecutorRunsOnlyThroughItsOwnOperator) {
  aclOpExecutor* executor = counting();
  EXPECT_EQ(gradkit::launch("aclnnDropoutV3", nullptr, 0, executor, stream_), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"aclnnDropoutV3", "executor", "an executor from aclnnDropoutV3GetWorkspaceSize",
                                       "made by aclnnFakeOpGetWorkspaceSize"}));
  EXPECT_EQ(runs_.load(), 0);
  EXPECT_EQ(gradkit::launch(kApi, nullptr, 0, executor, stream_), ACLNN_SUCCESS) << "still usable by its owner";
  EXPECT_EQ(aclrtSynchronizeStream(stream_), ACL_SUCCESS);
  EXPECT_EQ(runs_.load(), 1);
}

TEST_F(ApiExecutor, StaleHandlesNeverReachANewerExecutor) {
  // A destroyed executor's handle stays dead even after many new executors (whose objects may reuse its memory).
  aclOpExecutor* stale = counting();
  ASSERT_EQ(aclDestroyAclOpExecutor(stale), ACLNN_SUCCESS);
  std::vector<aclOpExecutor*> newer;
  for (int i = 0; i < 1000; ++i) {
    newer.push_back(counting());
    EXPECT_NE(newer.back(), stale);
  }
  EXPECT_EQ(gradkit::launch(kApi, nullptr, 0, stale, stream_), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {hex(stale), "unknown, already run, or destroyed"}));
  EXPECT_EQ(runs_.load(), 0);
  for (aclOpExecutor* executor : newer) EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
}

}  // namespace
