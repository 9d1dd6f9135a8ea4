// aclnnBlockAttentionResidualsGetWorkspaceSize: the rule book of src/ops/mhc/block_residuals_check.cpp in its order
// (workspaceSize / executor 161001; null tensors 161002 as upstream's code answers; dtypes; ranks; validBlockNum; H
// and N; shapes; normEps; formats; gradkit's memory rules), code and message, under each platform profile (the
// operator exists in all three). Every accepted call is run; a rejected one must hand out no executor.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "aclnnop/aclnn_block_attention_residuals.h"
#include "ops/block_residuals_check_util.h"

namespace gradkit::test::block_residuals {
namespace {

/** A valid forward call for a Config; a rule replaces pieces, then call(). */
struct Forward {
  static constexpr const char* kApi = "aclnnBlockAttentionResiduals";

  explicit Forward(const Config& k) : strided(k.strided) {
    partialBlock = make(k.dtype, {k.t, k.h});
    blockRes = make(k.dtype, {k.t, k.n, k.h});
    projWeight = make(k.dtype, {k.h});
    normWeight = make(k.dtype, {k.h});
    hiddenStates = make(k.dtype, {k.t, k.h});
    invNorm = make(ACL_FLOAT, {k.t, k.n + 1});
    probs = make(ACL_FLOAT, {k.t, k.n + 1});
  }

  aclTensor* make(aclDataType dtype, const std::vector<int64_t>& shape) {
    return strided ? pool.makeStrided(dtype, shape) : pool.make(dtype, shape);
  }

  Outcome call() {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    const aclnnStatus status = aclnnBlockAttentionResidualsGetWorkspaceSize(
        partialBlock, blockRes, projWeight, normWeight, validBlockNum, normEps, needBackward, hiddenStates, invNorm,
        probs, nullSize ? nullptr : &size, nullExecutor ? nullptr : &executor);
    return settle(status, size, executor, aclnnBlockAttentionResiduals);
  }

  TensorPool pool;
  bool strided;
  const aclTensor *partialBlock, *blockRes, *projWeight, *normWeight;
  aclTensor *hiddenStates, *invNorm, *probs;
  int64_t validBlockNum = -1;
  double normEps = 1e-6;
  bool needBackward = true, nullSize = false, nullExecutor = false;
};

using R = Rule<Forward>;
using F = Forward;

/** The profile is set for each test (the operator exists in every one). */
class BlockResidualsChecks : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    soc_.emplace(GetParam());
    recentError();
  }
  std::optional<mhc::ScopedSoc> soc_;
};

INSTANTIATE_TEST_SUITE_P(BlockResiduals, BlockResidualsChecks, ::testing::ValuesIn(mhc::kAllSocs), profileName);

TEST_P(BlockResidualsChecks, ValidCallsSucceedAndRun) {
  for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16, ACL_FLOAT}) {
    for (bool strided : {false, true}) {
      for (bool saves : {true, false}) {
        Forward c({dtype, 6, 3, 64, strided});
        c.needBackward = saves;
        c.projWeight = c.make(dtype, {1, 64});  // [1, H] as well as [H]
        EXPECT_EQ(c.call().status, ACLNN_SUCCESS) << recentError() << " dtype " << dtype << " strided " << strided;
      }
    }
  }
  // validBlockNum N, the limits N = 1 / 100 and H = 1, and an empty call (T = 0: no work, workspace 0).
  Forward byN({});
  byN.validBlockNum = 3;
  EXPECT_EQ(byN.call().status, ACLNN_SUCCESS);
  EXPECT_EQ(Forward({ACL_BF16, 2, 1, 64}).call().status, ACLNN_SUCCESS);
  EXPECT_EQ(Forward({ACL_BF16, 2, 100, 16}).call().status, ACLNN_SUCCESS);
  EXPECT_EQ(Forward({ACL_FLOAT, 2, 3, 1}).call().status, ACLNN_SUCCESS);
  Forward empty({ACL_BF16, 0, 3, 64});
  uint64_t size = 7;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(aclnnBlockAttentionResidualsGetWorkspaceSize(empty.partialBlock, empty.blockRes, empty.projWeight,
                                                         empty.normWeight, -1, 1e-6, true, empty.hiddenStates,
                                                         empty.invNorm, empty.probs, &size, &executor),
            ACLNN_SUCCESS)
      << recentError();
  EXPECT_EQ(size, 0u);
  EXPECT_EQ(aclnnBlockAttentionResiduals(nullptr, 0, executor, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS);
  // An executor may be destroyed unrun.
  Forward unrun({});
  ASSERT_EQ(aclnnBlockAttentionResidualsGetWorkspaceSize(unrun.partialBlock, unrun.blockRes, unrun.projWeight,
                                                         unrun.normWeight, -1, 1e-6, true, unrun.hiddenStates,
                                                         unrun.invNorm, unrun.probs, &size, &executor),
            ACLNN_SUCCESS);
  EXPECT_EQ(aclDestroyAclOpExecutor(executor), ACLNN_SUCCESS);
}

TEST_P(BlockResidualsChecks, NullPointers) {
  const std::string nonNull = "expected a non-null pointer";
  expectEachRejected<F>({
      {"workspaceSize",
       [](F& c) { c.nullSize = c.nullExecutor = true, c.partialBlock = nullptr; },
       kNull,
       {"'workspaceSize'", nonNull, "given nullptr"}},
      {"executor", [](F& c) { c.nullExecutor = true, c.partialBlock = nullptr; }, kNull, {"'executor'", nonNull}},
      // upstream's op-api answers a null tensor with 161002 (its documentation says 161001)
      {"partialBlock", null(&F::partialBlock), kInvalid, {"'partialBlock'", nonNull, "given nullptr"}},
      {"blockRes", null(&F::blockRes), kInvalid, {"'blockRes'", nonNull}},
      {"projWeight", null(&F::projWeight), kInvalid, {"'projWeight'", nonNull}},
      {"normWeight", null(&F::normWeight), kInvalid, {"'normWeight'", nonNull}},
      {"hiddenStates", null(&F::hiddenStates), kInvalid, {"'hiddenStates'", nonNull}},
      {"invNorm", null(&F::invNorm), kInvalid, {"'invNorm'", "a non-null pointer (needBackward is true)"}},
      {"probs", null(&F::probs), kInvalid, {"'probs'", "(needBackward is true)", "given nullptr"}},
      {"first of several",
       [](F& c) { c.normWeight = c.blockRes = nullptr, c.probs = nullptr; },
       kInvalid,
       {"'blockRes'"}},
  });
}

TEST_P(BlockResidualsChecks, Dtypes) {
  const std::string set = "dtype in {FLOAT16, BFLOAT16, FLOAT}", same = "dtype BFLOAT16 (the dtype of partialBlock)";
  expectEachRejected<F>({
      {"partialBlock int32",
       replace(&F::partialBlock, ACL_INT32, {6, 64}),
       kInvalid,
       {"'partialBlock'", set, "given dtype INT32"}},
      {"blockRes double", replace(&F::blockRes, ACL_DOUBLE, {6, 3, 64}), kInvalid, {"'blockRes'", set, "DOUBLE"}},
      {"projWeight int8", replace(&F::projWeight, ACL_INT8, {64}), kInvalid, {"'projWeight'", set, "INT8"}},
      {"normWeight int16", replace(&F::normWeight, ACL_INT16, {64}), kInvalid, {"'normWeight'", set, "INT16"}},
      {"hiddenStates double", replace(&F::hiddenStates, ACL_DOUBLE, {6, 64}), kInvalid, {"'hiddenStates'", set}},
      {"blockRes fp16",
       replace(&F::blockRes, ACL_FLOAT16, {6, 3, 64}),
       kInvalid,
       {"'blockRes'", same, "given dtype FLOAT16"}},
      {"projWeight fp32", replace(&F::projWeight, ACL_FLOAT, {64}), kInvalid, {"'projWeight'", same, "FLOAT"}},
      {"normWeight fp16", replace(&F::normWeight, ACL_FLOAT16, {64}), kInvalid, {"'normWeight'", same}},
      {"hiddenStates fp32", replace(&F::hiddenStates, ACL_FLOAT, {6, 64}), kInvalid, {"'hiddenStates'", same}},
      {"invNorm bf16",
       replace(&F::invNorm, ACL_BF16, {6, 4}),
       kInvalid,
       {"'invNorm'", "dtype in {FLOAT}", "given dtype BFLOAT16"}},
      {"probs fp16", replace(&F::probs, ACL_FLOAT16, {6, 4}), kInvalid, {"'probs'", "dtype in {FLOAT}", "FLOAT16"}},
      // every dtype in the set before any equality: a mismatched blockRes and an INT32 hiddenStates
      {"set before equal",
       [](F& c) {
         c.blockRes = c.pool.make(ACL_FLOAT, {6, 3, 64});
         c.hiddenStates = c.pool.make(ACL_INT32, {6, 64});
       },
       kInvalid,
       {"'hiddenStates'", set}},
      {"fp32 main dtype",
       replace(&F::normWeight, ACL_BF16, {64}),
       kInvalid,
       {"'normWeight'", "dtype FLOAT (the dtype of partialBlock)"},
       Config{ACL_FLOAT}},
  });
}

TEST_P(BlockResidualsChecks, Ranks) {
  expectEachRejected<F>({
      {"partialBlock 3",
       replace(&F::partialBlock, ACL_BF16, {1, 6, 64}),
       kInvalid,
       {"'partialBlock'", "2 dims ([T, H])", "given 3 dims [1, 6, 64]"}},
      {"blockRes 2",
       replace(&F::blockRes, ACL_BF16, {6, 192}),
       kInvalid,
       {"'blockRes'", "3 dims ([T, N, H])", "given 2 dims [6, 192]"}},
      {"projWeight 3",
       replace(&F::projWeight, ACL_BF16, {1, 1, 64}),
       kInvalid,
       {"'projWeight'", "1 or 2 dims ([H] or [1, H])", "given 3 dims"}},
      {"normWeight 2", replace(&F::normWeight, ACL_BF16, {1, 64}), kInvalid, {"'normWeight'", "1 dims ([H])"}},
      {"hiddenStates 1",
       replace(&F::hiddenStates, ACL_BF16, {384}),
       kInvalid,
       {"'hiddenStates'", "2 dims ([T, H])", "given 1 dims [384]"}},
      {"invNorm 1", replace(&F::invNorm, ACL_FLOAT, {24}), kInvalid, {"'invNorm'", "2 dims ([T, N + 1])"}},
      {"probs 3", replace(&F::probs, ACL_FLOAT, {6, 4, 1}), kInvalid, {"'probs'", "2 dims ([T, N + 1])"}},
      // both saved tensors' ranks before their shapes
      {"ranks before shapes",
       [](F& c) {
         c.invNorm = c.pool.make(ACL_FLOAT, {6, 5});
         c.probs = c.pool.make(ACL_FLOAT, {24});
       },
       kInvalid,
       {"'probs'", "2 dims"}},
  });
}

TEST_P(BlockResidualsChecks, ValidBlockNumAndSizes) {
  const std::string valid = "-1 (default, use N) or equal to N = 3 (blockRes dim 1)";
  expectEachRejected<F>({
      {"validBlockNum 2", [](F& c) { c.validBlockNum = 2; }, kInvalid, {"'validBlockNum'", valid, "given 2"}},
      {"validBlockNum 0", [](F& c) { c.validBlockNum = 0; }, kInvalid, {"'validBlockNum'", valid, "given 0"}},
      {"validBlockNum -2", [](F& c) { c.validBlockNum = -2; }, kInvalid, {"'validBlockNum'", "given -2"}},
      {"H 0",
       [](F&) {},
       kInvalid,
       {"'partialBlock'", "H (dim 1) >= 1", "given H = 0, shape [6, 0]"},
       Config{ACL_BF16, 6, 3, 0}},
      {"N 0",
       [](F&) {},
       kInvalid,
       {"'blockRes'", "N (dim 1) in [1, 100]", "given N = 0, shape [6, 0, 64]"},
       Config{ACL_BF16, 6, 0, 64}},
      {"N 101",
       [](F&) {},
       kInvalid,
       {"'blockRes'", "N (dim 1) in [1, 100]", "given N = 101"},
       Config{ACL_BF16, 2, 101, 16}},
      // validBlockNum is judged before N's range: 5 with N = 0 names validBlockNum
      {"validBlockNum first",
       [](F& c) { c.validBlockNum = 5; },
       kInvalid,
       {"'validBlockNum'", "N = 0"},
       Config{ACL_BF16, 6, 0, 64}},
  });
}

TEST_P(BlockResidualsChecks, Shapes) {
  expectEachRejected<F>({
      {"blockRes T",
       replace(&F::blockRes, ACL_BF16, {5, 3, 64}),
       kInvalid,
       {"'blockRes'", "shape [6, 3, 64] ([T, N, H] with T, H of partialBlock)", "given shape [5, 3, 64]"}},
      {"blockRes H", replace(&F::blockRes, ACL_BF16, {6, 3, 65}), kInvalid, {"'blockRes'", "given shape [6, 3, 65]"}},
      {"projWeight H",
       replace(&F::projWeight, ACL_BF16, {63}),
       kInvalid,
       {"'projWeight'", "shape [64] ([H] or [1, H] with H of partialBlock)", "given shape [63]"}},
      {"projWeight [2, H]",
       replace(&F::projWeight, ACL_BF16, {2, 64}),
       kInvalid,
       {"'projWeight'", "shape [1, 64]", "given shape [2, 64]"}},
      {"normWeight",
       replace(&F::normWeight, ACL_BF16, {65}),
       kInvalid,
       {"'normWeight'", "shape [64] ([H] with H of partialBlock)", "given shape [65]"}},
      {"hiddenStates",
       replace(&F::hiddenStates, ACL_BF16, {6, 32}),
       kInvalid,
       {"'hiddenStates'", "shape [6, 64] ([T, H] of partialBlock)", "given shape [6, 32]"}},
      {"invNorm",
       replace(&F::invNorm, ACL_FLOAT, {6, 3}),
       kInvalid,
       {"'invNorm'", "shape [6, 4] ([T, N + 1] with T of partialBlock, N of blockRes)", "given shape [6, 3]"}},
      {"probs", replace(&F::probs, ACL_FLOAT, {7, 4}), kInvalid, {"'probs'", "shape [6, 4]", "given shape [7, 4]"}},
  });
}

TEST_P(BlockResidualsChecks, NormEpsMustBePositive) {
  expectEachRejected<F>({
      {"0", [](F& c) { c.normEps = 0.0; }, kInvalid, {"'normEps'", "a value > 0", "given 0"}},
      {"negative", [](F& c) { c.normEps = -1e-6; }, kInvalid, {"'normEps'", "given -1e-06"}},
      {"NaN", [](F& c) { c.normEps = std::nan(""); }, kInvalid, {"'normEps'", "given nan"}},
  });
  Forward tiny({});
  tiny.normEps = 1e-300;  // positive, 0 in fp32: accepted
  EXPECT_EQ(tiny.call().status, ACLNN_SUCCESS);
}

TEST_P(BlockResidualsChecks, FormatsAndMemoryRules) {
  const std::string format = "a public format";
  expectEachRejected<F>({
      {"partialBlock NZ",
       replace(&F::partialBlock, ACL_BF16, {6, 64}, ACL_FORMAT_FRACTAL_NZ),
       kInvalid,
       {"'partialBlock'", format, "given format FRACTAL_NZ"}},
      {"hiddenStates NC1HWC0",
       replace(&F::hiddenStates, ACL_BF16, {6, 64}, ACL_FORMAT_NC1HWC0),
       kInvalid,
       {"'hiddenStates'", format, "NC1HWC0"}},
      {"probs NZ", replace(&F::probs, ACL_FLOAT, {6, 4}, ACL_FORMAT_FRACTAL_NZ), kInvalid, {"'probs'", format}},
      {"hiddenStates over partialBlock",
       [](F& c) { c.hiddenStates = const_cast<aclTensor*>(c.partialBlock); },
       kInvalid,
       {"'hiddenStates'", "memory that does not overlap the input partialBlock"}},
      {"probs over invNorm",
       [](F& c) { c.probs = c.invNorm; },
       kInvalid,
       {"'probs'", "memory that does not overlap the output invNorm"}},
      {"invNorm over normWeight (another dtype)",
       [](F& c) {
         c.invNorm = c.pool.alias(c.normWeight, ACL_FLOAT, {6, 4});
       },
       kInvalid,
       {"'invNorm'", "memory that does not overlap the input normWeight"}},
      {"hiddenStates stride 0",
       [](F& c) {
         c.hiddenStates = c.pool.make(ACL_BF16, {6, 64}, {0, 1});
       },
       kInvalid,
       {"'hiddenStates'", "all at different addresses", "strides [0, 1]"}},
  });
  // Inputs may share memory: normWeight and projWeight one tensor.
  Forward shared({});
  shared.projWeight = shared.normWeight;
  EXPECT_EQ(shared.call().status, ACLNN_SUCCESS) << recentError();
  // Tensors over freed memory.
  void* block = nullptr;
  ASSERT_EQ(aclrtMalloc(&block, 64 * 2, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  Forward freed({});
  freed.normWeight = freed.pool.view(block, ACL_BF16, {64});
  EXPECT_EQ(freed.call().status, ACLNN_SUCCESS) << recentError();
  ASSERT_EQ(aclrtFree(block), ACL_SUCCESS);
  EXPECT_TRUE(rejects(freed.call(), kInvalid, F::kApi, {"'normWeight'", "data in live memory"}));
}

TEST_P(BlockResidualsChecks, WithoutNeedBackwardInvNormAndProbsAreNotLookedAt) {
  const std::vector<std::function<void(F&)>> ignored = {
      null(&F::invNorm),
      replace(&F::probs, ACL_BF16, {6, 4}),
      replace(&F::invNorm, ACL_FLOAT, {3, 3, 3}),
      replace(&F::probs, ACL_FLOAT, {6, 4}, ACL_FORMAT_FRACTAL_NZ),
      [](F& c) { c.probs = c.hiddenStates; },
  };
  for (size_t i = 0; i < ignored.size(); ++i) {
    Forward c({});
    ignored[i](c);
    c.needBackward = false;
    EXPECT_EQ(c.call().status, ACLNN_SUCCESS) << "case " << i << ": " << recentError();
  }
}

TEST_P(BlockResidualsChecks, RulesRunInUpstreamsOrder) {
  // Each row breaks two rules; the earlier one is named.
  expectEachRejected<F>({
      {"nulls before dtypes",
       [](F& c) {
         c.partialBlock = c.pool.make(ACL_INT32, {6, 64}), c.probs = nullptr;
       },
       kInvalid,
       {"'probs'"}},
      {"dtypes before ranks",
       [](F& c) {
         c.partialBlock = c.pool.make(ACL_BF16, {6});
         c.probs = c.pool.make(ACL_BF16, {6, 4});
       },
       kInvalid,
       {"'probs'", "dtype in {FLOAT}"}},
      {"ranks before validBlockNum",
       [](F& c) { c.validBlockNum = 9, c.hiddenStates = c.pool.make(ACL_BF16, {6}); },
       kInvalid,
       {"'hiddenStates'", "2 dims"}},
      {"N before shapes",
       replace(&F::hiddenStates, ACL_BF16, {6, 5}),
       kInvalid,
       {"'blockRes'", "[1, 100]"},
       Config{ACL_BF16, 6, 0, 64}},
      {"shapes before normEps",
       [](F& c) {
         c.normEps = 0, c.probs = c.pool.make(ACL_FLOAT, {6, 5});
       },
       kInvalid,
       {"'probs'", "shape [6, 4]"}},
      {"normEps before formats",
       [](F& c) {
         c.normEps = -1, c.partialBlock = c.pool.make(ACL_BF16, {6, 64}, {}, ACL_FORMAT_FRACTAL_NZ);
       },
       kInvalid,
       {"'normEps'"}},
      {"formats before memory",
       [](F& c) {
         c.hiddenStates = const_cast<aclTensor*>(c.partialBlock);
         c.invNorm = c.pool.make(ACL_FLOAT, {6, 4}, {}, ACL_FORMAT_NC1HWC0);
       },
       kInvalid,
       {"'invNorm'", "a public format"}},
  });
}

TEST_P(BlockResidualsChecks, AWrongExpectationFails) {
  // The judges must be able to fail: a row expecting the wrong code, and one expecting the wrong argument.
  EXPECT_NONFATAL_FAILURE(expectEachRejected<F>({{"wrong code", [](F& c) { c.normEps = 0; }, kNull, {"'normEps'"}}}),
                          "wrong code");
  EXPECT_NONFATAL_FAILURE(
      expectEachRejected<F>({{"wrong argument", [](F& c) { c.normEps = 0; }, kInvalid, {"'normWeight'"}}}),
      "does not mention \"'normWeight'\"");
  Forward c({});
  c.normEps = 0;
  const Outcome outcome = c.call();
  EXPECT_FALSE(rejects(outcome, kInvalid, F::kApi, {"given 1"}));
  EXPECT_FALSE(rejects(outcome, kInvalid, "aclnnBlockAttentionResidualsGrad", {}));
  EXPECT_TRUE(rejects(outcome, kInvalid, F::kApi, {"'normEps'", "given 0"}));
}

}  // namespace
}  // namespace gradkit::test::block_residuals
