// aclnnDropoutGetWorkspaceSize's argument checks: every rule's status and a message naming the API, the argument,
// what was expected and what was given; rejected calls write nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "aclnnop/aclnn_dropout.h"
#include "ops/masked_dropout_test_util.h"
#include "ops/op_test_util.h"

namespace gradkit::test {
namespace {

bool everyByteIs(const std::vector<uint8_t>& bytes, unsigned char value) {
  return std::all_of(bytes.begin(), bytes.end(), [value](uint8_t byte) { return byte == value; });
}

struct Tensors {
  std::vector<float> x = std::vector<float>(200, 1.0f);
  std::vector<float> y = std::vector<float>(200, -5.0f);
  std::vector<uint8_t> mask = std::vector<uint8_t>(32, 0xC3);
  TensorPtr input = makeView(x.data(), ACL_FLOAT, {2, 100});
  TensorPtr out = makeView(y.data(), ACL_FLOAT, {2, 100});
  TensorPtr maskOut = makeView(mask.data(), ACL_UINT8, {32});

  bool untouched() const {
    for (float v : y) {
      if (v != -5.0f) return false;
    }
    return everyByteIs(mask, 0xC3);
  }
};

PlannedCall call(const aclTensor* input, double p, bool train, aclTensor* out, aclTensor* maskOut) {
  return planAndRun(
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnDropoutGetWorkspaceSize(input, p, train, 1, 0, out, maskOut, size, executor);
      },
      aclnnDropout);
}

void expectRejected(const PlannedCall& result, aclnnStatus code, std::initializer_list<const char*> words) {
  EXPECT_EQ(result.status, code) << result.message;
  EXPECT_NE(result.message.find("aclnnDropout"), std::string::npos) << result.message;
  for (const char* word : words) {
    EXPECT_NE(result.message.find(word), std::string::npos) << word << ": " << result.message;
  }
}

TEST(DropoutChecks, NullArguments) {
  Tensors t;
  expectRejected(call(nullptr, 0.5, true, t.out.get(), t.maskOut.get()), ACLNN_ERR_PARAM_NULLPTR, {"input"});
  expectRejected(call(t.input.get(), 0.5, true, nullptr, t.maskOut.get()), ACLNN_ERR_PARAM_NULLPTR, {"out"});
  expectRejected(call(t.input.get(), 0.5, true, t.out.get(), nullptr), ACLNN_ERR_PARAM_NULLPTR, {"maskOut"});
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  EXPECT_EQ(
      aclnnDropoutGetWorkspaceSize(t.input.get(), 0.5, true, 1, 0, t.out.get(), t.maskOut.get(), nullptr, &executor),
      ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(aclnnDropoutGetWorkspaceSize(t.input.get(), 0.5, true, 1, 0, t.out.get(), t.maskOut.get(), &size, nullptr),
            ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_TRUE(t.untouched());
}

TEST(DropoutChecks, Dtypes) {
  Tensors t;
  std::vector<double> doubles(200);
  std::vector<int32_t> ints(200);
  auto doubleInput = makeView(doubles.data(), ACL_DOUBLE, {2, 100});
  auto intOut = makeView(ints.data(), ACL_INT32, {2, 100});
  auto int8Mask = makeView(t.mask.data(), ACL_INT8, {32});
  expectRejected(call(doubleInput.get(), 0.5, true, t.out.get(), t.maskOut.get()), ACLNN_ERR_PARAM_INVALID,
                 {"input", "DOUBLE"});
  expectRejected(call(t.input.get(), 0.5, true, intOut.get(), t.maskOut.get()), ACLNN_ERR_PARAM_INVALID,
                 {"out", "INT32"});
  expectRejected(call(t.input.get(), 0.5, true, t.out.get(), int8Mask.get()), ACLNN_ERR_PARAM_INVALID,
                 {"maskOut", "UINT8", "INT8"});
  EXPECT_TRUE(t.untouched());
}

TEST(DropoutChecks, ProbabilityOutsideZeroOneOrNanEvenInEval) {
  Tensors t;
  for (bool train : {true, false}) {
    for (double p : {-0.5, 1.25, std::nan(""), static_cast<double>(INFINITY)}) {
      expectRejected(call(t.input.get(), p, train, t.out.get(), t.maskOut.get()), ACLNN_ERR_PARAM_INVALID,
                     {"p", "[0, 1]"});
    }
  }
  EXPECT_TRUE(t.untouched());
}

TEST(DropoutChecks, RankShapeAndMaskSize) {
  Tensors t;
  auto rank9 = makeView(t.x.data(), ACL_FLOAT, {1, 1, 1, 1, 1, 1, 1, 2, 100});
  expectRejected(call(rank9.get(), 0.5, true, t.out.get(), t.maskOut.get()), ACLNN_ERR_PARAM_INVALID, {"input"});
  auto transposedShape = makeView(t.y.data(), ACL_FLOAT, {100, 2});
  expectRejected(call(t.input.get(), 0.5, true, transposedShape.get(), t.maskOut.get()), ACLNN_ERR_PARAM_INVALID,
                 {"out", "[100, 2]"});
  auto shortMask = makeView(t.mask.data(), ACL_UINT8, {16});
  expectRejected(call(t.input.get(), 0.5, true, t.out.get(), shortMask.get()), ACLNN_ERR_PARAM_INVALID,
                 {"maskOut", "32 elements", "16 elements"});
  // The mask size is checked in eval too, and a mask larger than needed is refused (DoMask would accept it).
  std::vector<uint8_t> big(48, 0xC3);
  auto longMask = makeView(big.data(), ACL_UINT8, {48});
  expectRejected(call(t.input.get(), 0.5, false, t.out.get(), longMask.get()), ACLNN_ERR_PARAM_INVALID,
                 {"maskOut", "48 elements"});
  // An empty input needs an empty mask.
  auto emptyInput = makeView(nullptr, ACL_FLOAT, {0, 100});
  auto emptyOut = makeView(nullptr, ACL_FLOAT, {0, 100});
  expectRejected(call(emptyInput.get(), 0.5, true, emptyOut.get(), t.maskOut.get()), ACLNN_ERR_PARAM_INVALID,
                 {"maskOut", "0 elements"});
  EXPECT_TRUE(t.untouched());
}

TEST(DropoutChecks, AcceptedEdgeCases) {
  Tensors t;
  // out in another floating dtype; a 2-D mask with the right element count; p exactly 0 and 1.
  std::vector<uint16_t> half(200);
  auto halfOut = makeView(half.data(), ACL_FLOAT16, {2, 100});
  EXPECT_EQ(call(t.input.get(), 0.5, true, halfOut.get(), t.maskOut.get()).status, ACLNN_SUCCESS);
  auto mask2d = makeView(t.mask.data(), ACL_UINT8, {2, 16});
  EXPECT_EQ(call(t.input.get(), 0.0, true, t.out.get(), mask2d.get()).status, ACLNN_SUCCESS);
  EXPECT_EQ(call(t.input.get(), 1.0, true, t.out.get(), mask2d.get()).status, ACLNN_SUCCESS);
}

}  // namespace
}  // namespace gradkit::test
