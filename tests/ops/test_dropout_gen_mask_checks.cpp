// aclnnDropoutGenMask[V2]GetWorkspaceSize: every rejection of spec 1.2.1 (code and message, in order) and the
// accepted edge cases (empty, 0-d, any rank of out, probabilities at the ends of [0, 1]).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "aclnnop/aclnn_dropout_gen_mask.h"
#include "ops/op_test_util.h"

namespace gradkit::test {
namespace {

struct IntArrayDeleter {
  void operator()(aclIntArray* array) const { aclDestroyIntArray(array); }
};
using IntArrayPtr = std::unique_ptr<aclIntArray, IntArrayDeleter>;

IntArrayPtr makeShape(const std::vector<int64_t>& dims) {
  return IntArrayPtr(aclCreateIntArray(dims.data(), dims.size()));
}

struct Call {
  aclnnStatus status = -1;
  uint64_t workspaceSize = 0;
  std::string message;
};

// Plans (and, when accepted, runs) GenMaskV2; `probDataType` FLOAT unless given.
Call planV2(const aclIntArray* shape, double prob, aclTensor* out, aclDataType probDataType = ACL_FLOAT) {
  Call call;
  aclOpExecutor* executor = nullptr;
  call.status =
      aclnnDropoutGenMaskV2GetWorkspaceSize(shape, prob, 1, 0, probDataType, out, &call.workspaceSize, &executor);
  call.message = recentError();
  if (call.status == ACLNN_SUCCESS) {
    std::vector<unsigned char> workspace(call.workspaceSize);
    EXPECT_EQ(aclnnDropoutGenMaskV2(workspace.data(), call.workspaceSize, executor, nullptr), ACLNN_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  }
  return call;
}

Call planV1(const aclIntArray* shape, double prob, aclTensor* out) {
  Call call;
  aclOpExecutor* executor = nullptr;
  call.status = aclnnDropoutGenMaskGetWorkspaceSize(shape, prob, 1, 0, out, &call.workspaceSize, &executor);
  call.message = recentError();
  if (call.status == ACLNN_SUCCESS) {
    std::vector<unsigned char> workspace(call.workspaceSize);
    EXPECT_EQ(aclnnDropoutGenMask(workspace.data(), call.workspaceSize, executor, nullptr), ACLNN_SUCCESS);
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

TEST(DropoutGenMaskChecks, NullArgumentsGive161001NamingTheArgument) {
  std::vector<uint8_t> mask(16);
  auto shape = makeShape({4, 5});
  auto out = makeView(mask.data(), ACL_UINT8, {16});
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  struct Case {
    const char* name;
    aclnnStatus status;
  } cases[] = {
      {"shape", aclnnDropoutGenMaskV2GetWorkspaceSize(nullptr, 0.5, 1, 0, ACL_FLOAT, out.get(), &size, &executor)},
      {"out", aclnnDropoutGenMaskV2GetWorkspaceSize(shape.get(), 0.5, 1, 0, ACL_FLOAT, nullptr, &size, &executor)},
      {"workspaceSize",
       aclnnDropoutGenMaskV2GetWorkspaceSize(shape.get(), 0.5, 1, 0, ACL_FLOAT, out.get(), nullptr, &executor)},
      {"executor", aclnnDropoutGenMaskV2GetWorkspaceSize(shape.get(), 0.5, 1, 0, ACL_FLOAT, out.get(), &size, nullptr)},
      {"shape", aclnnDropoutGenMaskGetWorkspaceSize(nullptr, 0.5, 1, 0, out.get(), &size, &executor)},
      {"out", aclnnDropoutGenMaskGetWorkspaceSize(shape.get(), 0.5, 1, 0, nullptr, &size, &executor)},
  };
  const std::string messages = recentError();
  for (const Case& item : cases) {
    EXPECT_EQ(item.status, ACLNN_ERR_PARAM_NULLPTR) << item.name;
    EXPECT_NE(messages.find(std::string("'") + item.name + "'"), std::string::npos) << messages;
  }
  EXPECT_NE(messages.find("aclnnDropoutGenMaskV2: "), std::string::npos) << messages;
  EXPECT_NE(messages.find("aclnnDropoutGenMask: "), std::string::npos) << messages;
  EXPECT_EQ(mask, std::vector<uint8_t>(16, 0));
}

TEST(DropoutGenMaskChecks, OutDtypeMustBeUint8) {
  std::vector<uint8_t> mask(64, 0x5C);
  auto shape = makeShape({20});
  for (aclDataType dtype : {ACL_INT8, ACL_BOOL, ACL_FLOAT, ACL_UINT16}) {
    auto out = makeView(mask.data(), dtype, {16});
    expectRejected(planV2(shape.get(), 0.5, out.get()), ACLNN_ERR_PARAM_INVALID, {"'out'", "UINT8"});
    expectRejected(planV1(shape.get(), 0.5, out.get()), ACLNN_ERR_PARAM_INVALID, {"'out'", "UINT8"});
  }
  EXPECT_EQ(mask, std::vector<uint8_t>(64, 0x5C));
}

TEST(DropoutGenMaskChecks, ProbOutsideZeroOneOrNanGives161002WithTheValue) {
  std::vector<uint8_t> mask(16, 0x5C);
  auto shape = makeShape({20});
  auto out = makeView(mask.data(), ACL_UINT8, {16});
  expectRejected(planV2(shape.get(), -0.1, out.get()), ACLNN_ERR_PARAM_INVALID, {"'prob'", "[0, 1]", "-0.1"});
  expectRejected(planV2(shape.get(), 1.0000001, out.get()), ACLNN_ERR_PARAM_INVALID, {"'prob'", "1.0000001"});
  expectRejected(planV2(shape.get(), NAN, out.get()), ACLNN_ERR_PARAM_INVALID, {"'prob'", "nan"});
  expectRejected(planV1(shape.get(), INFINITY, out.get()), ACLNN_ERR_PARAM_INVALID, {"'prob'", "inf"});
  expectRejected(planV1(shape.get(), -1e-300, out.get()), ACLNN_ERR_PARAM_INVALID, {"'prob'"});
  EXPECT_EQ(mask, std::vector<uint8_t>(16, 0x5C));
}

TEST(DropoutGenMaskChecks, ProbDataTypeOfV2MustBeAFloatType) {
  std::vector<uint8_t> mask(16, 0x5C);
  auto shape = makeShape({20});
  auto out = makeView(mask.data(), ACL_UINT8, {16});
  for (aclDataType dtype : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16})
    EXPECT_EQ(planV2(shape.get(), 0.5, out.get(), dtype).status, 0);
  for (aclDataType dtype : {ACL_DOUBLE, ACL_INT32, ACL_UINT8}) {
    expectRejected(planV2(shape.get(), 0.5, out.get(), dtype), ACLNN_ERR_PARAM_INVALID, {"'probDataType'", "FLOAT16"});
  }
  // Values no aclDataType has, as a C caller may pass them: rejected without being used as the enum (UBSan).
  for (int raw : {999, -7, 64}) {
    aclDataType dtype;
    std::memcpy(&dtype, &raw, sizeof dtype);
    expectRejected(planV2(shape.get(), 0.5, out.get(), dtype), ACLNN_ERR_PARAM_INVALID,
                   {"'probDataType'", raw == -7   ? "UNKNOWN(-7)"
                                      : raw == 64 ? "UNKNOWN(64)"
                                                  : "UNKNOWN(999)"});
  }
}

TEST(DropoutGenMaskChecks, OutSizeMustEqualTheMaskSize) {
  std::vector<uint8_t> mask(64, 0x5C);
  struct Case {
    std::vector<int64_t> shape;
    int64_t outElements;
  } wrong[] = {{{129}, 16}, {{129}, 48}, {{1}, 15}, {{1}, 17}, {{2, 64}, 32}, {{}, 0}, {{0}, 16}};
  for (const Case& item : wrong) {
    auto shape = makeShape(item.shape);
    auto out = makeView(mask.data(), ACL_UINT8, {item.outElements});
    expectRejected(planV2(shape.get(), 0.3, out.get()), ACLNN_ERR_PARAM_INVALID,
                   {"'out'", "expected " + std::to_string((product(item.shape) + 127) / 128 * 16) + " elements",
                    "given " + std::to_string(item.outElements) + " elements"});
  }
  EXPECT_EQ(mask, std::vector<uint8_t>(64, 0x5C));
}

TEST(DropoutGenMaskChecks, NegativeOrOverflowingShapeGives161002) {
  std::vector<uint8_t> mask(16);
  auto out = makeView(mask.data(), ACL_UINT8, {16});
  auto negative = makeShape({4, -5});
  expectRejected(planV2(negative.get(), 0.5, out.get()), ACLNN_ERR_PARAM_INVALID, {"'shape'", "[4, -5]"});
  auto huge = makeShape({int64_t{1} << 40, int64_t{1} << 30});
  expectRejected(planV2(huge.get(), 0.5, out.get()), ACLNN_ERR_PARAM_INVALID, {"'shape'", "2^62"});
}

TEST(DropoutGenMaskChecks, CheckOrderFollowsUpstream) {
  // Wrong dtype and wrong prob and wrong size at once: the dtype is reported.
  std::vector<uint8_t> mask(8);
  auto shape = makeShape({200});
  auto out = makeView(mask.data(), ACL_INT8, {8});
  expectRejected(planV2(shape.get(), 2.0, out.get()), ACLNN_ERR_PARAM_INVALID, {"'out'", "INT8"});
  auto outU8 = makeView(mask.data(), ACL_UINT8, {8});
  // Wrong prob and wrong size: the prob.
  expectRejected(planV2(shape.get(), 2.0, outU8.get()), ACLNN_ERR_PARAM_INVALID, {"'prob'"});
}

TEST(DropoutGenMaskChecks, EmptyShapeWithEmptyOutSucceedsWithoutWork) {
  std::vector<uint8_t> mask(1, 0x5C);
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{0}, {2, 0, 3}, {0, 1 << 30}}) {
    auto shape = makeShape(dims);
    auto out = makeView(mask.data(), ACL_UINT8, {0}, {}, 0, 1);
    const Call call = planV2(shape.get(), 0.5, out.get());
    EXPECT_EQ(call.status, ACLNN_SUCCESS) << call.message;
    EXPECT_EQ(call.workspaceSize, 0u);
  }
  EXPECT_EQ(mask[0], 0x5C);
}

TEST(DropoutGenMaskChecks, OutRankIsFreeOnlyTheElementCountMatters) {
  std::vector<uint8_t> mask(32, 0x5C);
  auto shape = makeShape({3, 43});  // 129 elements -> 32 bytes
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{32}, {2, 16}, {4, 2, 4}, {1, 1, 32, 1}}) {
    auto out = makeView(mask.data(), ACL_UINT8, dims);
    EXPECT_EQ(planV2(shape.get(), 0.5, out.get()).status, ACLNN_SUCCESS);
  }
  auto scalarShape = makeShape({});  // 0-d: one element, 16 bytes
  auto out16 = makeView(mask.data(), ACL_UINT8, {16});
  EXPECT_EQ(planV2(scalarShape.get(), 0.5, out16.get()).status, ACLNN_SUCCESS);
}

TEST(DropoutGenMaskChecks, ProbabilitiesAtBothEndsAreAccepted) {
  std::vector<uint8_t> mask(16);
  auto shape = makeShape({20});
  auto out = makeView(mask.data(), ACL_UINT8, {16});
  for (double prob : {0.0, -0.0, 1.0, 5e-324, std::nextafter(1.0, 0.0)}) {
    EXPECT_EQ(planV2(shape.get(), prob, out.get()).status, ACLNN_SUCCESS) << prob;
    EXPECT_EQ(planV1(shape.get(), prob, out.get()).status, ACLNN_SUCCESS) << prob;
  }
}

}  // namespace
}  // namespace gradkit::test
