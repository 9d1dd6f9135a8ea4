// Freed tracked memory is held back for a while (the quarantine, runtime/memory.h findFreedAllocation), so a pointer
// into it is named as a use after free instead of being used: as an operator's workspace, as tensor data, or as
// either side of a copy (found by fuzz_descriptors: a freed workspace ran, and wrote into freed memory).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "acl/acl.h"
#include "api/api_test_util.h"
#include "api/resource_failure_calls.h"
#include "runtime/executor.h"
#include "runtime/memory.h"

namespace gradkit_test {
namespace {

using FreedMemory = ApiFixture;

TEST_F(FreedMemory, AFreedWorkspaceIsRejectedAndTheExecutorStaysUsable) {
  auto call = resourceFailureOps().front().make();  // ThresholdBackward over strided inputs: needs a workspace
  call->resetOutputs();
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(call->firstPhase(&size, &executor), ACLNN_SUCCESS) << recentError();
  ASSERT_GT(size, 0u);
  void* workspace = nullptr;
  ASSERT_EQ(aclrtMalloc(&workspace, size, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtFree(workspace), ACL_SUCCESS);
  EXPECT_EQ(call->secondPhase(workspace, size, executor, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"aclnnThresholdBackward", "'workspace'", hex(workspace), "freed"}));
  // An interior pointer of the freed block too.
  EXPECT_EQ(call->secondPhase(static_cast<char*>(workspace) + 64, size, executor, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"freed"}));
  EXPECT_TRUE(call->outputsUntouched());
  // The executor was not consumed: a live workspace runs it.
  DeviceBuffer live(size);
  EXPECT_EQ(call->secondPhase(live.data(), size, executor, nullptr), ACLNN_SUCCESS) << recentError();
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << recentError();
  EXPECT_FALSE(call->outputsUntouched());
}

TEST_F(FreedMemory, TensorDataAndCopiesIntoFreedMemoryAreRejected) {
  void* device = nullptr;
  ASSERT_EQ(aclrtMalloc(&device, 256, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  ASSERT_EQ(aclrtFree(device), ACL_SUCCESS);
  const int64_t dims[1] = {4};
  EXPECT_EQ(aclCreateTensor(dims, 1, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 1, device), nullptr);
  EXPECT_TRUE(mentions(recentError(), {"aclCreateTensor", "tensorData", hex(device), "freed"}));
  std::vector<unsigned char> host(64, 1);
  EXPECT_EQ(aclrtMemcpy(device, 64, host.data(), 64, ACL_MEMCPY_HOST_TO_HOST), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"aclrtMemcpy", "dst", "freed"}));
  EXPECT_EQ(aclrtMemcpy(host.data(), 64, device, 64, ACL_MEMCPY_DEFAULT), ACL_ERROR_INVALID_PARAM);
  EXPECT_TRUE(mentions(recentError(), {"aclrtMemcpy", "src", "freed"}));
  // Freeing it again is still the double free it always was.
  EXPECT_EQ(aclrtFree(device), ACL_ERROR_RT_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"aclrtFree", "already freed"}));
}

TEST_F(FreedMemory, TheQuarantineIsBoundedAndForgetsTheOldestBlocks) {
  std::vector<void*> blocks(80);
  for (void*& block : blocks) ASSERT_EQ(aclrtMallocHost(&block, 128), ACL_SUCCESS);
  for (void* block : blocks) ASSERT_EQ(aclrtFreeHost(block), ACL_SUCCESS);
  // The newest 64 are still known as freed; the oldest have been returned to the system and forgotten.
  EXPECT_TRUE(gradkit::rt::findFreedAllocation(blocks.back()).has_value());
  EXPECT_TRUE(gradkit::rt::findFreedAllocation(blocks[80 - 64]).has_value());
  EXPECT_FALSE(gradkit::rt::findFreedAllocation(blocks[80 - 65]).has_value());
  // A block larger than the whole quarantine is returned at once.
  void* large = nullptr;
  ASSERT_EQ(aclrtMallocHost(&large, (size_t{64} << 20) + 1), ACL_SUCCESS);
  ASSERT_EQ(aclrtFreeHost(large), ACL_SUCCESS);
  EXPECT_FALSE(gradkit::rt::findFreedAllocation(large).has_value());
}

}  // namespace
}  // namespace gradkit_test
