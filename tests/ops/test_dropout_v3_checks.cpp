// aclnnDropoutV3GetWorkspaceSize: every rejection (spec dropout_threshold.md 1.3 plus the early checks of
// DECISIONS.md), with its code, the argument's name in the message, the order, and no write on rejection; the
// accepted edge cases (empty, 0-d, 8-d, offsets that are multiples of 4, p at both ends).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "aclnnop/aclnn_dropout_v3.h"
#include "ops/op_test_util.h"

namespace gradkit::test {
namespace {

struct Call {
  aclnnStatus status = -1;
  uint64_t workspaceSize = 0;
  std::string message;
};

Call plan(const aclTensor* input, double p, int64_t offset, aclTensor* out, aclTensor* mask,
          const aclTensor* noiseShape = nullptr) {
  Call call;
  aclOpExecutor* executor = nullptr;
  call.status =
      aclnnDropoutV3GetWorkspaceSize(input, noiseShape, p, 7, offset, out, mask, &call.workspaceSize, &executor);
  call.message = recentError();
  if (call.status == ACLNN_SUCCESS) {
    std::vector<unsigned char> workspace(call.workspaceSize);
    EXPECT_EQ(aclnnDropoutV3(workspace.data(), call.workspaceSize, executor, nullptr), ACLNN_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  }
  return call;
}

void expectRejected(const Call& call, aclnnStatus status, const std::vector<std::string>& fragments) {
  EXPECT_EQ(call.status, status) << call.message;
  for (const std::string& fragment : fragments) {
    EXPECT_NE(call.message.find(fragment), std::string::npos) << "'" << fragment << "' not in: " << call.message;
  }
}

class DropoutV3Checks : public ::testing::Test {
 protected:
  std::vector<float> x = std::vector<float>(300, 1.5f), y = std::vector<float>(300, 9.0f);
  std::vector<uint8_t> bits = std::vector<uint8_t>(64, 0x5C);

  // Rejected calls write neither out nor the mask.
  void TearDown() override {
    if (expectUntouched) {
      EXPECT_EQ(y, std::vector<float>(300, 9.0f));
      EXPECT_EQ(bits, std::vector<uint8_t>(64, 0x5C));
    }
  }
  bool expectUntouched = true;
};

TEST_F(DropoutV3Checks, NullArgumentsGive161001NamingTheArgument) {
  auto input = makeView(x.data(), ACL_FLOAT, {4, 5});
  auto out = makeView(y.data(), ACL_FLOAT, {4, 5});
  auto mask = makeView(bits.data(), ACL_UINT8, {16});
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  struct Case {
    const char* name;
    aclnnStatus status;
  } cases[] = {
      {"input", aclnnDropoutV3GetWorkspaceSize(nullptr, nullptr, 0.5, 1, 0, out.get(), mask.get(), &size, &executor)},
      {"out", aclnnDropoutV3GetWorkspaceSize(input.get(), nullptr, 0.5, 1, 0, nullptr, mask.get(), &size, &executor)},
      {"maskOut",
       aclnnDropoutV3GetWorkspaceSize(input.get(), nullptr, 0.5, 1, 0, out.get(), nullptr, &size, &executor)},
      {"workspaceSize",
       aclnnDropoutV3GetWorkspaceSize(input.get(), nullptr, 0.5, 1, 0, out.get(), mask.get(), nullptr, &executor)},
      {"executor",
       aclnnDropoutV3GetWorkspaceSize(input.get(), nullptr, 0.5, 1, 0, out.get(), mask.get(), &size, nullptr)},
  };
  const std::string messages = recentError();
  for (const Case& item : cases) {
    EXPECT_EQ(item.status, ACLNN_ERR_PARAM_NULLPTR) << item.name;
    EXPECT_NE(messages.find(std::string("aclnnDropoutV3: argument '") + item.name + "'"), std::string::npos)
        << messages;
  }
  // Nulls come before every other rule: a null out with a bad p and a noise shape is still 161001.
  EXPECT_EQ(aclnnDropoutV3GetWorkspaceSize(input.get(), input.get(), 7.0, 1, 3, nullptr, mask.get(), &size, &executor),
            ACLNN_ERR_PARAM_NULLPTR);
  recentError();
}

TEST_F(DropoutV3Checks, NoiseShapeMustBeNull) {
  auto input = makeView(x.data(), ACL_FLOAT, {20});
  auto out = makeView(y.data(), ACL_FLOAT, {20});
  auto mask = makeView(bits.data(), ACL_UINT8, {16});
  auto noise = makeView(x.data(), ACL_INT64, {1});
  expectRejected(plan(input.get(), 0.5, 0, out.get(), mask.get(), noise.get()), ACLNN_ERR_PARAM_INVALID,
                 {"'optionalNoiseShape'", "nullptr"});
}

TEST_F(DropoutV3Checks, DtypeRules) {
  auto mask = makeView(bits.data(), ACL_UINT8, {16});
  for (aclDataType dtype : {ACL_DOUBLE, ACL_INT32, ACL_INT8, ACL_BOOL}) {
    auto input = makeView(x.data(), dtype, {20});
    auto out = makeView(y.data(), dtype, {20});
    expectRejected(plan(input.get(), 0.5, 0, out.get(), mask.get()), ACLNN_ERR_PARAM_INVALID, {"'input'", "BFLOAT16"});
  }
  auto input = makeView(x.data(), ACL_FLOAT, {20});
  auto out16 = makeView(y.data(), ACL_FLOAT16, {20});
  expectRejected(plan(input.get(), 0.5, 0, out16.get(), mask.get()), ACLNN_ERR_PARAM_INVALID,
                 {"'out'", "FLOAT16", "expected dtype FLOAT "});
  auto input16 = makeView(x.data(), ACL_BF16, {20});
  auto out32 = makeView(y.data(), ACL_FLOAT, {20});
  expectRejected(plan(input16.get(), 0.5, 0, out32.get(), mask.get()), ACLNN_ERR_PARAM_INVALID, {"'out'"});
  auto out = makeView(y.data(), ACL_FLOAT, {20});
  for (aclDataType dtype : {ACL_INT8, ACL_BOOL, ACL_FLOAT}) {
    auto badMask = makeView(bits.data(), dtype, {16});
    expectRejected(plan(input.get(), 0.5, 0, out.get(), badMask.get()), ACLNN_ERR_PARAM_INVALID,
                   {"'maskOut'", "UINT8"});
  }
}

TEST_F(DropoutV3Checks, ProbabilityOutsideZeroOneOrNanGives161002) {
  auto input = makeView(x.data(), ACL_FLOAT, {20});
  auto out = makeView(y.data(), ACL_FLOAT, {20});
  auto mask = makeView(bits.data(), ACL_UINT8, {16});
  expectRejected(plan(input.get(), -0.25, 0, out.get(), mask.get()), ACLNN_ERR_PARAM_INVALID, {"'p'", "-0.25"});
  expectRejected(plan(input.get(), 1.5, 0, out.get(), mask.get()), ACLNN_ERR_PARAM_INVALID, {"'p'", "1.5"});
  expectRejected(plan(input.get(), NAN, 0, out.get(), mask.get()), ACLNN_ERR_PARAM_INVALID, {"'p'", "nan"});
  expectRejected(plan(input.get(), -INFINITY, 0, out.get(), mask.get()), ACLNN_ERR_PARAM_INVALID, {"'p'", "-inf"});
}

TEST_F(DropoutV3Checks, OffsetMustBeAMultipleOfFour) {
  auto input = makeView(x.data(), ACL_FLOAT, {20});
  auto out = makeView(y.data(), ACL_FLOAT, {20});
  auto mask = makeView(bits.data(), ACL_UINT8, {16});
  for (int64_t offset : {int64_t{1}, int64_t{2}, int64_t{3}, int64_t{6}, int64_t{-2}, INT64_MAX}) {
    expectRejected(plan(input.get(), 0.5, offset, out.get(), mask.get()), ACLNN_ERR_PARAM_INVALID,
                   {"'offset'", "multiple of 4", std::to_string(offset)});
  }
}

TEST_F(DropoutV3Checks, RankAndShapeRules) {
  auto mask = makeView(bits.data(), ACL_UINT8, {16});
  const std::vector<int64_t> nine(9, 1);
  auto input9 = makeView(x.data(), ACL_FLOAT, nine);
  auto out9 = makeView(y.data(), ACL_FLOAT, nine);
  expectRejected(plan(input9.get(), 0.5, 0, out9.get(), mask.get()), ACLNN_ERR_PARAM_INVALID,
                 {"'input'", "at most 8 dims"});
  auto input = makeView(x.data(), ACL_FLOAT, {3, 2});
  auto out = makeView(y.data(), ACL_FLOAT, {2, 3});
  expectRejected(plan(input.get(), 0.5, 0, out.get(), mask.get()), ACLNN_ERR_PARAM_INVALID,
                 {"'out'", "[3, 2]", "[2, 3]"});
}

TEST_F(DropoutV3Checks, MaskSizeMustEqualTheMaskBytes) {
  auto input = makeView(x.data(), ACL_FLOAT, {129});
  auto out = makeView(y.data(), ACL_FLOAT, {129});
  for (int64_t bytes : {16, 31, 33, 48}) {
    auto mask = makeView(bits.data(), ACL_UINT8, {bytes});
    expectRejected(plan(input.get(), 0.5, 0, out.get(), mask.get()), ACLNN_ERR_PARAM_INVALID,
                   {"'maskOut'", "expected 32 elements", "given " + std::to_string(bytes)});
  }
  auto empty = makeView(x.data(), ACL_FLOAT, {0, 3});
  auto emptyOut = makeView(y.data(), ACL_FLOAT, {0, 3});
  auto mask16 = makeView(bits.data(), ACL_UINT8, {16});
  expectRejected(plan(empty.get(), 0.5, 0, emptyOut.get(), mask16.get()), ACLNN_ERR_PARAM_INVALID,
                 {"'maskOut'", "expected 0 elements"});
}

TEST_F(DropoutV3Checks, OrderNoiseShapeThenDtypesThenProbabilityThenOffsetThenShapes) {
  auto input = makeView(x.data(), ACL_INT32, {3, 2});
  auto out = makeView(y.data(), ACL_FLOAT, {2, 3});
  auto badMask = makeView(bits.data(), ACL_UINT8, {7});
  expectRejected(plan(input.get(), 2.0, 1, out.get(), badMask.get(), input.get()), ACLNN_ERR_PARAM_INVALID,
                 {"'optionalNoiseShape'"});
  expectRejected(plan(input.get(), 2.0, 1, out.get(), badMask.get()), ACLNN_ERR_PARAM_INVALID, {"'input'"});
  auto floatInput = makeView(x.data(), ACL_FLOAT, {3, 2});
  expectRejected(plan(floatInput.get(), 2.0, 1, out.get(), badMask.get()), ACLNN_ERR_PARAM_INVALID, {"'p'"});
  expectRejected(plan(floatInput.get(), 0.5, 1, out.get(), badMask.get()), ACLNN_ERR_PARAM_INVALID, {"'offset'"});
  expectRejected(plan(floatInput.get(), 0.5, 4, out.get(), badMask.get()), ACLNN_ERR_PARAM_INVALID, {"'out'"});
}

TEST_F(DropoutV3Checks, AcceptedEdgeCases) {
  expectUntouched = false;
  // Empty input with an empty mask: success, no workspace, nothing written.
  auto empty = makeView(x.data(), ACL_FLOAT, {2, 0});
  auto emptyOut = makeView(y.data(), ACL_FLOAT, {2, 0});
  auto emptyMask = makeView(bits.data(), ACL_UINT8, {0});
  const Call call = plan(empty.get(), 0.5, 0, emptyOut.get(), emptyMask.get());
  EXPECT_EQ(call.status, ACLNN_SUCCESS) << call.message;
  EXPECT_EQ(call.workspaceSize, 0u);
  EXPECT_EQ(y, std::vector<float>(300, 9.0f));
  EXPECT_EQ(bits, std::vector<uint8_t>(64, 0x5C));

  auto mask = makeView(bits.data(), ACL_UINT8, {16});
  auto scalarIn = makeView(x.data(), ACL_FLOAT, {});
  auto scalarOut = makeView(y.data(), ACL_FLOAT, {});
  EXPECT_EQ(plan(scalarIn.get(), 0.5, 0, scalarOut.get(), mask.get()).status, ACLNN_SUCCESS);
  const std::vector<int64_t> eight = {2, 1, 3, 2, 1, 2, 3, 2};  // 144 elements -> 32 bytes, as [2, 16]
  auto in8 = makeView(x.data(), ACL_BF16, eight);
  auto out8 = makeView(y.data(), ACL_BF16, eight);
  auto mask2d = makeView(bits.data(), ACL_UINT8, {2, 16});
  EXPECT_EQ(plan(in8.get(), 0.1, 8, out8.get(), mask2d.get()).status, ACLNN_SUCCESS);
  auto input = makeView(x.data(), ACL_FLOAT16, {20});
  auto out = makeView(y.data(), ACL_FLOAT16, {20});
  for (double p : {0.0, 1.0, 5e-324, std::nextafter(1.0, 0.0)}) {
    for (int64_t offset : {int64_t{0}, int64_t{4}, int64_t{-4}, int64_t{1} << 40, INT64_MIN}) {
      EXPECT_EQ(plan(input.get(), p, offset, out.get(), mask.get()).status, ACLNN_SUCCESS) << p << " " << offset;
    }
  }
}

}  // namespace
}  // namespace gradkit::test
