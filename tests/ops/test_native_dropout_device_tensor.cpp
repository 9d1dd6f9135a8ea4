// gradkit::DeviceTensor (the owning tensor the host dispatch returns) and the dispatch's stream steps (strided
// copy and fill), against element walks written here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <utility>
#include <vector>

#include "acl/acl.h"
#include "dispatch/dispatch_steps.h"
#include "gradkit/device_tensor.h"
#include "opapi/tensor_copy.h"
#include "ops/op_test_util.h"
#include "runtime/runtime.h"

namespace gradkit::test {
namespace {

TEST(NativeDropoutDeviceTensor, AllocatesTrackedDenseMemoryWithADescriptor) {
  DeviceTensor tensor;
  EXPECT_FALSE(tensor.valid());
  ASSERT_EQ(DeviceTensor::allocate({3, 5}, ACL_FLOAT16, &tensor), ACLNN_SUCCESS) << recentError();
  ASSERT_TRUE(tensor.valid());
  EXPECT_EQ(tensor.numel(), 15);
  EXPECT_EQ(tensor.bytes(), 30u);
  EXPECT_EQ(tensor.dtype(), ACL_FLOAT16);
  EXPECT_EQ(tensor.shape(), (std::vector<int64_t>{3, 5}));
  const auto allocation = rt::findAllocation(tensor.data());
  ASSERT_TRUE(allocation.has_value());
  EXPECT_EQ(allocation->kind, rt::MemoryKind::Device);
  EXPECT_GE(allocation->size, 30u);
  EXPECT_EQ(tensor.get()->viewDims, (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(tensor.get()->strides, (std::vector<int64_t>{5, 1}));
  EXPECT_EQ(tensor.get()->data, tensor.data());
  EXPECT_EQ(tensor.get()->dtype, ACL_FLOAT16);
}

TEST(NativeDropoutDeviceTensor, MoveTransfersOwnershipAndResetFrees) {
  DeviceTensor first;
  ASSERT_EQ(DeviceTensor::allocate({7}, ACL_FLOAT, &first), ACLNN_SUCCESS);
  void* memory = first.data();
  DeviceTensor second(std::move(first));
  EXPECT_FALSE(first.valid());  // NOLINT(bugprone-use-after-move): the moved-from state is specified
  EXPECT_EQ(first.data(), nullptr);
  EXPECT_EQ(second.data(), memory);
  DeviceTensor third;
  ASSERT_EQ(DeviceTensor::allocate({2}, ACL_FLOAT, &third), ACLNN_SUCCESS);
  void* replaced = third.data();
  third = std::move(second);
  EXPECT_EQ(third.data(), memory);
  EXPECT_FALSE(rt::findAllocation(replaced).has_value());  // the assigned-over tensor was freed
  third.reset();
  EXPECT_FALSE(third.valid());
  EXPECT_FALSE(rt::findAllocation(memory).has_value());
}

TEST(NativeDropoutDeviceTensor, EmptyShapeHasADescriptorAndNoMemory) {
  DeviceTensor tensor;
  ASSERT_EQ(DeviceTensor::allocate({2, 0, 3}, ACL_BF16, &tensor), ACLNN_SUCCESS) << recentError();
  EXPECT_TRUE(tensor.valid());
  EXPECT_EQ(tensor.data(), nullptr);
  EXPECT_EQ(tensor.numel(), 0);
  EXPECT_EQ(tensor.get()->viewDims, (std::vector<int64_t>{2, 0, 3}));
}

TEST(NativeDropoutDeviceTensor, RejectsBadArgumentsWithMessages) {
  EXPECT_EQ(DeviceTensor::allocate({1}, ACL_FLOAT, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_NE(recentError().find("argument 'result'"), std::string::npos);
  DeviceTensor tensor;
  ASSERT_EQ(DeviceTensor::allocate({4}, ACL_FLOAT, &tensor), ACLNN_SUCCESS);
  EXPECT_EQ(DeviceTensor::allocate({-1}, ACL_FLOAT, &tensor), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recentError().find("[-1]"), std::string::npos);
  EXPECT_FALSE(tensor.valid());  // released before the failed allocation
  EXPECT_EQ(DeviceTensor::allocate({1, 1, 1, 1, 1, 1, 1, 1, 1}, ACL_FLOAT, &tensor), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recentError().find("at most 8 dims"), std::string::npos);
  EXPECT_EQ(DeviceTensor::allocate({1}, ACL_DT_UNDEFINED, &tensor), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recentError().find("argument 'dtype'"), std::string::npos);
  EXPECT_EQ(DeviceTensor::allocate({int64_t{1} << 40, int64_t{1} << 40}, ACL_FLOAT, &tensor), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recentError().find("fits in int64"), std::string::npos);
}

// Element e of a strided float view, read by an explicit index walk.
std::vector<float> readView(const aclTensor& view, const std::vector<float>& storage) {
  std::vector<float> values;
  forEachOffset(view, [&](int64_t at) { values.push_back(storage[static_cast<size_t>(at)]); });
  return values;
}

TEST(NativeDropoutDispatchSteps, CopyBetweenStridedViewsKeepsLogicalOrderAndTouchesNothingElse) {
  std::vector<float> source(12 * 10);
  std::iota(source.begin(), source.end(), 1.0f);
  std::vector<float> target(10 * 13, -7.0f);
  auto src = makeView(source.data(), ACL_FLOAT, {9, 5}, {1, 12}, 3, 120);  // transposed with an offset
  auto dst = makeView(target.data(), ACL_FLOAT, {9, 5}, {2, 26}, 1, 130);  // every other element
  ASSERT_EQ(dispatch::enqueueCopy("test", *src, *dst, nullptr), ACLNN_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << recentError();
  EXPECT_EQ(readView(*dst, target), readView(*src, source));
  size_t untouched = 0;
  for (float value : target) untouched += value == -7.0f;
  EXPECT_EQ(untouched, target.size() - 45);
}

TEST(NativeDropoutDispatchSteps, FillWritesEveryElementOfAStridedView) {
  std::vector<float> storage(40, 3.0f);
  auto view = makeView(storage.data(), ACL_FLOAT, {4, 3}, {10, 2}, 1, 40);
  ASSERT_EQ(dispatch::enqueueFill("test", *view, 0, nullptr), ACLNN_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  for (float value : readView(*view, storage)) EXPECT_EQ(std::signbit(value) ? 1 : 0, 0) << value;
  for (float value : readView(*view, storage)) EXPECT_EQ(value, 0.0f);
  EXPECT_EQ(std::count(storage.begin(), storage.end(), 3.0f), 40 - 12);
  std::vector<uint8_t> bytes(20, 0x11);
  auto mask = makeView(bytes.data(), ACL_UINT8, {16}, {}, 2, 20);
  ASSERT_EQ(dispatch::enqueueFill("test", *mask, 0xFF, nullptr), ACLNN_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin() + 2, bytes.begin() + 18), std::vector<uint8_t>(16, 0xFF));
  EXPECT_EQ(bytes[1], 0x11);
  EXPECT_EQ(bytes[18], 0x11);
}

TEST(NativeDropoutDispatchSteps, InPlaceCopyOfTheSameViewIsANoOp) {
  std::vector<float> storage = {1, 2, 3, 4};
  auto view = makeView(storage.data(), ACL_FLOAT, {4});
  ASSERT_EQ(dispatch::enqueueCopy("test", *view, *view, nullptr), ACLNN_SUCCESS);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  EXPECT_EQ(storage, (std::vector<float>{1, 2, 3, 4}));
}

TEST(NativeDropoutDispatchSteps, UnknownStreamIsARuntimeError) {
  std::vector<float> storage(4);
  auto view = makeView(storage.data(), ACL_FLOAT, {4});
  const auto bogus = reinterpret_cast<aclrtStream>(uintptr_t{0x7fff0000});
  EXPECT_EQ(dispatch::enqueueFill("test", *view, 0, bogus), ACLNN_ERR_RUNTIME_ERROR);
  EXPECT_NE(recentError().find("cannot enqueue"), std::string::npos);
}

}  // namespace
}  // namespace gradkit::test
