// The shared first phase: workspace booking, staged tensors, and getWorkspaceSize driving a fake op.
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include "api_test_util.h"
#include "opapi/op_definition.h"
#include "opapi/staged_tensor.h"
#include "opapi/workspace.h"

using gradkit::OpDefinition;
using gradkit::StagedTensor;
using gradkit::WorkspaceBooking;
using gradkit_test::ApiFixture;
using gradkit_test::mentions;
using gradkit_test::recentError;

namespace {

TEST(WorkspaceBooking, RegionsAreAlignedAndInBookingOrder) {
  WorkspaceBooking booking;
  const auto a = booking.book("a", 10);
  const auto none = booking.book("empty", 0);
  const auto b = booking.bookArray("b", 3, 4);
  const auto c = booking.book("c", 64);
  EXPECT_EQ(a.offset, 0u);
  EXPECT_EQ(a.bytes, 10u);
  EXPECT_FALSE(none.booked());
  EXPECT_EQ(b.offset, 64u);
  EXPECT_EQ(b.bytes, 12u);
  EXPECT_EQ(c.offset, 128u);
  EXPECT_EQ(booking.totalBytes(), 192u);
  EXPECT_FALSE(booking.overflowed());
  EXPECT_EQ(booking.describe(), "a: 10 B @ 0\nb: 12 B @ 64\nc: 64 B @ 128\n");
  unsigned char memory[256];
  EXPECT_EQ(c.in(memory), memory + 128);
}

TEST(WorkspaceBooking, NestedLayoutsAreOneRegionOfTheOwner) {
  WorkspaceBooking inner;
  inner.book("x", 100);
  inner.book("y", 8);
  WorkspaceBooking outer;
  outer.book("first", 1);
  const auto nested = outer.bookNested("sub", inner);
  EXPECT_EQ(nested.offset, 64u);
  EXPECT_EQ(nested.bytes, inner.totalBytes());
  EXPECT_EQ(inner.totalBytes(), 136u);
  EXPECT_EQ(outer.totalBytes(), 200u);
  EXPECT_EQ(outer.describe(), "first: 1 B @ 0\nsub: 136 B @ 64\n  x: 100 B @ 0\n  y: 8 B @ 128\n");
}

TEST(WorkspaceBooking, SizesThatDoNotFitInUint64AreFlagged) {
  WorkspaceBooking product;
  product.bookArray("huge", uint64_t{1} << 62, 8);
  EXPECT_TRUE(product.overflowed());
  WorkspaceBooking sum;
  sum.book("a", std::numeric_limits<uint64_t>::max() - 10);
  EXPECT_FALSE(sum.overflowed());
  sum.book("b", 100);  // alignment and end both past 2^64
  EXPECT_TRUE(sum.overflowed());
  WorkspaceBooking outer;
  outer.bookNested("sub", sum);
  EXPECT_TRUE(outer.overflowed()) << "an overflowed sub-layout overflows its owner";
}

TEST(StagedTensor, ContiguousViewsAreUsedInPlaceAndStridedOnesAreStaged) {
  std::vector<float> storage = {0, 1, 2, 3, 4, 5};
  aclTensor dense;
  dense.viewDims = {2, 3};
  dense.strides = {3, 1};
  dense.dtype = ACL_FLOAT;
  dense.storageDims = {6};
  dense.data = storage.data();
  aclTensor transposed = dense;
  transposed.viewDims = {3, 2};
  transposed.strides = {1, 3};

  WorkspaceBooking booking;
  const StagedTensor inPlace = StagedTensor::plan(dense, false, "dense", booking);
  const StagedTensor staged = StagedTensor::plan(transposed, true, "transposed", booking);
  EXPECT_FALSE(inPlace.staged());
  EXPECT_TRUE(staged.staged());
  EXPECT_EQ(booking.totalBytes(), 6 * sizeof(float));

  std::vector<unsigned char> workspace(booking.totalBytes());
  EXPECT_EQ(inPlace.read(workspace.data()), storage.data());
  const auto* read = static_cast<const float*>(staged.read(workspace.data()));
  EXPECT_EQ(std::vector<float>(read, read + 6), (std::vector<float>{0, 3, 1, 4, 2, 5}));

  auto* target = static_cast<float*>(staged.target(workspace.data()));
  for (int i = 0; i < 6; ++i) target[i] = static_cast<float>(10 + i);
  staged.writeBack(workspace.data());
  EXPECT_EQ(storage, (std::vector<float>{10, 12, 14, 11, 13, 15}));
}

// A fake op: `value` is what its check returns; `empty` says there is nothing to compute; `fail` makes the plan
// throw; `bytes` is what the plan books.
struct FakeArgs {
  aclnnStatus value;
  bool empty;
  bool fail;
  uint64_t bytes;
};

struct FakePlan {
  WorkspaceBooking workspace;
  aclnnStatus run(void*) const { return ACLNN_SUCCESS; }
};

const OpDefinition<FakeArgs, FakePlan> kFake{
    "aclnnFake", [](const FakeArgs& args, const uint64_t*, aclOpExecutor* const*) { return args.value; },
    [](const FakeArgs& args) { return args.empty; },
    [](const FakeArgs& args) {
      if (args.fail) throw std::runtime_error("no tile fits");
      FakePlan plan;
      plan.workspace.bookArray("scratch", args.bytes, 1);
      return plan;
    }};

using OpDefinitionTest = ApiFixture;

TEST_F(OpDefinitionTest, CheckFailuresComeBackUnchangedAndMakeNoExecutor) {
  uint64_t size = 7;
  aclOpExecutor* executor = nullptr;
  EXPECT_EQ(gradkit::getWorkspaceSize(kFake, {ACLNN_ERR_PARAM_NULLPTR, false, false, 0}, &size, &executor),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(executor, nullptr);
  EXPECT_EQ(size, 7u);
}

TEST_F(OpDefinitionTest, PlannedCallsReportTheBookedBytes) {
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(gradkit::getWorkspaceSize(kFake, {ACLNN_SUCCESS, false, false, 1000}, &size, &executor), ACLNN_SUCCESS);
  EXPECT_EQ(size, 1000u);
  ASSERT_NE(executor, nullptr);
  EXPECT_TRUE(gradkit::describeExecutor(executor)->hasBody);
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);

  ASSERT_EQ(gradkit::getWorkspaceSize(kFake, {ACLNN_SUCCESS, true, false, 1000}, &size, &executor), ACLNN_SUCCESS);
  EXPECT_EQ(size, 0u) << "nothing to compute: no plan, no workspace";
  EXPECT_FALSE(gradkit::describeExecutor(executor)->hasBody);
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
}

TEST_F(OpDefinitionTest, PlanningFailuresBecomeStatusesWithMessages) {
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  EXPECT_EQ(gradkit::getWorkspaceSize(kFake, {ACLNN_SUCCESS, false, true, 0}, &size, &executor), ACLNN_ERR_INNER);
  EXPECT_TRUE(mentions(recentError(), {"aclnnFake", "planning failed", "no tile fits"}));
  EXPECT_EQ(gradkit::getWorkspaceSize(kFake, {ACLNN_SUCCESS, false, false, ~uint64_t{0} - 10}, &size, &executor),
            ACLNN_SUCCESS)
      << "a huge but representable size is reported as it is";
  EXPECT_EQ(size, ~uint64_t{0} - 10);
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
  executor = nullptr;
  FakeArgs overflow{ACLNN_SUCCESS, false, false, 0};
  const OpDefinition<FakeArgs, FakePlan> overflowing{kFake.api, kFake.check, kFake.nothingToCompute,
                                                     [](const FakeArgs&) {
                                                       FakePlan plan;
                                                       plan.workspace.bookArray("x", uint64_t{1} << 40, 1 << 30);
                                                       return plan;
                                                     }};
  EXPECT_EQ(gradkit::getWorkspaceSize(overflowing, overflow, &size, &executor), ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"aclnnFake", "does not fit in a 64-bit byte count"}));
  EXPECT_EQ(executor, nullptr);
}

}  // namespace
