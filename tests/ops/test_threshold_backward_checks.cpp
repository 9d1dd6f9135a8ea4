// aclnnThresholdBackwardGetWorkspaceSize with the mainline contract (spec 2.5): every rejection (code and
// message), the dtype list of each GRADKIT_SOC profile, the INT64 threshold rule, broadcasting, and every
// accepted edge case of the upstream unit tests.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <vector>

#include "aclnnop/aclnn_threshold_backward.h"
#include "gradkit/gradkit.h"
#include "opapi/tensor.h"
#include "ops/op_test_util.h"
#include "runtime/runtime.h"

namespace gradkit::test {
namespace {

struct Call {
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  aclnnStatus status = -1;
  std::string message;
};

Call plan(const aclTensor* grad, const aclTensor* self, const aclScalar* threshold, aclTensor* out) {
  Call call;
  call.status = aclnnThresholdBackwardGetWorkspaceSize(grad, self, threshold, out, &call.workspaceSize, &call.executor);
  call.message = recentError();
  if (call.status == ACLNN_SUCCESS) {
    std::vector<unsigned char> workspace(call.workspaceSize);
    EXPECT_EQ(aclnnThresholdBackward(workspace.data(), call.workspaceSize, call.executor, nullptr), ACLNN_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  }
  return call;
}

class ThresholdBackwardChecks : public ::testing::Test {
 protected:
  std::vector<float> a = std::vector<float>(64, 1.0f), b = std::vector<float>(64, -1.0f), c = std::vector<float>(64);
  ScalarPtr zero = makeScalar<int32_t>(0, ACL_INT32);
};

TEST_F(ThresholdBackwardChecks, NullArgumentsGive161001NamingTheArgument) {
  auto grad = makeView(a.data(), ACL_FLOAT, {2, 4});
  auto self = makeView(b.data(), ACL_FLOAT, {2, 4});
  auto out = makeView(c.data(), ACL_FLOAT, {2, 4});
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  struct Case {
    const char* name;
    aclnnStatus status;
  } cases[] = {
      {"workspaceSize",
       aclnnThresholdBackwardGetWorkspaceSize(grad.get(), self.get(), zero.get(), out.get(), nullptr, &executor)},
      {"executor",
       aclnnThresholdBackwardGetWorkspaceSize(grad.get(), self.get(), zero.get(), out.get(), &size, nullptr)},
      {"gradOutput",
       aclnnThresholdBackwardGetWorkspaceSize(nullptr, self.get(), zero.get(), out.get(), &size, &executor)},
      {"self", aclnnThresholdBackwardGetWorkspaceSize(grad.get(), nullptr, zero.get(), out.get(), &size, &executor)},
      {"threshold",
       aclnnThresholdBackwardGetWorkspaceSize(grad.get(), self.get(), nullptr, out.get(), &size, &executor)},
      {"out", aclnnThresholdBackwardGetWorkspaceSize(grad.get(), self.get(), zero.get(), nullptr, &size, &executor)},
  };
  const std::string messages = recentError();
  for (const Case& item : cases) {
    EXPECT_EQ(item.status, ACLNN_ERR_PARAM_NULLPTR) << item.name;
    EXPECT_NE(messages.find(std::string("'") + item.name + "'"), std::string::npos) << messages;
  }
  EXPECT_NE(messages.find("nullptr"), std::string::npos);
}

TEST_F(ThresholdBackwardChecks, BoolInputOrOutputGives161002) {
  auto grad = makeView(a.data(), ACL_BOOL, {2, 4});
  auto self = makeView(b.data(), ACL_BOOL, {2, 4});
  auto out = makeView(c.data(), ACL_BOOL, {2, 4});
  Call call = plan(grad.get(), self.get(), zero.get(), out.get());
  EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(call.message.find("'gradOutput'"), std::string::npos) << call.message;
  EXPECT_NE(call.message.find("BOOL"), std::string::npos) << call.message;

  auto fgrad = makeView(a.data(), ACL_FLOAT, {2, 4});
  auto fself = makeView(b.data(), ACL_FLOAT, {2, 4});
  call = plan(fgrad.get(), fself.get(), zero.get(), out.get());
  EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(call.message.find("'out'"), std::string::npos) << call.message;
}

TEST_F(ThresholdBackwardChecks, DtypeMismatchGives161002NamingBothDtypes) {
  auto grad = makeView(a.data(), ACL_FLOAT, {2, 4});
  auto self = makeView(b.data(), ACL_FLOAT16, {2, 4});
  auto out = makeView(c.data(), ACL_FLOAT, {2, 4});
  Call call = plan(grad.get(), self.get(), zero.get(), out.get());
  EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(call.message.find("'self'"), std::string::npos) << call.message;
  EXPECT_NE(call.message.find("FLOAT16"), std::string::npos) << call.message;
  EXPECT_NE(call.message.find("expected dtype FLOAT "), std::string::npos) << call.message;

  auto self32 = makeView(b.data(), ACL_FLOAT, {2, 4});
  auto out16 = makeView(c.data(), ACL_FLOAT16, {2, 4});
  call = plan(grad.get(), self32.get(), zero.get(), out16.get());
  EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(call.message.find("'out'"), std::string::npos) << call.message;
}

TEST_F(ThresholdBackwardChecks, ShapesThatDoNotBroadcastGive161002WithBothShapes) {
  auto grad = makeView(a.data(), ACL_FLOAT, {1, 2, 3, 4});
  auto self = makeView(b.data(), ACL_FLOAT, {1, 2, 3, 3});
  auto out = makeView(c.data(), ACL_FLOAT, {1, 2, 3, 4});
  Call call = plan(grad.get(), self.get(), zero.get(), out.get());
  EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(call.message.find("'self'"), std::string::npos) << call.message;
  EXPECT_NE(call.message.find("[1, 2, 3, 4]"), std::string::npos) << call.message;
  EXPECT_NE(call.message.find("given shape [1, 2, 3, 3]"), std::string::npos) << call.message;
}

TEST_F(ThresholdBackwardChecks, OutMustHaveTheBroadcastShape) {
  auto grad = makeView(a.data(), ACL_FLOAT, {4, 1});
  auto self = makeView(b.data(), ACL_FLOAT, {1, 5});
  for (const std::vector<int64_t>& wrong : std::vector<std::vector<int64_t>>{{4, 1}, {1, 5}, {5, 4}, {1, 4, 5}, {20}}) {
    auto out = makeView(c.data(), ACL_FLOAT, wrong);
    Call call = plan(grad.get(), self.get(), zero.get(), out.get());
    EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(call.message.find("'out'"), std::string::npos) << call.message;
    EXPECT_NE(call.message.find("expected shape [4, 5]"), std::string::npos) << call.message;
    EXPECT_NE(call.message.find("given shape " + gradkit::dimsString(wrong)), std::string::npos) << call.message;
  }
  auto out = makeView(c.data(), ACL_FLOAT, {4, 5});
  EXPECT_EQ(plan(grad.get(), self.get(), zero.get(), out.get()).status, ACLNN_SUCCESS);
  // The output's shape never broadcasts: a [4, 5] grad and self cannot write a [1, 5] out.
  auto grad45 = makeView(a.data(), ACL_FLOAT, {4, 5});
  auto out15 = makeView(c.data(), ACL_FLOAT, {1, 5});
  EXPECT_EQ(plan(grad45.get(), grad45.get(), zero.get(), out15.get()).status, ACLNN_ERR_PARAM_INVALID);
}

TEST_F(ThresholdBackwardChecks, BroadcastShapesAreAccepted) {
  struct Case {
    std::vector<int64_t> grad, self, out;
  } cases[] = {{{2, 4}, {4}, {2, 4}},          {{2, 1}, {1, 4}, {2, 4}}, {{}, {2, 4}, {2, 4}},
               {{3, 1, 4}, {2, 1}, {3, 2, 4}}, {{2, 0}, {1}, {2, 0}},    {{0}, {}, {0}}};
  for (const Case& item : cases) {
    auto grad = makeView(a.data(), ACL_FLOAT, item.grad);
    auto self = makeView(b.data(), ACL_FLOAT, item.self);
    auto out = makeView(c.data(), ACL_FLOAT, item.out);
    Call call = plan(grad.get(), self.get(), zero.get(), out.get());
    EXPECT_EQ(call.status, ACLNN_SUCCESS) << gradkit::dimsString(item.out) << ": " << call.message;
  }
}

TEST_F(ThresholdBackwardChecks, NineDimsGive161002) {
  const std::vector<int64_t> shape(9, 1);
  auto grad = makeView(a.data(), ACL_FLOAT, shape);
  auto self = makeView(b.data(), ACL_FLOAT, shape);
  auto out = makeView(c.data(), ACL_FLOAT, shape);
  Call call = plan(grad.get(), self.get(), zero.get(), out.get());
  EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(call.message.find("at most 8 dims"), std::string::npos) << call.message;
  EXPECT_NE(call.message.find("given 9 dims"), std::string::npos) << call.message;
}

TEST_F(ThresholdBackwardChecks, AnyThresholdIsAcceptedForNonInt64Dtypes) {
  auto grad = makeView(a.data(), ACL_FLOAT, {2, 4});
  auto self = makeView(b.data(), ACL_FLOAT, {2, 4});
  auto out = makeView(c.data(), ACL_FLOAT, {2, 4});
  for (auto& accepted :
       {makeScalar<int32_t>(1, ACL_INT32), makeScalar<float>(1e-3f, ACL_FLOAT), makeScalar<double>(-2.5, ACL_DOUBLE),
        makeScalar<float>(NAN, ACL_FLOAT), makeScalar<double>(1e300, ACL_DOUBLE), makeScalar<int64_t>(-7, ACL_INT64),
        makeScalar<uint8_t>(200, ACL_UINT8), makeScalar<uint16_t>(0x3c00, ACL_FLOAT16),
        makeScalar<uint8_t>(1, ACL_BOOL), makeScalar<uint64_t>(~uint64_t{0}, ACL_UINT64)}) {
    Call call = plan(grad.get(), self.get(), accepted.get(), out.get());
    EXPECT_EQ(call.status, ACLNN_SUCCESS) << call.message;
  }
}

TEST_F(ThresholdBackwardChecks, ComplexThresholdGives161002) {
  auto grad = makeView(a.data(), ACL_FLOAT, {2, 4});
  auto self = makeView(b.data(), ACL_FLOAT, {2, 4});
  auto out = makeView(c.data(), ACL_FLOAT, {2, 4});
  const float value[2] = {1.0f, 0.0f};
  ScalarPtr complex(aclCreateScalar(const_cast<float*>(value), ACL_COMPLEX64));
  ASSERT_NE(complex.get(), nullptr);
  Call call = plan(grad.get(), self.get(), complex.get(), out.get());
  EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(call.message.find("'threshold'"), std::string::npos) << call.message;
  EXPECT_NE(call.message.find("COMPLEX64"), std::string::npos) << call.message;
}

TEST_F(ThresholdBackwardChecks, Int64NeedsAZeroThresholdWithinFltEpsilon) {
  std::vector<int64_t> g(8, 1), s(8, 1), o(8);
  auto grad = makeView(g.data(), ACL_INT64, {2, 4});
  auto self = makeView(s.data(), ACL_INT64, {2, 4});
  auto out = makeView(o.data(), ACL_INT64, {2, 4});
  for (auto& rejected : {makeScalar<int32_t>(1, ACL_INT32), makeScalar<float>(1e-3f, ACL_FLOAT),
                         makeScalar<double>(-2.0 * FLT_EPSILON, ACL_DOUBLE), makeScalar<float>(NAN, ACL_FLOAT)}) {
    Call call = plan(grad.get(), self.get(), rejected.get(), out.get());
    EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID);
    EXPECT_NE(call.message.find("'threshold'"), std::string::npos) << call.message;
    EXPECT_NE(call.message.find("INT64"), std::string::npos) << call.message;
  }
  for (auto& accepted : {makeScalar<int64_t>(0, ACL_INT64), makeScalar<float>(1e-8f, ACL_FLOAT),
                         makeScalar<double>(-FLT_EPSILON, ACL_DOUBLE), makeScalar<int8_t>(0, ACL_INT8)}) {
    Call call = plan(grad.get(), self.get(), accepted.get(), out.get());
    EXPECT_EQ(call.status, ACLNN_SUCCESS) << call.message;
    EXPECT_EQ(o, g);
  }
}

TEST_F(ThresholdBackwardChecks, DtypeListFollowsTheSocProfile) {
  std::vector<int64_t> g(8, 1), s(8, 1), o(8);
  for (const char* soc : {"Ascend910B", "Ascend910_93", "Ascend950"}) {
    ASSERT_EQ(gradkitSetSoc(soc), ACL_SUCCESS);
    for (aclDataType dtype : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT8, ACL_UINT8, ACL_INT32}) {
      auto grad = makeView(g.data(), dtype, {8}), self = makeView(s.data(), dtype, {8});
      auto out = makeView(o.data(), dtype, {8});
      EXPECT_EQ(plan(grad.get(), self.get(), zero.get(), out.get()).status, ACLNN_SUCCESS) << soc << " " << dtype;
    }
    auto grad = makeView(g.data(), ACL_INT64, {8}), self = makeView(s.data(), ACL_INT64, {8});
    auto out = makeView(o.data(), ACL_INT64, {8});
    Call call = plan(grad.get(), self.get(), zero.get(), out.get());
    if (std::string(soc) == "Ascend950") {
      EXPECT_EQ(call.status, ACLNN_SUCCESS) << call.message;
    } else {
      EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID) << soc;
      EXPECT_NE(call.message.find("'gradOutput'"), std::string::npos) << call.message;
      EXPECT_NE(call.message.find("given dtype INT64"), std::string::npos) << call.message;
      EXPECT_EQ(call.message.find("INT64,"), std::string::npos) << "INT64 is not in the list: " << call.message;
    }
    for (aclDataType dtype : {ACL_BOOL, ACL_DOUBLE, ACL_INT16, ACL_UINT64, ACL_COMPLEX64}) {
      auto bad = makeView(g.data(), dtype, {8});
      EXPECT_EQ(plan(bad.get(), bad.get(), zero.get(), bad.get()).status, ACLNN_ERR_PARAM_INVALID) << dtype;
    }
  }
  gradkit::rt::clearSocOverride();
}

TEST_F(ThresholdBackwardChecks, NullCheckedBeforeDtypeAndDtypeBeforeShape) {
  auto grad = makeView(a.data(), ACL_BOOL, {2, 4});
  auto self = makeView(b.data(), ACL_FLOAT, {3});
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  EXPECT_EQ(aclnnThresholdBackwardGetWorkspaceSize(grad.get(), self.get(), zero.get(), nullptr, &size, &executor),
            ACLNN_ERR_PARAM_NULLPTR);
  auto out = makeView(c.data(), ACL_FLOAT, {2, 4});
  recentError();
  EXPECT_EQ(aclnnThresholdBackwardGetWorkspaceSize(grad.get(), self.get(), zero.get(), out.get(), &size, &executor),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recentError().find("dtype"), std::string::npos);
}

TEST_F(ThresholdBackwardChecks, UpstreamAcceptedCasesSucceed) {
  std::vector<int64_t> big(2048, 3);
  struct Case {
    aclDataType dtype;
    std::vector<int64_t> shape;
  } cases[] = {{ACL_FLOAT, {2, 4}}, {ACL_FLOAT16, {2, 4}}, {ACL_BF16, {2, 4}},  {ACL_INT8, {1024}}, {ACL_UINT8, {257}},
               {ACL_INT32, {512}},  {ACL_INT64, {257}},    {ACL_FLOAT, {2, 0}}, {ACL_FLOAT, {}}};
  for (const Case& item : cases) {
    std::vector<int64_t> g(big), s(big), o(big);
    auto grad = makeView(g.data(), item.dtype, item.shape);
    auto self = makeView(s.data(), item.dtype, item.shape);
    auto out = makeView(o.data(), item.dtype, item.shape);
    Call call = plan(grad.get(), self.get(), zero.get(), out.get());
    EXPECT_EQ(call.status, ACLNN_SUCCESS) << call.message;
  }
}

TEST_F(ThresholdBackwardChecks, EmptyTensorNeedsNoWorkspaceAndWritesNothing) {
  auto grad = makeView(a.data(), ACL_FLOAT, {2, 0, 3});
  auto self = makeView(b.data(), ACL_FLOAT, {2, 0, 3});
  auto out = makeView(c.data(), ACL_FLOAT, {2, 0, 3});
  c.assign(c.size(), 7.0f);
  Call call = plan(grad.get(), self.get(), zero.get(), out.get());
  EXPECT_EQ(call.status, ACLNN_SUCCESS);
  EXPECT_EQ(call.workspaceSize, 0u);
  for (float v : c) EXPECT_EQ(v, 7.0f);
}

TEST_F(ThresholdBackwardChecks, NonContiguousUpstreamCaseComputesTheTransposedView) {
  // View [5, 4] with strides {1, 5} over storage [4, 5]: element (i, j) lives at j*5 + i.
  std::vector<float> g(20), s(20), o(20, 99.0f);
  for (int k = 0; k < 20; ++k) {
    g[k] = static_cast<float>(k + 1);
    s[k] = (k % 3 == 0) ? -1.0f : 2.0f;
  }
  auto grad = makeView(g.data(), ACL_FLOAT, {5, 4}, {1, 5}, 0, 20);
  auto self = makeView(s.data(), ACL_FLOAT, {5, 4}, {1, 5}, 0, 20);
  auto out = makeView(o.data(), ACL_FLOAT, {5, 4}, {1, 5}, 0, 20);
  Call call = plan(grad.get(), self.get(), zero.get(), out.get());
  ASSERT_EQ(call.status, ACLNN_SUCCESS) << call.message;
  EXPECT_GT(call.workspaceSize, 0u);
  for (int k = 0; k < 20; ++k) EXPECT_EQ(o[k], s[k] > 0 ? g[k] : 0.0f) << k;
}

TEST_F(ThresholdBackwardChecks, ExecutorRunsOnceAndRejectsShortWorkspace) {
  std::vector<float> g(20, 1.0f), s(20, 1.0f), o(20);
  auto grad = makeView(g.data(), ACL_FLOAT, {5, 4}, {1, 5}, 0, 20);
  auto self = makeView(s.data(), ACL_FLOAT, {5, 4});
  auto out = makeView(o.data(), ACL_FLOAT, {5, 4});
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(aclnnThresholdBackwardGetWorkspaceSize(grad.get(), self.get(), zero.get(), out.get(), &size, &executor),
            ACLNN_SUCCESS);
  ASSERT_GT(size, 0u);
  std::vector<unsigned char> workspace(size);
  EXPECT_EQ(aclnnThresholdBackward(workspace.data(), size - 1, executor, nullptr), ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recentError().find("workspace"), std::string::npos);
  EXPECT_EQ(aclnnThresholdBackward(workspace.data(), size, executor, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  EXPECT_EQ(aclnnThresholdBackward(nullptr, 0, nullptr, nullptr), ACLNN_ERR_PARAM_NULLPTR);
  for (float v : o) EXPECT_EQ(v, 1.0f);
}

TEST_F(ThresholdBackwardChecks, OutputsThatWriteOneAddressTwiceAreRejected) {
  // Results would depend on the thread count (or on a last-write-wins order): 161002 naming out.
  std::vector<float> big(1 << 18, 1.0f), grad(512 * 512, 1.0f), self(512 * 512, 1.0f);
  auto g = makeView(grad.data(), ACL_FLOAT, {512, 512});
  auto s = makeView(self.data(), ACL_FLOAT, {512, 512});
  auto overlapping = makeView(big.data(), ACL_FLOAT, {512, 512}, {1, 1}, 0, 1023);  // element (i, j) at i + j
  Call call = plan(g.get(), s.get(), zero.get(), overlapping.get());
  EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(call.message,
                       {"aclnnThresholdBackward", "'out'", "different addresses", "[512, 512]", "strides [1, 1]"}));
  auto broadcastOut = makeView(big.data(), ACL_FLOAT, {4, 8}, {0, 1}, 0, 8);
  auto g48 = makeView(grad.data(), ACL_FLOAT, {4, 8}), s48 = makeView(self.data(), ACL_FLOAT, {4, 8});
  call = plan(g48.get(), s48.get(), zero.get(), broadcastOut.get());
  EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(call.message, {"'out'", "strides [0, 1]"}));
  // Gapped and transposed outputs are fine: every element has its own address.
  auto gapped = makeView(big.data(), ACL_FLOAT, {4, 8}, {1, 9}, 0, 72);
  EXPECT_EQ(plan(g48.get(), s48.get(), zero.get(), gapped.get()).status, ACLNN_SUCCESS);
}

TEST_F(ThresholdBackwardChecks, OutputsPartlyOverlappingAnInputAreRejectedButExactAliasesRun) {
  std::vector<float> buffer(1001, 1.0f), self(1000, 1.0f);
  auto s = makeView(self.data(), ACL_FLOAT, {1000});
  auto grad = makeView(buffer.data(), ACL_FLOAT, {1000}, {1}, 1, 1001);     // elements 1..1000
  auto shifted = makeView(buffer.data(), ACL_FLOAT, {1000}, {1}, 0, 1001);  // elements 0..999
  Call call = plan(grad.get(), s.get(), zero.get(), shifted.get());
  EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(call.message, {"'out'", "overlapping gradOutput", "161002"}));
  auto selfInBuffer = makeView(buffer.data(), ACL_FLOAT, {1000}, {1}, 1, 1001);
  auto gradAlone = makeView(self.data(), ACL_FLOAT, {1000});
  call = plan(gradAlone.get(), selfInBuffer.get(), zero.get(), shifted.get());
  EXPECT_EQ(call.status, ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(call.message, {"overlapping self"}));
  auto same = makeView(buffer.data(), ACL_FLOAT, {1000}, {1}, 1, 1001);
  EXPECT_EQ(plan(grad.get(), s.get(), zero.get(), same.get()).status, ACLNN_SUCCESS) << "in place on gradOutput";
}

TEST_F(ThresholdBackwardChecks, HugeStrideZeroViewsAreRejectedBeforeAnyCopy) {
  // The reliability finding: a 1-d view of 2^62 + 16 fp32 elements with stride 0 (one element of storage) as
  // gradOutput, self and out used to wrap the staging size to a tiny workspace and crash in the strided copy.
  // out writes one address 2^62 + 16 times: the overlap rule rejects it before anything is planned.
  std::vector<float> one(1, 1.0f);
  const int64_t n = (int64_t{1} << 62) + 16;
  auto view = makeView(one.data(), ACL_FLOAT, {n}, {0}, 0, 1);
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  EXPECT_EQ(aclnnThresholdBackwardGetWorkspaceSize(view.get(), view.get(), zero.get(), view.get(), &size, &executor),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_TRUE(mentions(recentError(), {"'out'", "different addresses", "strides [0]"}));
  EXPECT_EQ(executor, nullptr);
}

}  // namespace
}  // namespace gradkit::test
