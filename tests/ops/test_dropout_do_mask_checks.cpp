// aclnnDropoutDoMaskGetWorkspaceSize: every rule of spec dropout_threshold.md 1.4.1 in upstream's order (code and
// message), an empty self (checked, then nothing written), an empty mask (rejected for a non-empty self), and the ">="
// mask size rule.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

#include "aclnnop/aclnn_dropout_do_mask.h"
#include "ops/masked_dropout_test_util.h"

namespace gradkit::test {
namespace {

PlannedCall doMask(const aclTensor* self, const aclTensor* mask, double prob, aclTensor* out) {
  return planAndRun(
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnDropoutDoMaskGetWorkspaceSize(self, mask, prob, out, size, executor);
      },
      aclnnDropoutDoMask);
}

bool mentions(const std::string& text, std::initializer_list<const char*> parts) {
  for (const char* part : parts) {
    if (text.find(part) == std::string::npos) return false;
  }
  return true;
}

class DropoutDoMaskChecks : public ::testing::Test {
 protected:
  std::vector<float> input = std::vector<float>(256, 1.0f), output = std::vector<float>(256, 7.0f);
  std::vector<uint8_t> maskBytes = std::vector<uint8_t>(64, 0xFF);
  TensorPtr self = makeView(input.data(), ACL_FLOAT, {2, 50});
  TensorPtr mask = makeView(maskBytes.data(), ACL_UINT8, {16});
  TensorPtr out = makeView(output.data(), ACL_FLOAT, {2, 50});
};

TEST_F(DropoutDoMaskChecks, ValidCallSucceedsWithoutWorkspace) {
  const PlannedCall call = doMask(self.get(), mask.get(), 0.5, out.get());
  EXPECT_EQ(call.status, ACLNN_SUCCESS) << call.message;
  EXPECT_EQ(call.workspaceSize, 0u);
  EXPECT_EQ(output[0], 2.0f);
  EXPECT_EQ(output[100], 7.0f);
}

TEST_F(DropoutDoMaskChecks, NullArgumentsGive161001NamingTheArgument) {
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  const aclTensor* s = self.get();
  const aclTensor* m = mask.get();
  aclTensor* o = out.get();
  struct Case {
    const char* name;
    const aclTensor* self;
    const aclTensor* mask;
    aclTensor* out;
    uint64_t* size;
    aclOpExecutor** executor;
  } cases[] = {
      {"self", nullptr, nullptr, nullptr, nullptr, nullptr},
      {"mask", s, nullptr, o, &size, &executor},
      {"out", s, m, nullptr, &size, &executor},
      {"workspaceSize", s, m, o, nullptr, &executor},
      {"executor", s, m, o, &size, nullptr},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(aclnnDropoutDoMaskGetWorkspaceSize(c.self, c.mask, 0.5, c.out, c.size, c.executor),
              ACLNN_ERR_PARAM_NULLPTR)
        << c.name;
    const std::string message = recentError();
    const std::string quoted = std::string("'") + c.name + "'";
    EXPECT_TRUE(mentions(message, {"aclnnDropoutDoMask", quoted.c_str(), "nullptr", "161001"})) << message;
  }
}

TEST_F(DropoutDoMaskChecks, EmptySelfIsCheckedThenComputesNothing) {
  // Upstream succeeds at once for an empty self, whatever the other arguments; gradkit checks dtypes, prob, rank
  // and out's shape first (a fuzzing finding: NaN probabilities "succeeded"), then needs no mask.
  std::vector<int32_t> ints(8);
  auto emptyInt = makeView(ints.data(), ACL_INT32, {0, 3});
  auto badMask = makeView(ints.data(), ACL_INT32, {5});
  auto outOther = makeView(output.data(), ACL_FLOAT, {7});
  PlannedCall call = doMask(emptyInt.get(), badMask.get(), 7.0, outOther.get());
  EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID);
  auto emptySelf = makeView(output.data(), ACL_FLOAT, {0, 3});
  auto emptyOut = makeView(output.data() + 4, ACL_FLOAT, {0, 3});
  call = doMask(emptySelf.get(), mask.get(), std::nan(""), emptyOut.get());
  EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(call.message.find("'prob'"), std::string::npos) << call.message;
  auto shortMask = makeView(maskBytes.data(), ACL_UINT8, {3});  // any size: nothing is read
  call = doMask(emptySelf.get(), shortMask.get(), 0.5, emptyOut.get());
  EXPECT_EQ(call.status, ACLNN_SUCCESS) << call.message;
  EXPECT_EQ(call.workspaceSize, 0u);
  EXPECT_EQ(output[0], 7.0f);
}

TEST_F(DropoutDoMaskChecks, EmptyMaskForANonEmptySelfIsRejectedNotSkipped) {
  // Upstream returns at once for an empty mask, leaving out unwritten and every later rule unchecked (a reliability
  // finding: a 1000-element self with an empty mask, and an INT64 out with prob NaN, "succeeded"). gradkit checks on.
  auto emptyMask = makeView(maskBytes.data(), ACL_UINT8, {0});
  const PlannedCall call = doMask(self.get(), emptyMask.get(), 0.5, out.get());
  EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(call.message.find("'mask'"), std::string::npos) << call.message;
  EXPECT_TRUE(std::all_of(output.begin(), output.end(), [](float v) { return v == 7.0f; }));
  auto emptyMaskInt = makeView(maskBytes.data(), ACL_INT32, {2, 0});  // a wrong dtype is now named
  const PlannedCall wrongDtype = doMask(self.get(), emptyMaskInt.get(), -1.0, out.get());
  EXPECT_EQ(wrongDtype.status, ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(wrongDtype.message.find("'mask'"), std::string::npos) << wrongDtype.message;
}

TEST_F(DropoutDoMaskChecks, OutputsOverlappingAnOperandAreRejected) {
  // out shifted by one element over self: the result would depend on the thread count.
  std::vector<float> shared(1001, 1.0f);
  auto selfShared = makeView(shared.data(), ACL_FLOAT, {1000}, {1}, 1, 1001);
  auto outShared = makeView(shared.data(), ACL_FLOAT, {1000}, {1}, 0, 1001);
  std::vector<uint8_t> keepAll(128, 0xFF);
  auto maskView = makeView(keepAll.data(), ACL_UINT8, {128});
  PlannedCall call = doMask(selfShared.get(), maskView.get(), 0.5, outShared.get());
  EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(call.message.find("overlapping self"), std::string::npos) << call.message;
  auto inPlace = makeView(shared.data(), ACL_FLOAT, {1000}, {1}, 1, 1001);
  call = doMask(selfShared.get(), maskView.get(), 0.5, inPlace.get());
  EXPECT_EQ(call.status, ACLNN_SUCCESS) << "exactly the same view: in place. " << call.message;
}

TEST_F(DropoutDoMaskChecks, DtypesOutsideTheListGive161002NamingTheArgument) {
  std::vector<double> wide(256);
  std::vector<int32_t> ints(256);
  auto selfDouble = makeView(wide.data(), ACL_DOUBLE, {2, 50});
  auto selfInt = makeView(ints.data(), ACL_INT32, {2, 50});
  auto maskInt8 = makeView(maskBytes.data(), ACL_INT8, {16});
  auto maskBool = makeView(maskBytes.data(), ACL_BOOL, {16});
  auto outDouble = makeView(wide.data(), ACL_DOUBLE, {2, 50});
  auto outInt = makeView(ints.data(), ACL_INT32, {2, 50});
  struct Case {
    const aclTensor* self;
    const aclTensor* mask;
    aclTensor* out;
    const char* argument;
    const char* given;
  } cases[] = {
      {selfDouble.get(), mask.get(), out.get(), "self", "DOUBLE"},
      {selfInt.get(), mask.get(), out.get(), "self", "INT32"},
      {self.get(), maskInt8.get(), out.get(), "mask", "INT8"},
      {self.get(), maskBool.get(), out.get(), "mask", "BOOL"},
      {self.get(), mask.get(), outDouble.get(), "out", "DOUBLE"},
      {self.get(), mask.get(), outInt.get(), "out", "INT32"},
  };
  for (const Case& c : cases) {
    const PlannedCall call = doMask(c.self, c.mask, 0.5, c.out);
    EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID) << c.argument << " " << c.given;
    EXPECT_TRUE(mentions(call.message, {"'", c.argument, c.given, "161002"})) << call.message;
  }
  EXPECT_TRUE(std::all_of(output.begin(), output.end(), [](float v) { return v == 7.0f; }));
}

TEST_F(DropoutDoMaskChecks, ProbOutsideZeroOneOrNanGives161002) {
  for (double prob : {-1e-300, -0.5, 1.0000000000000002, 2.0, std::numeric_limits<double>::infinity(),
                      std::numeric_limits<double>::quiet_NaN()}) {
    const PlannedCall call = doMask(self.get(), mask.get(), prob, out.get());
    EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID) << prob;
    EXPECT_TRUE(mentions(call.message, {"'prob'", "[0, 1]", "161002"})) << call.message;
  }
  for (double prob : {0.0, -0.0, DBL_EPSILON, 0.5, 1.0 - DBL_EPSILON, 1.0}) {
    EXPECT_EQ(doMask(self.get(), mask.get(), prob, out.get()).status, ACLNN_SUCCESS) << prob;
  }
}

TEST_F(DropoutDoMaskChecks, RankShapeAndMinimumMaskSizeGive161002) {
  std::vector<float> big(1024);
  auto rank9 = makeView(big.data(), ACL_FLOAT, {1, 1, 1, 1, 1, 1, 1, 1, 2});
  auto rank9Out = makeView(output.data(), ACL_FLOAT, {1, 1, 1, 1, 1, 1, 1, 1, 2});
  PlannedCall call = doMask(rank9.get(), mask.get(), 0.5, rank9Out.get());
  EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(call.message, {"'self'", "at most 8 dims"})) << call.message;

  auto otherShape = makeView(output.data(), ACL_FLOAT, {100});
  call = doMask(self.get(), mask.get(), 0.5, otherShape.get());
  EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(call.message, {"'out'", "[2, 50]", "[100]"})) << call.message;

  // n = 100 needs at least 16 mask elements: fewer fail, more pass (unlike DropoutBackward and V3Grad).
  for (int64_t small : {1, 8, 15}) {
    auto shortMask = makeView(maskBytes.data(), ACL_UINT8, {small});
    call = doMask(self.get(), shortMask.get(), 0.5, out.get());
    EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID) << small;
    EXPECT_TRUE(mentions(call.message, {"'mask'", "at least 16 elements"})) << call.message;
  }
  for (int64_t large : {16, 17, 32, 64}) {
    auto longMask = makeView(maskBytes.data(), ACL_UINT8, {large});
    EXPECT_EQ(doMask(self.get(), longMask.get(), 0.5, out.get()).status, ACLNN_SUCCESS) << large;
  }
  auto mask2x8 = makeView(maskBytes.data(), ACL_UINT8, {2, 8});
  EXPECT_EQ(doMask(self.get(), mask2x8.get(), 0.5, out.get()).status, ACLNN_SUCCESS);
}

TEST_F(DropoutDoMaskChecks, EveryProfileHasTheOperator) {
  for (const char* soc : {"Ascend910B", "Ascend910_93", "Ascend950"}) {
    ScopedEnv profile("GRADKIT_SOC", soc);
    EXPECT_EQ(doMask(self.get(), mask.get(), 0.5, out.get()).status, ACLNN_SUCCESS) << soc;
  }
}

}  // namespace
}  // namespace gradkit::test
