// aclnnDropoutV3GradGetWorkspaceSize: every rule of spec dropout_threshold.md 1.5 in upstream's order (code and
// message), the profile gate, the exact mask size, and the accepted edge cases (empty, any scale, dtype casts).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "aclnnop/aclnn_dropout_v3_grad.h"
#include "ops/masked_dropout_test_util.h"

namespace gradkit::test {
namespace {

PlannedCall v3Grad(const aclTensor* gradY, const aclTensor* mask, double scale, aclTensor* gradX) {
  return planAndRun(
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnDropoutV3GradGetWorkspaceSize(gradY, mask, scale, gradX, size, executor);
      },
      aclnnDropoutV3Grad);
}

bool mentions(const std::string& text, std::initializer_list<const char*> parts) {
  for (const char* part : parts) {
    if (text.find(part) == std::string::npos) return false;
  }
  return true;
}

class DropoutV3GradChecks : public ::testing::Test {
 protected:
  std::vector<float> grad = std::vector<float>(256, 1.0f), out = std::vector<float>(256, 7.0f);
  std::vector<uint8_t> maskBytes = std::vector<uint8_t>(64, 0xFF);
  TensorPtr gradY = makeView(grad.data(), ACL_FLOAT, {2, 50});
  TensorPtr mask = makeView(maskBytes.data(), ACL_UINT8, {16});
  TensorPtr gradX = makeView(out.data(), ACL_FLOAT, {2, 50});
};

TEST_F(DropoutV3GradChecks, ValidCallSucceedsWithoutWorkspace) {
  const PlannedCall call = v3Grad(gradY.get(), mask.get(), 2.0, gradX.get());
  EXPECT_EQ(call.status, ACLNN_SUCCESS) << call.message;
  EXPECT_EQ(call.workspaceSize, 0u);
  EXPECT_EQ(out[0], 2.0f);
  EXPECT_EQ(out[100], 7.0f);  // beyond the view
}

TEST_F(DropoutV3GradChecks, OtherProfilesReject161002BeforeAnyNullCheck) {
  for (const char* soc : {"Ascend910B", "Ascend910_93"}) {
    ScopedEnv profile("GRADKIT_SOC", soc);
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    EXPECT_EQ(aclnnDropoutV3GradGetWorkspaceSize(nullptr, nullptr, 2.0, nullptr, nullptr, nullptr),
              ACLNN_ERR_PARAM_INVALID);
    EXPECT_TRUE(mentions(recentError(), {"aclnnDropoutV3Grad", "unavailable", soc, "Ascend950"}));
    EXPECT_EQ(aclnnDropoutV3GradGetWorkspaceSize(gradY.get(), mask.get(), 2.0, gradX.get(), &size, &executor),
              ACLNN_ERR_PARAM_INVALID);
    EXPECT_EQ(executor, nullptr);
    recentError();
  }
  ScopedEnv profile("GRADKIT_SOC", "Ascend950");
  EXPECT_EQ(v3Grad(gradY.get(), mask.get(), 2.0, gradX.get()).status, ACLNN_SUCCESS);
}

TEST_F(DropoutV3GradChecks, DisabledByEnvironmentRejects161002BeforeAnyNullCheck) {
  {
    ScopedEnv disabled("GRADKIT_DISABLE_OPS", "aclnnSomethingElse, aclnnDropoutV3Grad");
    EXPECT_EQ(aclnnDropoutV3GradGetWorkspaceSize(nullptr, nullptr, 2.0, nullptr, nullptr, nullptr),
              ACLNN_ERR_PARAM_INVALID);
    EXPECT_TRUE(mentions(recentError(), {"aclnnDropoutV3Grad", "unavailable", "GRADKIT_DISABLE_OPS"}));
    EXPECT_EQ(v3Grad(gradY.get(), mask.get(), 2.0, gradX.get()).status, ACLNN_ERR_PARAM_INVALID);
  }
  ScopedEnv others("GRADKIT_DISABLE_OPS", "aclnnDropoutV3GradX,aclnnDropoutDoMask");
  EXPECT_EQ(v3Grad(gradY.get(), mask.get(), 2.0, gradX.get()).status, ACLNN_SUCCESS);
}

TEST_F(DropoutV3GradChecks, NullArgumentsGive161001NamingTheArgument) {
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  const aclTensor* g = gradY.get();
  const aclTensor* m = mask.get();
  aclTensor* o = gradX.get();
  struct Case {
    const char* name;
    const aclTensor* gradY;
    const aclTensor* mask;
    aclTensor* gradX;
    uint64_t* size;
    aclOpExecutor** executor;
  } cases[] = {
      {"gradY", nullptr, nullptr, nullptr, nullptr, nullptr},  // the first null argument is the one named
      {"mask", g, nullptr, o, &size, &executor},
      {"gradX", g, m, nullptr, &size, &executor},
      {"workspaceSize", g, m, o, nullptr, &executor},  // upstream does not check these two; gradkit does
      {"executor", g, m, o, &size, nullptr},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(aclnnDropoutV3GradGetWorkspaceSize(c.gradY, c.mask, 2.0, c.gradX, c.size, c.executor),
              ACLNN_ERR_PARAM_NULLPTR)
        << c.name;
    const std::string message = recentError();
    const std::string quoted = std::string("'") + c.name + "'";
    EXPECT_TRUE(mentions(message, {"aclnnDropoutV3Grad", quoted.c_str(), "nullptr", "161001"})) << message;
  }
}

TEST_F(DropoutV3GradChecks, DtypesOutsideTheListGive161002NamingTheArgument) {
  std::vector<double> wide(256);
  std::vector<int32_t> ints(256);
  auto gradDouble = makeView(wide.data(), ACL_DOUBLE, {2, 50});
  auto gradInt = makeView(ints.data(), ACL_INT32, {2, 50});
  auto maskInt8 = makeView(maskBytes.data(), ACL_INT8, {16});
  auto maskBool = makeView(maskBytes.data(), ACL_BOOL, {16});
  auto outDouble = makeView(wide.data(), ACL_DOUBLE, {2, 50});
  auto outInt = makeView(ints.data(), ACL_INT32, {2, 50});
  struct Case {
    const aclTensor* gradY;
    const aclTensor* mask;
    aclTensor* gradX;
    const char* argument;
    const char* given;
  } cases[] = {
      {gradDouble.get(), mask.get(), gradX.get(), "gradY", "DOUBLE"},
      {gradInt.get(), mask.get(), gradX.get(), "gradY", "INT32"},
      {gradY.get(), maskInt8.get(), gradX.get(), "mask", "INT8"},
      {gradY.get(), maskBool.get(), gradX.get(), "mask", "BOOL"},
      {gradY.get(), mask.get(), outDouble.get(), "gradX", "DOUBLE"},
      {gradY.get(), mask.get(), outInt.get(), "gradX", "INT32"},
      {gradInt.get(), maskBool.get(), outInt.get(), "gradY", "INT32"},  // gradY is checked first
  };
  for (const Case& c : cases) {
    const PlannedCall call = v3Grad(c.gradY, c.mask, 2.0, c.gradX);
    EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID) << c.argument << " " << c.given;
    EXPECT_TRUE(mentions(call.message, {"'", c.argument, c.given, "161002"})) << call.message;
  }
}

TEST_F(DropoutV3GradChecks, RankShapeAndExactMaskSizeGive161002) {
  std::vector<float> big(1024);
  auto rank9 = makeView(big.data(), ACL_FLOAT, {1, 1, 1, 1, 1, 1, 1, 1, 2});
  auto rank9Out = makeView(out.data(), ACL_FLOAT, {1, 1, 1, 1, 1, 1, 1, 1, 2});
  PlannedCall call = v3Grad(rank9.get(), mask.get(), 2.0, rank9Out.get());
  EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(call.message, {"'gradY'", "at most 8 dims", "9 dims"})) << call.message;

  auto otherShape = makeView(out.data(), ACL_FLOAT, {100});
  call = v3Grad(gradY.get(), mask.get(), 2.0, otherShape.get());
  EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(call.message, {"'gradX'", "[2, 50]", "[100]"})) << call.message;

  // n = 100 needs exactly 16 mask elements; n = 129 needs 32; the mask's shape is free.
  for (int64_t wrong : {0, 1, 15, 17, 32}) {
    auto badMask = makeView(maskBytes.data(), ACL_UINT8, {wrong});
    call = v3Grad(gradY.get(), badMask.get(), 2.0, gradX.get());
    EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID) << wrong;
    EXPECT_TRUE(mentions(call.message, {"'mask'", "exactly 16 elements", std::to_string(wrong).c_str()}))
        << call.message;
  }
  auto grad129 = makeView(grad.data(), ACL_FLOAT, {129});
  auto out129 = makeView(out.data(), ACL_FLOAT, {129});
  auto mask16 = makeView(maskBytes.data(), ACL_UINT8, {16});
  auto mask2x16 = makeView(maskBytes.data(), ACL_UINT8, {2, 16});
  EXPECT_EQ(v3Grad(grad129.get(), mask16.get(), 2.0, out129.get()).status, ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(v3Grad(grad129.get(), mask2x16.get(), 2.0, out129.get()).status, ACLNN_SUCCESS);
  auto mask4x4 = makeView(maskBytes.data(), ACL_UINT8, {4, 4});
  EXPECT_EQ(v3Grad(gradY.get(), mask4x4.get(), 2.0, gradX.get()).status, ACLNN_SUCCESS);
}

TEST_F(DropoutV3GradChecks, EmptyGradYSucceedsAndWritesNothing) {
  auto empty = makeView(grad.data(), ACL_FLOAT, {3, 0, 2});
  auto emptyOut = makeView(out.data(), ACL_FLOAT, {3, 0, 2});
  auto emptyMask = makeView(maskBytes.data(), ACL_UINT8, {0});
  const PlannedCall call = v3Grad(empty.get(), emptyMask.get(), 2.0, emptyOut.get());
  EXPECT_EQ(call.status, ACLNN_SUCCESS) << call.message;
  EXPECT_EQ(call.workspaceSize, 0u);
  EXPECT_EQ(out[0], 7.0f);
  // The mask rule comes first: an empty gradY still needs an empty mask.
  EXPECT_EQ(v3Grad(empty.get(), mask.get(), 2.0, emptyOut.get()).status, ACLNN_ERR_PARAM_INVALID);
}

TEST_F(DropoutV3GradChecks, AnyScaleIsAccepted) {
  for (double scale : {0.0, -0.0, 0.5, -3.0, 1.0, std::numeric_limits<double>::infinity(),
                       -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN(), 1e300}) {
    EXPECT_EQ(v3Grad(gradY.get(), mask.get(), scale, gradX.get()).status, ACLNN_SUCCESS) << scale;
  }
}

TEST_F(DropoutV3GradChecks, OutputDtypeMayDifferFromGradY) {
  std::vector<uint16_t> half(256, 0x3c00);  // fp16 1.0
  auto gradHalf = makeView(half.data(), ACL_FLOAT16, {2, 50});
  const PlannedCall call = v3Grad(gradHalf.get(), mask.get(), 3.0, gradX.get());
  EXPECT_EQ(call.status, ACLNN_SUCCESS) << call.message;
  EXPECT_EQ(out[0], 3.0f);
  std::vector<uint16_t> bf(256);
  auto outBf16 = makeView(bf.data(), ACL_BF16, {2, 50});
  EXPECT_EQ(v3Grad(gradY.get(), mask.get(), 3.0, outBf16.get()).status, ACLNN_SUCCESS);
  EXPECT_EQ(bf[0], 0x4040);  // bf16 3.0
}

}  // namespace
}  // namespace gradkit::test
