// aclnnDropoutBackwardGetWorkspaceSize (spec dropout_threshold.md 1.4.2): null pointers, empty input, the scale
// rule through p = 1 - 1/scale (0 or >= 1; NaN rejected), and the exact mask size.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

#include "aclnnop/aclnn_dropout_backward.h"
#include "ops/masked_dropout_test_util.h"

namespace gradkit::test {
namespace {

PlannedCall dropoutBackward(const aclTensor* grad, const aclTensor* mask, double scale, aclTensor* out) {
  return planAndRun(
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnDropoutBackwardGetWorkspaceSize(grad, mask, scale, out, size, executor);
      },
      aclnnDropoutBackward);
}

bool mentions(const std::string& text, std::initializer_list<const char*> parts) {
  for (const char* part : parts) {
    if (text.find(part) == std::string::npos) return false;
  }
  return true;
}

class DropoutBackwardChecks : public ::testing::Test {
 protected:
  std::vector<float> input = std::vector<float>(256, 1.0f), output = std::vector<float>(256, 7.0f);
  std::vector<uint8_t> maskBytes = std::vector<uint8_t>(64, 0xFF);
  TensorPtr grad = makeView(input.data(), ACL_FLOAT, {2, 50});
  TensorPtr mask = makeView(maskBytes.data(), ACL_UINT8, {16});
  TensorPtr out = makeView(output.data(), ACL_FLOAT, {2, 50});
};

TEST_F(DropoutBackwardChecks, NullArgumentsGive161001NamingTheArgument) {
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  const aclTensor* g = grad.get();
  const aclTensor* m = mask.get();
  aclTensor* o = out.get();
  struct Case {
    const char* name;
    const aclTensor* grad;
    const aclTensor* mask;
    aclTensor* out;
    uint64_t* size;
    aclOpExecutor** executor;
  } cases[] = {
      {"gradOutput", nullptr, nullptr, nullptr, nullptr, nullptr},
      {"mask", g, nullptr, o, &size, &executor},
      {"out", g, m, nullptr, &size, &executor},
      {"workspaceSize", g, m, o, nullptr, &executor},
      {"executor", g, m, o, &size, nullptr},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(aclnnDropoutBackwardGetWorkspaceSize(c.grad, c.mask, 2.0, c.out, c.size, c.executor),
              ACLNN_ERR_PARAM_NULLPTR)
        << c.name;
    const std::string message = recentError();
    const std::string quoted = std::string("'") + c.name + "'";
    EXPECT_TRUE(mentions(message, {"aclnnDropoutBackward", quoted.c_str(), "nullptr", "161001"})) << message;
  }
}

TEST_F(DropoutBackwardChecks, ScaleMustBeZeroOrAtLeastOne) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // (0, 1), negative, just below 1 (p = -2^-52), 2 * DBL_EPSILON (p hugely negative), NaN (a gradkit decision).
  for (double scale : {0.5, 1.0 - 0x1p-53, -1.0, -0x1p-40, 2 * DBL_EPSILON, -1e15, nan}) {
    const PlannedCall call = dropoutBackward(grad.get(), mask.get(), scale, out.get());
    EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID) << scale;
    EXPECT_TRUE(mentions(call.message, {"aclnnDropoutBackward", "'scale'", "0 or >= 1", "161002"})) << call.message;
  }
  EXPECT_TRUE(std::all_of(output.begin(), output.end(), [](float v) { return v == 7.0f; }));
  // 0, -0 and |scale| <= DBL_EPSILON give p = 1; 1 and 1 + 2^-52 give p <= DBL_EPSILON; 2^54, +Inf, and even -Inf
  // or -1e300 (1 - 1/scale rounds to 1) give p = 1.
  for (double scale : {0.0, -0.0, DBL_EPSILON, -DBL_EPSILON, 1e-300, 1.0, 1.0 + DBL_EPSILON, 1.25, 0x1p54,
                       std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(), -1e300}) {
    EXPECT_EQ(dropoutBackward(grad.get(), mask.get(), scale, out.get()).status, ACLNN_SUCCESS) << scale;
  }
}

TEST_F(DropoutBackwardChecks, MaskSizeMustBeExact) {
  for (int64_t wrong : {0, 15, 17, 32}) {
    auto badMask = makeView(maskBytes.data(), ACL_UINT8, {wrong});
    const PlannedCall call = dropoutBackward(grad.get(), badMask.get(), 2.0, out.get());
    EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID) << wrong;
    EXPECT_TRUE(mentions(call.message, {"'mask'", "exactly 16 elements"})) << call.message;
  }
  auto mask4x4 = makeView(maskBytes.data(), ACL_UINT8, {4, 4});
  EXPECT_EQ(dropoutBackward(grad.get(), mask4x4.get(), 2.0, out.get()).status, ACLNN_SUCCESS);
}

TEST_F(DropoutBackwardChecks, DtypesRankAndShapeGive161002) {
  std::vector<int32_t> ints(256);
  auto gradInt = makeView(ints.data(), ACL_INT32, {2, 50});
  auto maskInt8 = makeView(maskBytes.data(), ACL_INT8, {16});
  auto outInt = makeView(ints.data(), ACL_INT32, {2, 50});
  EXPECT_TRUE(mentions(dropoutBackward(gradInt.get(), mask.get(), 2.0, out.get()).message, {"'gradOutput'", "INT32"}));
  EXPECT_TRUE(mentions(dropoutBackward(grad.get(), maskInt8.get(), 2.0, out.get()).message, {"'mask'", "INT8"}));
  EXPECT_TRUE(mentions(dropoutBackward(grad.get(), mask.get(), 2.0, outInt.get()).message, {"'out'", "INT32"}));
  auto otherShape = makeView(output.data(), ACL_FLOAT, {50, 2});
  const PlannedCall call = dropoutBackward(grad.get(), mask.get(), 2.0, otherShape.get());
  EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(call.message, {"'out'", "[2, 50]", "[50, 2]"})) << call.message;
  std::vector<float> big(16);
  auto rank9 = makeView(big.data(), ACL_FLOAT, {1, 1, 1, 1, 1, 1, 1, 1, 2});
  auto rank9Out = makeView(output.data(), ACL_FLOAT, {1, 1, 1, 1, 1, 1, 1, 1, 2});
  EXPECT_EQ(dropoutBackward(rank9.get(), mask.get(), 2.0, rank9Out.get()).status, ACLNN_ERR_PARAM_INVALID);
}

TEST_F(DropoutBackwardChecks, EmptyGradIsCheckedThenComputesNothing) {
  // Upstream succeeds at once for an empty gradOutput, whatever the other arguments; gradkit checks dtypes, scale,
  // rank and out's shape first (a fuzzing finding: NaN scales "succeeded"), then needs no mask.
  auto empty = makeView(input.data(), ACL_FLOAT, {0});
  auto emptyOut = makeView(output.data(), ACL_FLOAT, {0});
  PlannedCall call = dropoutBackward(empty.get(), mask.get(), 0.5, emptyOut.get());
  EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(call.message.find("'scale'"), std::string::npos) << call.message;
  call = dropoutBackward(empty.get(), mask.get(), 2.0, emptyOut.get());  // mask of any size: nothing is read
  EXPECT_EQ(call.status, ACLNN_SUCCESS) << call.message;
  EXPECT_EQ(call.workspaceSize, 0u);
  EXPECT_EQ(output[0], 7.0f);
}

}  // namespace
}  // namespace gradkit::test
