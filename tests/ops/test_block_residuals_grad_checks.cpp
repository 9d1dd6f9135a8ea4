// aclnnBlockAttentionResidualsGradGetWorkspaceSize: the rule book of src/ops/mhc/block_residuals_check.cpp in its
// order (the 11 tensors, then workspaceSize and executor, 161001; dtypes; ranks; validBlockNum -1, 0 or N; N in
// [0, 128]; input shapes, then each output the shape of its input; formats; gradkit's memory rules; all 161002), code
// and message, under each platform profile. Every accepted call is run; a rejected one must hand out no executor.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "aclnnop/aclnn_block_attention_residuals_grad.h"
#include "ops/block_residuals_check_util.h"

namespace gradkit::test::block_residuals {
namespace {

/** A valid gradient call for a Config; a rule replaces pieces, then call(). */
struct Grad {
  static constexpr const char* kApi = "aclnnBlockAttentionResidualsGrad";

  explicit Grad(const Config& k) : strided(k.strided) {
    partialBlock = make(k.dtype, {k.t, k.h});
    blockRes = make(k.dtype, {k.t, k.n, k.h});
    projWeight = make(k.dtype, {1, k.h});
    normWeight = make(k.dtype, {k.h});
    gradHiddenStates = make(k.dtype, {k.t, k.h});
    invNorm = make(ACL_FLOAT, {k.t, k.n + 1});
    probs = make(ACL_FLOAT, {k.t, k.n + 1});
    gradPartialBlock = make(k.dtype, {k.t, k.h});
    gradBlockRes = make(k.dtype, {k.t, k.n, k.h});
    gradProjWeight = make(k.dtype, {1, k.h});
    gradNormWeight = make(k.dtype, {k.h});
  }

  aclTensor* make(aclDataType dtype, const std::vector<int64_t>& shape) {
    return strided ? pool.makeStrided(dtype, shape) : pool.make(dtype, shape);
  }

  Outcome call() {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    const aclnnStatus status = aclnnBlockAttentionResidualsGradGetWorkspaceSize(
        partialBlock, blockRes, projWeight, normWeight, gradHiddenStates, invNorm, probs, validBlockNum,
        gradPartialBlock, gradBlockRes, gradProjWeight, gradNormWeight, nullSize ? nullptr : &size,
        nullExecutor ? nullptr : &executor);
    return settle(status, size, executor, aclnnBlockAttentionResidualsGrad);
  }

  TensorPool pool;
  bool strided;
  const aclTensor *partialBlock, *blockRes, *projWeight, *normWeight, *gradHiddenStates, *invNorm, *probs;
  const aclTensor *gradPartialBlock, *gradBlockRes, *gradProjWeight, *gradNormWeight;
  int64_t validBlockNum = -1;
  bool nullSize = false, nullExecutor = false;
};

using G = Grad;

class BlockResidualsGradChecks : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    soc_.emplace(GetParam());
    recentError();
  }
  std::optional<mhc::ScopedSoc> soc_;
};

INSTANTIATE_TEST_SUITE_P(BlockResiduals, BlockResidualsGradChecks, ::testing::ValuesIn(mhc::kAllSocs), profileName);

TEST_P(BlockResidualsGradChecks, ValidCallsSucceedAndRun) {
  for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16, ACL_FLOAT}) {
    for (bool strided : {false, true}) {
      EXPECT_EQ(Grad({dtype, 6, 3, 64, strided}).call().status, ACLNN_SUCCESS)
          << recentError() << " dtype " << dtype << " strided " << strided;
    }
  }
  for (int64_t valid : {-1, 0, 3}) {  // 0: upstream's documented default
    Grad c({});
    c.validBlockNum = valid;
    EXPECT_EQ(c.call().status, ACLNN_SUCCESS) << valid << ": " << recentError();
  }
  // N = 0 and 128, T = 0 (the weight gradients zero-filled), H = 0 (nothing to compute), T = H = 0.
  for (const Config& k : {Config{ACL_BF16, 4, 0, 16}, Config{ACL_BF16, 2, 128, 16}, Config{ACL_BF16, 0, 3, 64},
                          Config{ACL_FLOAT, 5, 2, 0}, Config{ACL_FLOAT16, 0, 0, 0}}) {
    EXPECT_EQ(Grad(k).call().status, ACLNN_SUCCESS) << recentError() << " T " << k.t << " N " << k.n << " H " << k.h;
  }
  Grad zeroN({ACL_BF16, 4, 0, 16});
  zeroN.validBlockNum = 0;  // 0 is also N here
  EXPECT_EQ(zeroN.call().status, ACLNN_SUCCESS);
}

TEST_P(BlockResidualsGradChecks, NullPointersGive161001) {
  const std::string nonNull = "expected a non-null pointer";
  expectEachRejected<G>({
      {"partialBlock", null(&G::partialBlock), kNull, {"'partialBlock'", nonNull, "given nullptr"}},
      {"blockRes", null(&G::blockRes), kNull, {"'blockRes'", nonNull}},
      {"projWeight", null(&G::projWeight), kNull, {"'projWeight'", nonNull}},
      {"normWeight", null(&G::normWeight), kNull, {"'normWeight'", nonNull}},
      {"gradHiddenStates", null(&G::gradHiddenStates), kNull, {"'gradHiddenStates'", nonNull}},
      {"invNorm", null(&G::invNorm), kNull, {"'invNorm'", nonNull}},
      {"probs", null(&G::probs), kNull, {"'probs'", nonNull}},
      {"gradPartialBlock", null(&G::gradPartialBlock), kNull, {"'gradPartialBlock'", nonNull}},
      {"gradBlockRes", null(&G::gradBlockRes), kNull, {"'gradBlockRes'", nonNull}},
      {"gradProjWeight", null(&G::gradProjWeight), kNull, {"'gradProjWeight'", nonNull}},
      {"gradNormWeight", null(&G::gradNormWeight), kNull, {"'gradNormWeight'", nonNull}},
      {"workspaceSize", [](G& c) { c.nullSize = c.nullExecutor = true; }, kNull, {"'workspaceSize'", nonNull}},
      {"executor", [](G& c) { c.nullExecutor = true; }, kNull, {"'executor'", nonNull}},
      // upstream's order: every tensor before workspaceSize
      {"tensors first", [](G& c) { c.nullSize = true, c.gradNormWeight = nullptr; }, kNull, {"'gradNormWeight'"}},
  });
}

TEST_P(BlockResidualsGradChecks, Dtypes) {
  const std::string set = "dtype in {FLOAT16, BFLOAT16, FLOAT}", same = "dtype BFLOAT16 (the dtype of partialBlock)";
  expectEachRejected<G>({
      {"partialBlock int32",
       replace(&G::partialBlock, ACL_INT32, {6, 64}),
       kInvalid,
       {"'partialBlock'", set, "given dtype INT32"}},
      {"normWeight double", replace(&G::normWeight, ACL_DOUBLE, {64}), kInvalid, {"'normWeight'", set, "DOUBLE"}},
      {"gradHiddenStates int8",
       replace(&G::gradHiddenStates, ACL_INT8, {6, 64}),
       kInvalid,
       {"'gradHiddenStates'", set, "INT8"}},
      {"blockRes fp16",
       replace(&G::blockRes, ACL_FLOAT16, {6, 3, 64}),
       kInvalid,
       {"'blockRes'", same, "given dtype FLOAT16"}},
      {"projWeight fp32", replace(&G::projWeight, ACL_FLOAT, {1, 64}), kInvalid, {"'projWeight'", same}},
      {"gradHiddenStates fp32",
       replace(&G::gradHiddenStates, ACL_FLOAT, {6, 64}),
       kInvalid,
       {"'gradHiddenStates'", same, "given dtype FLOAT"}},
      {"invNorm bf16",
       replace(&G::invNorm, ACL_BF16, {6, 4}),
       kInvalid,
       {"'invNorm'", "dtype in {FLOAT}", "given dtype BFLOAT16"}},
      {"probs fp16", replace(&G::probs, ACL_FLOAT16, {6, 4}), kInvalid, {"'probs'", "dtype in {FLOAT}"}},
      {"gradPartialBlock fp16",
       replace(&G::gradPartialBlock, ACL_FLOAT16, {6, 64}),
       kInvalid,
       {"'gradPartialBlock'", same, "given dtype FLOAT16"}},
      {"gradBlockRes fp32", replace(&G::gradBlockRes, ACL_FLOAT, {6, 3, 64}), kInvalid, {"'gradBlockRes'", same}},
      {"gradProjWeight fp32", replace(&G::gradProjWeight, ACL_FLOAT, {1, 64}), kInvalid, {"'gradProjWeight'", same}},
      {"gradNormWeight int32",
       replace(&G::gradNormWeight, ACL_INT32, {64}),
       kInvalid,
       {"'gradNormWeight'", same, "given dtype INT32"}},
      // the five in the set, before any equality; the saved tensors before the outputs
      {"set before equal",
       [](G& c) {
         c.blockRes = c.pool.make(ACL_FLOAT16, {6, 3, 64});
         c.gradHiddenStates = c.pool.make(ACL_INT32, {6, 64});
       },
       kInvalid,
       {"'gradHiddenStates'", set}},
      {"saved before outputs",
       [](G& c) {
         c.gradPartialBlock = c.pool.make(ACL_FLOAT, {6, 64});
         c.probs = c.pool.make(ACL_BF16, {6, 4});
       },
       kInvalid,
       {"'probs'"}},
  });
}

TEST_P(BlockResidualsGradChecks, Ranks) {
  expectEachRejected<G>({
      {"partialBlock",
       replace(&G::partialBlock, ACL_BF16, {384}),
       kInvalid,
       {"'partialBlock'", "2 dims ([T, H])", "given 1 dims [384]"}},
      {"blockRes", replace(&G::blockRes, ACL_BF16, {6, 192}), kInvalid, {"'blockRes'", "3 dims ([T, N, H])"}},
      {"projWeight [H]",
       replace(&G::projWeight, ACL_BF16, {64}),
       kInvalid,
       {"'projWeight'", "2 dims ([1, H])", "given 1 dims [64]"}},
      {"normWeight", replace(&G::normWeight, ACL_BF16, {1, 64}), kInvalid, {"'normWeight'", "1 dims ([H])"}},
      {"gradHiddenStates",
       replace(&G::gradHiddenStates, ACL_BF16, {1, 6, 64}),
       kInvalid,
       {"'gradHiddenStates'", "2 dims ([T, H])", "given 3 dims [1, 6, 64]"}},
      {"invNorm", replace(&G::invNorm, ACL_FLOAT, {24}), kInvalid, {"'invNorm'", "2 dims ([T, N + 1])"}},
      {"probs", replace(&G::probs, ACL_FLOAT, {6, 4, 1}), kInvalid, {"'probs'", "2 dims ([T, N + 1])"}},
      {"gradPartialBlock",
       replace(&G::gradPartialBlock, ACL_BF16, {384}),
       kInvalid,
       {"'gradPartialBlock'", "2 dims ([T, H] as partialBlock)"}},
      {"gradBlockRes",
       replace(&G::gradBlockRes, ACL_BF16, {18, 64}),
       kInvalid,
       {"'gradBlockRes'", "3 dims ([T, N, H] as blockRes)"}},
      {"gradProjWeight",
       replace(&G::gradProjWeight, ACL_BF16, {64}),
       kInvalid,
       {"'gradProjWeight'", "2 dims ([1, H] as projWeight)"}},
      {"gradNormWeight",
       replace(&G::gradNormWeight, ACL_BF16, {1, 64}),
       kInvalid,
       {"'gradNormWeight'", "1 dims ([H] as normWeight)"}},
  });
}

TEST_P(BlockResidualsGradChecks, ValidBlockNumAndN) {
  const std::string valid = "-1, 0 (upstream's documented default) or N = 3 (blockRes dim 1), each meaning every block";
  expectEachRejected<G>({
      {"validBlockNum 2", [](G& c) { c.validBlockNum = 2; }, kInvalid, {"'validBlockNum'", valid, "given 2"}},
      {"validBlockNum -2", [](G& c) { c.validBlockNum = -2; }, kInvalid, {"'validBlockNum'", "given -2"}},
      {"validBlockNum 4", [](G& c) { c.validBlockNum = 4; }, kInvalid, {"'validBlockNum'", "given 4"}},
      {"N 129",
       [](G&) {},
       kInvalid,
       {"'blockRes'", "N (dim 1) in [0, 128]", "given N = 129, shape [2, 129, 16]"},
       Config{ACL_BF16, 2, 129, 16}},
  });
}

TEST_P(BlockResidualsGradChecks, Shapes) {
  const std::string saved = "([T, N + 1] with T of partialBlock, N of blockRes)";
  expectEachRejected<G>({
      {"blockRes",
       replace(&G::blockRes, ACL_BF16, {5, 3, 64}),
       kInvalid,
       {"'blockRes'", "shape [6, 3, 64] ([T, N, H] with T, H of partialBlock)", "given shape [5, 3, 64]"}},
      {"projWeight",
       replace(&G::projWeight, ACL_BF16, {2, 64}),
       kInvalid,
       {"'projWeight'", "shape [1, 64] ([1, H] with H of partialBlock)", "given shape [2, 64]"}},
      {"normWeight",
       replace(&G::normWeight, ACL_BF16, {63}),
       kInvalid,
       {"'normWeight'", "shape [64] ([H] with H of partialBlock)", "given shape [63]"}},
      {"gradHiddenStates",
       replace(&G::gradHiddenStates, ACL_BF16, {6, 32}),
       kInvalid,
       {"'gradHiddenStates'", "shape [6, 64] ([T, H] of partialBlock)", "given shape [6, 32]"}},
      {"invNorm", replace(&G::invNorm, ACL_FLOAT, {6, 3}), kInvalid, {"'invNorm'", "shape [6, 4] " + saved}},
      {"probs", replace(&G::probs, ACL_FLOAT, {5, 4}), kInvalid, {"'probs'", "shape [6, 4]", "given shape [5, 4]"}},
      {"gradPartialBlock",
       replace(&G::gradPartialBlock, ACL_BF16, {6, 63}),
       kInvalid,
       {"'gradPartialBlock'", "shape [6, 64] (the shape of partialBlock)", "given shape [6, 63]"}},
      {"gradBlockRes",
       replace(&G::gradBlockRes, ACL_BF16, {6, 2, 64}),
       kInvalid,
       {"'gradBlockRes'", "shape [6, 3, 64] (the shape of blockRes)"}},
      {"gradProjWeight",
       replace(&G::gradProjWeight, ACL_BF16, {1, 63}),
       kInvalid,
       {"'gradProjWeight'", "shape [1, 64] (the shape of projWeight)"}},
      {"gradNormWeight",
       replace(&G::gradNormWeight, ACL_BF16, {65}),
       kInvalid,
       {"'gradNormWeight'", "shape [64] (the shape of normWeight)", "given shape [65]"}},
  });
}

TEST_P(BlockResidualsGradChecks, FormatsAndMemoryRules) {
  const std::string format = "a public format";
  expectEachRejected<G>({
      {"gradHiddenStates NZ",
       replace(&G::gradHiddenStates, ACL_BF16, {6, 64}, ACL_FORMAT_FRACTAL_NZ),
       kInvalid,
       {"'gradHiddenStates'", format, "given format FRACTAL_NZ"}},
      {"invNorm NC1HWC0", replace(&G::invNorm, ACL_FLOAT, {6, 4}, ACL_FORMAT_NC1HWC0), kInvalid, {"'invNorm'", format}},
      {"gradBlockRes NZ",
       replace(&G::gradBlockRes, ACL_BF16, {6, 3, 64}, ACL_FORMAT_FRACTAL_NZ),
       kInvalid,
       {"'gradBlockRes'", format}},
      {"gradPartialBlock over partialBlock",
       [](G& c) { c.gradPartialBlock = c.partialBlock; },
       kInvalid,
       {"'gradPartialBlock'", "memory that does not overlap the input partialBlock"}},
      {"gradNormWeight over probs",
       [](G& c) {
         c.probs = c.pool.alias(c.gradNormWeight, ACL_FLOAT, {6, 4});
       },
       kInvalid,
       {"'gradNormWeight'", "memory that does not overlap the input probs"}},
      {"gradNormWeight over gradProjWeight",
       [](G& c) { c.gradNormWeight = c.pool.alias(c.gradProjWeight, ACL_BF16, {64}); },
       kInvalid,
       {"'gradNormWeight'", "memory that does not overlap the output gradProjWeight"}},
      {"gradBlockRes stride 0",
       [](G& c) {
         c.gradBlockRes = c.pool.make(ACL_BF16, {6, 3, 64}, {64, 0, 1});
       },
       kInvalid,
       {"'gradBlockRes'", "all at different addresses"}},
  });
}

TEST_P(BlockResidualsGradChecks, RulesRunInUpstreamsOrder) {
  expectEachRejected<G>({
      {"nulls before dtypes",
       [](G& c) {
         c.partialBlock = c.pool.make(ACL_INT32, {6, 64}), c.probs = nullptr;
       },
       kNull,
       {"'probs'"}},
      {"dtypes before ranks",
       [](G& c) {
         c.partialBlock = c.pool.make(ACL_BF16, {6});
         c.gradNormWeight = c.pool.make(ACL_FLOAT, {64});
       },
       kInvalid,
       {"'gradNormWeight'", "dtype BFLOAT16"}},
      {"ranks before validBlockNum",
       [](G& c) { c.validBlockNum = 7, c.probs = c.pool.make(ACL_FLOAT, {24}); },
       kInvalid,
       {"'probs'", "2 dims"}},
      {"validBlockNum before N",
       [](G& c) { c.validBlockNum = 7; },
       kInvalid,
       {"'validBlockNum'", "N = 129"},
       Config{ACL_BF16, 2, 129, 16}},
      {"N before shapes",
       replace(&G::probs, ACL_FLOAT, {1, 1}),
       kInvalid,
       {"'blockRes'", "[0, 128]"},
       Config{ACL_BF16, 2, 129, 16}},
      {"inputs before outputs",
       [](G& c) {
         c.gradPartialBlock = c.pool.make(ACL_BF16, {6, 1});
         c.probs = c.pool.make(ACL_FLOAT, {6, 5});
       },
       kInvalid,
       {"'probs'", "shape [6, 4]"}},
      {"shapes before formats",
       [](G& c) {
         c.gradNormWeight = c.pool.make(ACL_BF16, {63});
         c.invNorm = c.pool.make(ACL_FLOAT, {6, 4}, {}, ACL_FORMAT_FRACTAL_NZ);
       },
       kInvalid,
       {"'gradNormWeight'", "shape [64]"}},
      {"formats before memory",
       [](G& c) {
         c.gradPartialBlock = c.partialBlock;
         c.gradProjWeight = c.pool.make(ACL_BF16, {1, 64}, {}, ACL_FORMAT_NC1HWC0);
       },
       kInvalid,
       {"'gradProjWeight'", "a public format"}},
  });
}

TEST_P(BlockResidualsGradChecks, AWrongExpectationFails) {
  EXPECT_NONFATAL_FAILURE(expectEachRejected<G>({{"wrong code", null(&G::probs), kInvalid, {"'probs'"}}}),
                          "status 161001, expected 161002");
  EXPECT_NONFATAL_FAILURE(expectEachRejected<G>({{"a valid call", [](G&) {}, kInvalid, {}}}), "status 0");
}

}  // namespace
}  // namespace gradkit::test::block_residuals
