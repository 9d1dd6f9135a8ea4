// Resource failures (docs/reliability.md): memory requests beyond the machine, and allocation failures injected at
// every place an entry point allocates (runtime/fault_injection.h). Each must give its documented status with a
// message, write nothing to the outputs, leave no executor behind, and leave the process working: the next call
// gives exactly the bits of a call that never saw a failure.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_threshold_backward.h"
#include "api/api_test_util.h"
#include "api/resource_failure_calls.h"
#include "runtime/executor.h"
#include "runtime/fault_injection.h"
#include "runtime/memory.h"

namespace gradkit_test {
namespace {

using gradkit::rt::FaultSite;

/** Runs `call` through both phases and a synchronize; its outputs' bytes, or a gtest failure. */
std::vector<unsigned char> runToCompletion(OpCall& call) {
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  EXPECT_EQ(call.firstPhase(&size, &executor), ACLNN_SUCCESS) << recentError();
  void* workspace = nullptr;
  if (size > 0) {
    EXPECT_EQ(aclrtMalloc(&workspace, size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS) << recentError();
  }
  EXPECT_EQ(call.secondPhase(workspace, size, executor, nullptr), ACLNN_SUCCESS) << recentError();
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << recentError();
  if (workspace != nullptr) {
    EXPECT_EQ(aclrtFree(workspace), ACL_SUCCESS);
  }
  return call.outputBytes();
}

class ResourceFailures : public ApiFixture, public ::testing::WithParamInterface<ResourceFailureOp> {
 protected:
  void SetUp() override {
    ApiFixture::SetUp();
    call_ = GetParam().make();
    // What a call that never saw a failure writes; it must differ from the sentinel, or "untouched" proves nothing.
    call_->resetOutputs();
    expected_ = runToCompletion(*call_);
    ASSERT_FALSE(call_->outputsUntouched()) << "the reference call wrote nothing";
    call_->resetOutputs();
    executorsBefore_ = gradkit::liveExecutorCount();
  }
  void TearDown() override {
    gradkit::rt::clearAllocationFailures();
    call_.reset();
    ApiFixture::TearDown();
  }

  /** The first phase with `site` armed: must fail with `status` and a message, touching nothing. */
  void expectFirstPhaseFails(FaultSite site, aclnnStatus status, const std::string& text) {
    gradkit::rt::injectAllocationFailure(site);
    uint64_t size = 12345;
    aclOpExecutor* executor = nullptr;
    EXPECT_EQ(call_->firstPhase(&size, &executor), status);
    EXPECT_TRUE(mentions(recentError(), {GetParam().api, text}));
    EXPECT_EQ(size, 12345u) << "workspaceSize written by a failed call";
    EXPECT_EQ(executor, nullptr) << "executor written by a failed call";
    expectNoTrace();
  }

  /** Nothing written to the outputs, no executor left behind, and the next call gives the reference bits. */
  void expectNoTrace() {
    gradkit::rt::clearAllocationFailures();
    EXPECT_TRUE(call_->outputsUntouched()) << "a failed call wrote to an output";
    EXPECT_EQ(gradkit::liveExecutorCount(), executorsBefore_) << "a failed call left an executor behind";
    EXPECT_EQ(runToCompletion(*call_), expected_) << "the call after the failure";
  }

  std::unique_ptr<OpCall> call_;
  std::vector<unsigned char> expected_;
  size_t executorsBefore_ = 0;
};

TEST_P(ResourceFailures, HostMemoryRunningOutWhilePlanningIs561000) {
  expectFirstPhaseFails(FaultSite::Planning, ACLNN_ERR_INNER, "out of host memory while planning");
}

TEST_P(ResourceFailures, HostMemoryRunningOutWhileCreatingTheExecutorIs561101) {
  expectFirstPhaseFails(FaultSite::ExecutorCreation, ACLNN_ERR_INNER_CREATE_EXECUTOR,
                        "out of memory while creating the executor");
}

TEST_P(ResourceFailures, AWorkspaceTheDeviceCannotGiveIs207001AndTheExecutorCanBeDestroyed) {
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(call_->firstPhase(&size, &executor), ACLNN_SUCCESS) << recentError();
  // The workspace (or, for an op that needs none, any device memory) cannot be had.
  gradkit::rt::injectAllocationFailure(FaultSite::TrackedMemory);
  void* workspace = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(aclrtMalloc(&workspace, size > 0 ? size : 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_EQ(workspace, nullptr);
  EXPECT_TRUE(mentions(recentError(), {"aclrtMalloc", "size", "allocation failed: out of memory"}));
  // The caller gives up on this call: the executor it holds is destroyed, nothing has run.
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS) << recentError();
  expectNoTrace();
}

TEST_P(ResourceFailures, ATooSmallWorkspaceIsRejectedBeforeAnythingRuns) {
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(call_->firstPhase(&size, &executor), ACLNN_SUCCESS) << recentError();
  if (size == 0) {
    EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
    GTEST_SKIP() << GetParam().api << " needs no workspace for this call";
  }
  DeviceBuffer workspace(size - 1);
  EXPECT_EQ(call_->secondPhase(workspace.data(), size - 1, executor, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {GetParam().api, "workspaceSize"}));
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS) << recentError();
  expectNoTrace();
}

std::string opName(const ::testing::TestParamInfo<ResourceFailureOp>& info) {
  return std::string(info.param.api) + (*info.param.variant != '\0' ? std::string("_") + info.param.variant : "");
}

INSTANTIATE_TEST_SUITE_P(EveryOperator, ResourceFailures, ::testing::ValuesIn(resourceFailureOps()), opName);

// --- requests beyond memory, and the injection hook itself ---

using MemoryLimits = ApiFixture;

TEST_F(MemoryLimits, RequestsBeyondTheMachineAre207001WithAMessageAndTheProcessKeepsWorking) {
  const size_t largest = gradkit::rt::largestTrackedAllocation();
  ASSERT_GT(largest, size_t{1} << 20);
  for (size_t size : {size_t{1} << 62, largest + 1, largest + 4096, SIZE_MAX}) {
    void* device = reinterpret_cast<void*>(0x1);
    EXPECT_EQ(aclrtMalloc(&device, size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION) << size;
    EXPECT_EQ(device, nullptr);
    EXPECT_TRUE(mentions(recentError(), {"aclrtMalloc", "size", std::to_string(size), "allocation failed",
                                         "at most " + std::to_string(largest) + " bytes"}));
    void* host = reinterpret_cast<void*>(0x1);
    EXPECT_EQ(aclrtMallocHost(&host, size), ACL_ERROR_RT_MEMORY_ALLOCATION) << size;
    EXPECT_EQ(host, nullptr);
    EXPECT_TRUE(mentions(recentError(), {"aclrtMallocHost", std::to_string(size), "allocation failed"}));
  }
  // A normal operator call still works and gives the right bits.
  auto call = resourceFailureOps().front().make();
  call->resetOutputs();
  const auto out = runToCompletion(*call);
  auto again = resourceFailureOps().front().make();
  again->resetOutputs();
  EXPECT_EQ(runToCompletion(*again), out);
  EXPECT_FALSE(call->outputsUntouched());
}

/**
 * ThresholdBackward over views with a huge stride-0 dim: the inputs' innermost stride is 2, so both are staged
 * (dense copies of n elements each) and the workspace grows with n although the real memory is a few bytes. The
 * output claims a huge storage over a small untracked host buffer (gradkit cannot see its true size; nothing is
 * ever run on it).
 */
struct HugeThresholdCall {
  explicit HugeThresholdCall(int64_t rows, aclDataType dtype) {
    const int64_t dims[2] = {rows, 2}, inputStrides[2] = {0, 2}, inputStorage[1] = {3};
    grad = aclCreateTensor(dims, 2, dtype, inputStrides, 0, ACL_FORMAT_ND, inputStorage, 1, memory.data());
    self = aclCreateTensor(dims, 2, dtype, inputStrides, 0, ACL_FORMAT_ND, inputStorage, 1, memory.data() + 8);
    // Out lies above both inputs, so its (claimed) byte range overlaps neither.
    const int64_t outStorage[1] = {rows * 2};
    out = aclCreateTensor(dims, 2, dtype, nullptr, 0, ACL_FORMAT_ND, outStorage, 1, memory.data() + 16);
    float value = 0.5f;
    threshold = aclCreateScalar(&value, ACL_FLOAT);
    for (int i = 16; i < 32; ++i) memory[i] = 0x5A5A5A5A5A5A5A5A;
  }
  ~HugeThresholdCall() {
    aclDestroyTensor(grad);
    aclDestroyTensor(self);
    aclDestroyTensor(out);
    aclDestroyScalar(threshold);
  }
  bool outUntouched() const {
    for (int i = 16; i < 32; ++i) {
      if (memory[i] != 0x5A5A5A5A5A5A5A5A) return false;
    }
    return true;
  }
  std::vector<uint64_t> memory = std::vector<uint64_t>(32, 0);
  aclTensor *grad = nullptr, *self = nullptr, *out = nullptr;
  aclScalar* threshold = nullptr;
};

TEST_F(MemoryLimits, AWorkspaceLargerThanTheMachineIsPlannedButItsAllocationFails) {
  const size_t executorsBefore = gradkit::liveExecutorCount();
  HugeThresholdCall call(int64_t{1} << 40, ACL_FLOAT);  // 2 x 2^41 staged FLOAT elements: 16 TiB of workspace
  ASSERT_NE(call.grad, nullptr) << recentError();
  ASSERT_NE(call.out, nullptr) << recentError();
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(aclnnThresholdBackwardGetWorkspaceSize(call.grad, call.self, call.threshold, call.out, &size, &executor),
            ACLNN_SUCCESS)
      << recentError();
  EXPECT_GE(size, uint64_t{1} << 44);
  void* workspace = nullptr;
  EXPECT_EQ(aclrtMalloc(&workspace, size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_TRUE(mentions(recentError(), {"aclrtMalloc", std::to_string(size), "more than the machine has"}));
  // Running it without the workspace is refused, and so is a small one: nothing is written.
  std::vector<unsigned char> small(4096);
  EXPECT_EQ(aclnnThresholdBackward(nullptr, size, executor, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(mentions(recentError(), {"aclnnThresholdBackward", "workspace", std::to_string(size)}));
  EXPECT_EQ(aclnnThresholdBackward(small.data(), small.size(), executor, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"aclnnThresholdBackward", "workspaceSize", std::to_string(size)}));
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << recentError();
  EXPECT_TRUE(call.outUntouched());
  EXPECT_EQ(gradkit::liveExecutorCount(), executorsBefore);
}

using FaultInjection = ApiFixture;

TEST_F(FaultInjection, AnArmedFaultFiresOnceAfterItsSkipCountOnTheArmingThreadOnly) {
  gradkit::rt::injectAllocationFailure(FaultSite::TrackedMemory, 2);
  // Another thread allocates freely while this one is armed.
  std::thread other([] {
    void* memory = nullptr;
    EXPECT_EQ(aclrtMallocHost(&memory, 64), ACL_SUCCESS);
    EXPECT_EQ(aclrtFreeHost(memory), ACL_SUCCESS);
  });
  other.join();
  void* blocks[4] = {};
  EXPECT_EQ(aclrtMalloc(&blocks[0], 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(aclrtMallocHost(&blocks[1], 64), ACL_SUCCESS);
  EXPECT_EQ(aclrtMallocHost(&blocks[2], 64), ACL_ERROR_RT_MEMORY_ALLOCATION);
  EXPECT_TRUE(mentions(recentError(), {"aclrtMallocHost", "64 bytes", "out of memory"}));
  EXPECT_EQ(blocks[2], nullptr);
  EXPECT_EQ(aclrtMalloc(&blocks[3], 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS) << "the fault fires once";
  EXPECT_EQ(aclrtFree(blocks[0]), ACL_SUCCESS);
  EXPECT_EQ(aclrtFreeHost(blocks[1]), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(blocks[3]), ACL_SUCCESS);
  // Cleared: nothing fires.
  gradkit::rt::injectAllocationFailure(FaultSite::TrackedMemory, 0);
  gradkit::rt::clearAllocationFailures();
  EXPECT_EQ(aclrtMalloc(&blocks[0], 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(blocks[0]), ACL_SUCCESS);
}

}  // namespace
}  // namespace gradkit_test
