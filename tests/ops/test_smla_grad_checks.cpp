// aclnnSparseFlashMlaGrad's argument rules (src/ops/sparse_attention/smla_grad_check.cpp), each broken on the valid
// call of smla_grad_call.h in the check's order, with its status (161001 for the null checks, 161002 for every other)
// and the argument, the expected and the given value its message names; the A2/A3 profile's rules under
// gradkitSetSoc; empty optional tensors read as absent; the first phase's workspace bounded by the rows actually used.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "gradkit/gradkit.h"
#include "ops/block_residuals_check_util.h"
#include "ops/smla_grad_call.h"
#include "runtime/runtime.h"

namespace gradkit::test::smla {
namespace {

using block_residuals::kInvalid;
using block_residuals::kNull;
using block_residuals::rejects;

struct Rule {
  const char* name;
  std::function<void(SmlaGradCall&)> breakIt;
  aclnnStatus code;
  std::vector<std::string> fragments;
};

void expectRejected(const std::vector<Rule>& rules) {
  for (const Rule& rule : rules) {
    SmlaGradCall call;
    rule.breakIt(call);
    EXPECT_TRUE(rejects(call.call(), rule.code, SmlaGradCall::kApi, rule.fragments)) << rule.name;
  }
}

/** query, dOut, out, dQuery, lse, sinks and dSinks for `n1` heads of `d`. */
void reshapeQuery(SmlaGradCall& c, int64_t n1, int64_t d) {
  for (aclTensor** t : {&c.query, &c.dOut, &c.out, &c.dQuery}) *t = c.pool.make(ACL_BF16, {6, n1, d});
  c.lse = c.pool.make(ACL_FLOAT, {1, 6, n1});
  c.sinks = c.pool.make(ACL_FLOAT, {n1});
  c.dSinks = c.pool.make(ACL_FLOAT, {n1});
}

class SmlaGradChecks : public ::testing::Test {
 protected:
  void TearDown() override { rt::clearSocOverride(); }
};

TEST_F(SmlaGradChecks, TheBaseCallsAreAcceptedAndRun) {
  SmlaGradCall call;
  EXPECT_EQ(call.run(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  SmlaGradCall fp16(ACL_FLOAT16, 2);
  EXPECT_EQ(fp16.run(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  SmlaGradCall bsnd;
  bsnd.toBsnd();
  EXPECT_EQ(bsnd.run(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  SmlaGradCall oriListed;
  oriListed.withOriIndices();
  EXPECT_EQ(oriListed.run(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  SmlaGradCall swa;
  swa.withoutCmp();
  EXPECT_EQ(swa.run(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  SmlaGradCall bare;  // only the required tensors and the prefix sums: no sinks, metadata or optional outputs
  bare.withoutCmp();
  bare.sinks = bare.metadata = bare.dOri = bare.dSinks = nullptr;
  EXPECT_EQ(bare.run(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
}

TEST_F(SmlaGradChecks, NullRequiredArguments) {
  expectRejected({
      {"query", [](SmlaGradCall& c) { c.query = nullptr; }, kNull, {"'query'", "non-null", "nullptr"}},
      {"dOut", [](SmlaGradCall& c) { c.dOut = nullptr; }, kNull, {"'dOut'"}},
      {"out", [](SmlaGradCall& c) { c.out = nullptr; }, kNull, {"'out'"}},
      {"lse", [](SmlaGradCall& c) { c.lse = nullptr; }, kNull, {"'lse'"}},
      {"oriKv", [](SmlaGradCall& c) { c.oriKv = nullptr; }, kNull, {"'oriKvOptional'"}},
      {"dQuery", [](SmlaGradCall& c) { c.dQuery = nullptr; }, kNull, {"'dQueryOut'"}},
      {"workspaceSize", [](SmlaGradCall& c) { c.nullWorkspaceSize = true; }, kNull, {"'workspaceSize'"}},
      {"executor", [](SmlaGradCall& c) { c.nullExecutor = true; }, kNull, {"'executor'"}},
      {"query before dOut",
       [](SmlaGradCall& c) {
         c.query = nullptr;
         c.dOut = nullptr;
       },
       kNull,
       {"'query'"}},
      {"an empty oriKv is absent",
       [](SmlaGradCall& c) {
         c.oriKv = c.pool.make(ACL_BF16, {0, 1, kD});
       },
       kNull,
       {"'oriKvOptional'"}},
  });
}

TEST_F(SmlaGradChecks, Layouts) {
  expectRejected({
      {"layoutQ", [](SmlaGradCall& c) { c.layoutQ = "BNSD"; }, kInvalid, {"'layoutQOptional'", "\"TND\"", "\"BNSD\""}},
      {"layoutQ paged", [](SmlaGradCall& c) { c.layoutQ = "PA_BBND"; }, kInvalid, {"'layoutQOptional'", "PA_BBND"}},
      {"layoutKv", [](SmlaGradCall& c) { c.layoutKv = "XXX"; }, kInvalid, {"'layoutKvOptional'", "\"XXX\""}},
      {"layoutKv paged (no paged KV in the grad)",
       [](SmlaGradCall& c) { c.layoutKv = "PA_BBND"; },
       kInvalid,
       {"'layoutKvOptional'", "\"BSND\" or \"TND\"", "\"PA_BBND\""}},
      {"layoutKv differs",
       [](SmlaGradCall& c) { c.layoutKv = "BSND"; },
       kInvalid,
       {"'layoutKvOptional'", "layoutQ's TND", "\"BSND\""}},
  });
}

TEST_F(SmlaGradChecks, SingleArguments) {
  expectRejected({
      {"scale", [](SmlaGradCall& c) { c.scale = 0.0 / 0.0; }, kInvalid, {"'scaleValue'", "finite", "nan"}},
      {"query fp32",
       [](SmlaGradCall& c) {
         c.query = c.pool.make(ACL_FLOAT, {6, 4, kD});
       },
       kInvalid,
       {"'query'", "FLOAT16", "dtype FLOAT"}},
      {"query rank",
       [](SmlaGradCall& c) {
         c.query = c.pool.make(ACL_BF16, {1, 6, 4, kD});
       },
       kInvalid,
       {"'query'", "3 dims"}},
      {"dOut fp32",
       [](SmlaGradCall& c) {
         c.dOut = c.pool.make(ACL_FLOAT, {6, 4, kD});
       },
       kInvalid,
       {"'dOut'", "dtype FLOAT"}},
      {"out rank",
       [](SmlaGradCall& c) {
         c.out = c.pool.make(ACL_BF16, {6, 4 * kD});
       },
       kInvalid,
       {"'out'", "3 dims"}},
      {"oriKv rank",
       [](SmlaGradCall& c) {
         c.oriKv = c.pool.make(ACL_BF16, {2, 8, 1, kD});
       },
       kInvalid,
       {"'oriKvOptional'", "3 dims"}},
      {"cmpKv int8",
       [](SmlaGradCall& c) {
         c.cmpKv = c.pool.make(ACL_INT8, {4, 1, kD});
       },
       kInvalid,
       {"'cmpKvOptional'", "INT8"}},
      {"dQuery fp32",
       [](SmlaGradCall& c) {
         c.dQuery = c.pool.make(ACL_FLOAT, {6, 4, kD});
       },
       kInvalid,
       {"'dQueryOut'", "dtype FLOAT"}},
      {"dOriKv rank",
       [](SmlaGradCall& c) {
         c.dOri = c.pool.make(ACL_BF16, {16, kD});
       },
       kInvalid,
       {"'dOriKvOutOptional'", "3 dims"}},
      {"dCmpKv fp32",
       [](SmlaGradCall& c) {
         c.dCmp = c.pool.make(ACL_FLOAT, {4, 1, kD});
       },
       kInvalid,
       {"'dCmpKvOutOptional'"}},
      {"query empty",
       [](SmlaGradCall& c) {
         c.query = c.pool.make(ACL_BF16, {0, 4, kD});
       },
       kInvalid,
       {"'query'", "no dim of 0", "[0, 4, 512]"}},
      {"lse fp16",
       [](SmlaGradCall& c) {
         c.lse = c.pool.make(ACL_FLOAT16, {1, 6, 4});
       },
       kInvalid,
       {"'lse'", "FLOAT16"}},
      {"lse rank",
       [](SmlaGradCall& c) {
         c.lse = c.pool.make(ACL_FLOAT, {6, 4});
       },
       kInvalid,
       {"'lse'", "3 dims"}},
      {"cuSeqlensQ int64",
       [](SmlaGradCall& c) { c.cuQ = c.pool.make(ACL_INT64, {3}); },
       kInvalid,
       {"'cuSeqlensQOptional'", "INT64"}},
      {"cuSeqlensOriKv rank",
       [](SmlaGradCall& c) {
         c.cuOri = int32Tensor(c.pool, {3, 1}, {0, 8, 16});
       },
       kInvalid,
       {"'cuSeqlensOriKvOptional'", "1 dim"}},
      {"cuSeqlensCmpKv fp32",
       [](SmlaGradCall& c) { c.cuCmp = c.pool.make(ACL_FLOAT, {3}); },
       kInvalid,
       {"'cuSeqlensCmpKvOptional'"}},
      {"sequsedQ int64",
       [](SmlaGradCall& c) { c.usedQ = c.pool.make(ACL_INT64, {2}); },
       kInvalid,
       {"'sequsedQOptional'"}},
      {"sequsedOriKv rank",
       [](SmlaGradCall& c) {
         c.usedOri = int32Tensor(c.pool, {2, 1}, {8, 8});
       },
       kInvalid,
       {"'sequsedOriKvOptional'"}},
      {"sequsedCmpKv int64",
       [](SmlaGradCall& c) { c.usedCmp = c.pool.make(ACL_INT64, {2}); },
       kInvalid,
       {"'sequsedCmpKvOptional'"}},
      {"residual int64",
       [](SmlaGradCall& c) { c.residual = c.pool.make(ACL_INT64, {2}); },
       kInvalid,
       {"'cmpResidualKvOptional'"}},
      {"ratio 0", [](SmlaGradCall& c) { c.ratio = 0; }, kInvalid, {"'cmpRatio'", "1 .. 128", "given 0"}},
      {"ratio 129", [](SmlaGradCall& c) { c.ratio = 129; }, kInvalid, {"'cmpRatio'", "1 .. 128", "129"}},
      {"ori indices int64",
       [](SmlaGradCall& c) {
         c.oriIdx = c.pool.make(ACL_INT64, {6, 1, 3});
       },
       kInvalid,
       {"'oriSparseIndicesOptional'", "INT64"}},
      {"cmp indices rank",
       [](SmlaGradCall& c) {
         c.cmpIdx = int32Tensor(c.pool, {6, 3}, {});
       },
       kInvalid,
       {"'cmpSparseIndicesOptional'", "[T1, 1, K] (layoutQ TND)"}},
      {"ori topk length rank",
       [](SmlaGradCall& c) { c.oriLen = int32Tensor(c.pool, {6}, {}); },
       kInvalid,
       {"'oriTopkLengthOptional'", "[T1, 1]"}},
      {"cmp topk length int64",
       [](SmlaGradCall& c) {
         c.cmpLen = c.pool.make(ACL_INT64, {6, 1});
       },
       kInvalid,
       {"'cmpTopkLengthOptional'"}},
      {"ori mode 1", [](SmlaGradCall& c) { c.oriMode = 1; }, kInvalid, {"'oriMaskMode'", "0 (none), 3", "given 1"}},
      {"cmp mode 4", [](SmlaGradCall& c) { c.cmpMode = 4; }, kInvalid, {"'cmpMaskMode'", "0 (none) or 3", "given 4"}},
      {"left window", [](SmlaGradCall& c) { c.winLeft = -2; }, kInvalid, {"'oriWinLeft'", "-1 (unbounded)", "-2"}},
      {"right window int32",
       [](SmlaGradCall& c) { c.winRight = int64_t{1} << 31; },
       kInvalid,
       {"'oriWinRight'", "2147483647", "2147483648"}},
      {"sinks fp16", [](SmlaGradCall& c) { c.sinks = c.pool.make(ACL_FLOAT16, {4}); }, kInvalid, {"'sinksOptional'"}},
      {"sinks rank",
       [](SmlaGradCall& c) {
         c.sinks = c.pool.make(ACL_FLOAT, {4, 1});
       },
       kInvalid,
       {"'sinksOptional'", "[N1]"}},
      {"metadata int64",
       [](SmlaGradCall& c) { c.metadata = c.pool.make(ACL_INT64, {1024}); },
       kInvalid,
       {"'metadataOptional'", "INT64"}},
      {"dSinks bf16",
       [](SmlaGradCall& c) { c.dSinks = c.pool.make(ACL_BF16, {4}); },
       kInvalid,
       {"'dSinksOutOptional'"}},
      {"ori L1 fp16",
       [](SmlaGradCall& c) {
         c.oriL1 = c.pool.make(ACL_FLOAT16, {6, 1, 3});
       },
       kInvalid,
       {"'oriSoftmaxL1NormOptional'", "FLOAT16"}},
      {"cmp L1 rank",
       [](SmlaGradCall& c) {
         c.cmpL1 = c.pool.make(ACL_FLOAT, {6, 3});
       },
       kInvalid,
       {"'cmpSoftmaxL1NormOptional'", "3 dims"}},
  });
}

TEST_F(SmlaGradChecks, Existence) {
  expectRejected({
      {"TND needs cuSeqlensQ",
       [](SmlaGradCall& c) { c.cuQ = nullptr; },
       kInvalid,
       {"'cuSeqlensQOptional'", "a tensor (layout TND)", "given nullptr or an empty tensor"}},
      {"TND needs cuSeqlensOriKv", [](SmlaGradCall& c) { c.cuOri = nullptr; }, kInvalid, {"'cuSeqlensOriKvOptional'"}},
      {"TND with cmpKv needs cuSeqlensCmpKv",
       [](SmlaGradCall& c) { c.cuCmp = c.pool.make(ACL_INT32, {0}); },  // empty = absent
       kInvalid,
       {"'cuSeqlensCmpKvOptional'", "TND with cmpKv"}},
      {"BSND takes no cuSeqlensQ",
       [](SmlaGradCall& c) {
         c.toBsnd();
         c.cuQ = int32Tensor(c.pool, {3}, {0, 3, 6});
       },
       kInvalid,
       {"'cuSeqlensQOptional'", "layout BSND", "shape [3]"}},
      {"BSND takes no cuSeqlensCmpKv",
       [](SmlaGradCall& c) {
         c.toBsnd();
         c.cuCmp = int32Tensor(c.pool, {3}, {0, 2, 4});
       },
       kInvalid,
       {"'cuSeqlensCmpKvOptional'"}},
      {"cmp indices need cmpKv",
       [](SmlaGradCall& c) {
         c.cmpKv = c.cuCmp = c.residual = c.dCmp = nullptr;
         c.ratio = 1, c.cmpMode = 0;
       },
       kInvalid,
       {"'cmpKvOptional'", "cmpSparseIndicesOptional indexes it"}},
      {"no cmpKv: no residual",
       [](SmlaGradCall& c) {
         c.withoutCmp();
         c.residual = int32Tensor(c.pool, {2}, {0, 0});
       },
       kInvalid,
       {"'cmpResidualKvOptional'", "no cmpKv"}},
      {"no cmpKv: no dCmpKv",
       [](SmlaGradCall& c) {
         c.withoutCmp();
         c.dCmp = c.pool.make(ACL_BF16, {4, 1, kD});
       },
       kInvalid,
       {"'dCmpKvOutOptional'", "no cmpKv"}},
      {"no cmpKv: ratio 1",
       [](SmlaGradCall& c) {
         c.withoutCmp();
         c.ratio = 4;
       },
       kInvalid,
       {"'cmpRatio'", "1 without cmpKv", "given 4"}},
      {"mode 3 with ratio 4 needs the residuals",
       [](SmlaGradCall& c) { c.residual = nullptr; },
       kInvalid,
       {"'cmpResidualKvOptional'", "cmpMaskMode 3 with cmpRatio > 1"}},
      {"ratio 1 takes no residuals",
       [](SmlaGradCall& c) { c.ratio = 1; },
       kInvalid,
       {"'cmpResidualKvOptional'", "only cmpMaskMode 3 with cmpRatio > 1"}},
      {"ori indices with mode 0 need their lengths",
       [](SmlaGradCall& c) {
         c.withOriIndices();
         c.oriLen = nullptr;
       },
       kInvalid,
       {"'oriTopkLengthOptional'", "oriSparseIndices, oriMaskMode 0"}},
      {"ori lengths without ori mode 0",
       [](SmlaGradCall& c) {
         c.oriLen = int32Tensor(c.pool, {6, 1}, {1, 1, 1, 1, 1, 1});
       },
       kInvalid,
       {"'oriTopkLengthOptional'", "only oriSparseIndices with oriMaskMode 0"}},
      {"cmp indices with mode 0 need their lengths",
       [](SmlaGradCall& c) {
         c.cmpMode = 0;
         c.residual = nullptr;
       },
       kInvalid,
       {"'cmpTopkLengthOptional'", "cmpSparseIndices, cmpMaskMode 0"}},
      {"cmp lengths with cmp mode 3",
       [](SmlaGradCall& c) {
         c.cmpLen = int32Tensor(c.pool, {6, 1}, {1, 1, 1, 1, 1, 1});
       },
       kInvalid,
       {"'cmpTopkLengthOptional'", "only cmpSparseIndices with cmpMaskMode 0"}},
      {"dSinks without sinks",
       [](SmlaGradCall& c) { c.sinks = nullptr; },
       kInvalid,
       {"'dSinksOutOptional'", "no sinks"}},
      {"ori L1 without ori indices",
       [](SmlaGradCall& c) {
         c.oriL1 = c.pool.make(ACL_FLOAT, {6, 1, 3});
       },
       kInvalid,
       {"'oriSoftmaxL1NormOptional'", "no oriSparseIndices"}},
      {"cmp L1 without cmp indices",
       [](SmlaGradCall& c) { c.cmpIdx = nullptr; },
       kInvalid,
       {"'cmpSoftmaxL1NormOptional'", "no cmpSparseIndices", "shape [6, 1, 3]"}},
      {"cmp indices need the cmp L1 norm",
       [](SmlaGradCall& c) { c.cmpL1 = nullptr; },
       kInvalid,
       {"'cmpSoftmaxL1NormOptional'", "upstream writes it"}},
  });
}

TEST_F(SmlaGradChecks, Features) {
  expectRejected({
      {"windows without the band",
       [](SmlaGradCall& c) { c.oriMode = 3; },
       kInvalid,
       {"'oriWinLeft'", "unless oriMaskMode is 4", "127 and 0 with oriMaskMode 3"}},
      {"cmp mode without cmpKv",
       [](SmlaGradCall& c) {
         c.withoutCmp();
         c.cmpMode = 3;
       },
       kInvalid,
       {"'cmpMaskMode'", "0 without cmpKv", "given 3"}},
  });
}

TEST_F(SmlaGradChecks, Shapes) {
  expectRejected({
      {"dOut shape",
       [](SmlaGradCall& c) {
         c.dOut = c.pool.make(ACL_BF16, {6, 2, kD});
       },
       kInvalid,
       {"'dOut'", "[6, 4, 512] (the shape of query)", "[6, 2, 512]"}},
      {"dOut dtype",
       [](SmlaGradCall& c) {
         c.dOut = c.pool.make(ACL_FLOAT16, {6, 4, kD});
       },
       kInvalid,
       {"'dOut'", "dtype BFLOAT16 (the dtype of query)", "FLOAT16"}},
      {"out shape",
       [](SmlaGradCall& c) {
         c.out = c.pool.make(ACL_BF16, {5, 4, kD});
       },
       kInvalid,
       {"'out'", "[5, 4, 512]"}},
      {"dQuery dtype",
       [](SmlaGradCall& c) {
         c.dQuery = c.pool.make(ACL_FLOAT16, {6, 4, kD});
       },
       kInvalid,
       {"'dQueryOut'", "the dtype of query"}},
      {"heads", [](SmlaGradCall& c) { reshapeQuery(c, 129, kD); }, kInvalid, {"'query'", "N1 (heads) of 1 .. 128"}},
      {"D", [](SmlaGradCall& c) { reshapeQuery(c, 4, 256); }, kInvalid, {"'query'", "D = 512", "[6, 4, 256]"}},
      {"oriKv heads",
       [](SmlaGradCall& c) {
         c.oriKv = c.pool.make(ACL_BF16, {16, 2, kD});
       },
       kInvalid,
       {"'oriKvOptional'", "one KV head of 512"}},
      {"cmpKv dtype",
       [](SmlaGradCall& c) {
         c.cmpKv = c.pool.make(ACL_FLOAT16, {4, 1, kD});
       },
       kInvalid,
       {"'cmpKvOptional'", "the dtype of query"}},
      {"BSND KV batches",
       [](SmlaGradCall& c) {
         c.toBsnd();
         c.oriKv = c.pool.make(ACL_BF16, {3, 8, 1, kD});
       },
       kInvalid,
       {"'oriKvOptional'", "dim 0 = B = 2"}},
      {"TND without batches",
       [](SmlaGradCall& c) { c.cuQ = int32Tensor(c.pool, {1}, {0}); },
       kInvalid,
       {"'cuSeqlensQOptional'", "B + 1 >= 2"}},
      {"cuSeqlensOriKv count",
       [](SmlaGradCall& c) {
         c.cuOri = int32Tensor(c.pool, {4}, {0, 8, 16, 16});
       },
       kInvalid,
       {"'cuSeqlensOriKvOptional'", "3 elements (B + 1)", "shape [4]"}},
      {"cuSeqlensCmpKv count",
       [](SmlaGradCall& c) {
         c.cuCmp = int32Tensor(c.pool, {2}, {0, 4});
       },
       kInvalid,
       {"'cuSeqlensCmpKvOptional'", "3 elements"}},
      {"sequsedQ count",
       [](SmlaGradCall& c) {
         c.usedQ = int32Tensor(c.pool, {3}, {2, 4, 0});
       },
       kInvalid,
       {"'sequsedQOptional'", "2 elements (B)"}},
      {"sequsedOriKv count",
       [](SmlaGradCall& c) { c.usedOri = int32Tensor(c.pool, {1}, {8}); },
       kInvalid,
       {"'sequsedOriKvOptional'", "2 elements"}},
      {"sequsedCmpKv count",
       [](SmlaGradCall& c) {
         c.usedCmp = int32Tensor(c.pool, {3}, {1, 1, 1});
       },
       kInvalid,
       {"'sequsedCmpKvOptional'", "2 elements"}},
      {"residual count",
       [](SmlaGradCall& c) {
         c.residual = int32Tensor(c.pool, {3}, {0, 0, 0});
       },
       kInvalid,
       {"'cmpResidualKvOptional'", "2 elements"}},
      {"ori indices tokens",
       [](SmlaGradCall& c) {
         c.withOriIndices();
         c.oriIdx = int32Tensor(c.pool, {5, 1, 3}, {});
       },
       kInvalid,
       {"'oriSparseIndicesOptional'", "[6, 1, 3]", "[5, 1, 3]"}},
      {"cmp indices heads",
       [](SmlaGradCall& c) {
         c.cmpIdx = int32Tensor(c.pool, {6, 2, 3}, {});
       },
       kInvalid,
       {"'cmpSparseIndicesOptional'", "query's tokens, 1 KV head, K"}},
      {"ori lengths tokens",
       [](SmlaGradCall& c) {
         c.withOriIndices();
         c.oriLen = int32Tensor(c.pool, {4, 1}, {1, 1, 1, 1});
       },
       kInvalid,
       {"'oriTopkLengthOptional'", "[6, 1]"}},
      {"cmp lengths tokens",
       [](SmlaGradCall& c) {
         c.cmpMode = 0, c.residual = nullptr;
         c.cmpLen = int32Tensor(c.pool, {6, 2}, {});
       },
       kInvalid,
       {"'cmpTopkLengthOptional'"}},
      {"lse shape",
       [](SmlaGradCall& c) {
         c.lse = c.pool.make(ACL_FLOAT, {1, 4, 6});
       },
       kInvalid,
       {"'lse'", "[1, 6, 4]", "given shape [1, 4, 6]"}},
      {"sinks heads",
       [](SmlaGradCall& c) { c.sinks = c.pool.make(ACL_FLOAT, {8}); },
       kInvalid,
       {"'sinksOptional'", "shape [4] ([N1], one sink per query head)", "[8]"}},
      {"dOriKv shape",
       [](SmlaGradCall& c) {
         c.dOri = c.pool.make(ACL_BF16, {15, 1, kD});
       },
       kInvalid,
       {"'dOriKvOutOptional'", "shape [16, 1, 512] (the shape of oriKvOptional)", "[15, 1, 512]"}},
      {"dCmpKv dtype",
       [](SmlaGradCall& c) {
         c.dCmp = c.pool.make(ACL_FLOAT16, {4, 1, kD});
       },
       kInvalid,
       {"'dCmpKvOutOptional'", "dtype BFLOAT16 (the dtype of cmpKvOptional)"}},
      {"dSinks heads",
       [](SmlaGradCall& c) { c.dSinks = c.pool.make(ACL_FLOAT, {2}); },
       kInvalid,
       {"'dSinksOutOptional'", "shape [4] ([N1], like sinksOptional)", "[2]"}},
      {"ori L1 shape",
       [](SmlaGradCall& c) {
         c.withOriIndices();
         c.oriL1 = c.pool.make(ACL_FLOAT, {6, 1, 4});
       },
       kInvalid,
       {"'oriSoftmaxL1NormOptional'", "[6, 1, 3] (its indices' shape)", "[6, 1, 4]"}},
      {"cmp L1 shape",
       [](SmlaGradCall& c) {
         c.cmpL1 = c.pool.make(ACL_FLOAT, {6, 1, 2});
       },
       kInvalid,
       {"'cmpSoftmaxL1NormOptional'", "its indices' shape"}},
      {"metadata size",
       [](SmlaGradCall& c) { c.metadata = c.pool.make(ACL_INT32, {512}); },
       kInvalid,
       {"'metadataOptional'", "1024 elements (aclnnSparseFlashMlaGradMetadata's output)", "[512]"}},
  });
}

TEST_F(SmlaGradChecks, Values) {
  expectRejected({
      {"cu first",
       [](SmlaGradCall& c) {
         c.cuQ = int32Tensor(c.pool, {3}, {1, 2, 6});
       },
       kInvalid,
       {"'cuSeqlensQOptional'", "first element 0"}},
      {"cu order",
       [](SmlaGradCall& c) {
         c.cuQ = int32Tensor(c.pool, {3}, {0, 4, 3});
       },
       kInvalid,
       {"'cuSeqlensQOptional'", "non-decreasing"}},
      {"cu last",
       [](SmlaGradCall& c) {
         c.cuQ = int32Tensor(c.pool, {3}, {0, 2, 7});
       },
       kInvalid,
       {"'cuSeqlensQOptional'", "<= 6", "7"}},
      {"cu ori last",
       [](SmlaGradCall& c) {
         c.cuOri = int32Tensor(c.pool, {3}, {0, 8, 17});
       },
       kInvalid,
       {"'cuSeqlensOriKvOptional'", "<= 16 (oriKv's rows)", "17"}},
      {"cu cmp order",
       [](SmlaGradCall& c) {
         c.cuCmp = int32Tensor(c.pool, {3}, {0, 3, 2});
       },
       kInvalid,
       {"'cuSeqlensCmpKvOptional'", "non-decreasing"}},
      {"sequsedQ range",
       [](SmlaGradCall& c) {
         c.usedQ = int32Tensor(c.pool, {2}, {3, 4});
       },
       kInvalid,
       {"'sequsedQOptional'", "0 .. 2 (the query rows of batch 0)", "[0] = 3"}},
      {"sequsedOriKv range",
       [](SmlaGradCall& c) {
         c.usedOri = int32Tensor(c.pool, {2}, {8, -1});
       },
       kInvalid,
       {"'sequsedOriKvOptional'", "0 .. 8", "[1] = -1"}},
      {"sequsedCmpKv range",
       [](SmlaGradCall& c) {
         c.usedCmp = int32Tensor(c.pool, {2}, {3, 2});
       },
       kInvalid,
       {"'sequsedCmpKvOptional'", "0 .. 2", "[0] = 3"}},
      {"residual range",
       [](SmlaGradCall& c) {
         c.residual = int32Tensor(c.pool, {2}, {0, 4});
       },
       kInvalid,
       {"'cmpResidualKvOptional'", "[0, cmpRatio = 4)"}},
      {"ori lengths >= 0",
       [](SmlaGradCall& c) {
         c.withOriIndices();
         c.oriLen = int32Tensor(c.pool, {6, 1}, {3, 3, -2, 1, 3, 0});
       },
       kInvalid,
       {"'oriTopkLengthOptional'", "lengths >= 0", "element 2 = -2"}},
      {"cmp lengths >= 0",
       [](SmlaGradCall& c) {
         c.cmpMode = 0, c.residual = nullptr;
         c.cmpLen = int32Tensor(c.pool, {6, 1}, {0, 0, 0, 0, 0, -1});
       },
       kInvalid,
       {"'cmpTopkLengthOptional'", "element 5 = -1"}},
  });
}

TEST_F(SmlaGradChecks, MemoryRules) {
  expectRejected({
      {"dq over query",
       [](SmlaGradCall& c) { c.dQuery = c.query; },
       kInvalid,
       {"'dQueryOut'", "memory that does not overlap the input query"}},
      {"dOriKv over dCmpKv",
       [](SmlaGradCall& c) {
         c.dOri = c.pool.make(ACL_BF16, {16, 1, kD});
         c.dCmp = c.pool.alias(c.dOri, ACL_BF16, {4, 1, kD}, 12 * kD);
       },
       kInvalid,
       {"'dCmpKvOutOptional'", "does not overlap the output dOriKvOutOptional"}},
  });
}

TEST_F(SmlaGradChecks, A2A3ProfileLimits) {
  for (const char* soc : {"Ascend910B", "Ascend910_93"}) {
    ASSERT_EQ(gradkitSetSoc(soc), 0);
    const auto a2 = [](std::function<void(SmlaGradCall&)> breakIt) {
      return [breakIt](SmlaGradCall& c) {
        c.metadata = nullptr;
        breakIt(c);
      };
    };
    expectRejected({
        {"metadata", [](SmlaGradCall&) {}, kInvalid, {"'metadataOptional'", std::string("the ") + soc + " profile"}},
        {"ori indices",
         a2([](SmlaGradCall& c) { c.withOriIndices(); }),
         kInvalid,
         {"'oriSparseIndicesOptional'", "not supported in the"}},
        {"cmp lengths",
         a2([](SmlaGradCall& c) {
           c.cmpMode = 0, c.residual = nullptr;
           c.cmpLen = int32Tensor(c.pool, {6, 1}, {1, 1, 1, 1, 1, 1});
         }),
         kInvalid,
         {"'cmpTopkLengthOptional'", "not supported"}},
        {"sequsedQ",
         a2([](SmlaGradCall& c) {
           c.usedQ = int32Tensor(c.pool, {2}, {2, 4});
         }),
         kInvalid,
         {"'sequsedQOptional'", "not supported"}},
        {"sequsedOriKv",
         a2([](SmlaGradCall& c) {
           c.usedOri = int32Tensor(c.pool, {2}, {8, 8});
         }),
         kInvalid,
         {"'sequsedOriKvOptional'"}},
        {"sequsedCmpKv",
         a2([](SmlaGradCall& c) {
           c.usedCmp = int32Tensor(c.pool, {2}, {2, 2});
         }),
         kInvalid,
         {"'sequsedCmpKvOptional'"}},
        {"band only",
         a2([](SmlaGradCall& c) { c.winLeft = 63; }),
         kInvalid,
         {"'oriMaskMode'", "4 with oriWinLeft 127 and oriWinRight 0", "4 with 63, 0"}},
        {"causal ori",
         a2([](SmlaGradCall& c) { c.oriMode = 3, c.winLeft = c.winRight = -1; }),
         kInvalid,
         {"'oriMaskMode'", "3 with -1, -1"}},
        {"cmp mode 3",
         a2([](SmlaGradCall& c) {
           c.cmpMode = 0, c.residual = nullptr;
           c.cmpIdx = nullptr, c.cmpL1 = nullptr;
         }),
         kInvalid,
         {"'cmpMaskMode'", "3 with cmpKv", "given 0"}},
    });
    SmlaGradCall accepted;
    accepted.metadata = nullptr;
    EXPECT_EQ(accepted.run(), ACLNN_SUCCESS) << soc << ": " << aclGetRecentErrMsg();
    SmlaGradCall hca;
    hca.metadata = nullptr;
    hca.cmpIdx = hca.cmpL1 = nullptr;
    EXPECT_EQ(hca.run(), ACLNN_SUCCESS) << soc << ": " << aclGetRecentErrMsg();
    rt::clearSocOverride();
  }
}

TEST_F(SmlaGradChecks, EmptyOptionalTensorsAreAbsent) {
  SmlaGradCall call;  // empty optional inputs and outputs read as nullptr
  call.oriIdx = call.pool.make(ACL_INT32, {6, 1, 0});
  call.usedQ = call.pool.make(ACL_INT32, {0});
  call.dOri = call.pool.make(ACL_BF16, {0, 1, kD});
  call.oriL1 = call.pool.make(ACL_FLOAT, {0});
  EXPECT_EQ(call.run(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  SmlaGradCall emptySinks;  // an empty sinks is absent, so dSinks must be too
  emptySinks.sinks = emptySinks.pool.make(ACL_FLOAT, {0});
  EXPECT_TRUE(rejects(emptySinks.call(), kInvalid, SmlaGradCall::kApi, {"'dSinksOutOptional'", "no sinks"}));
  emptySinks.dSinks = emptySinks.pool.make(ACL_FLOAT, {0});
  EXPECT_EQ(emptySinks.run(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
}

TEST_F(SmlaGradChecks, TheFirstPhaseIsBoundedByTheRowsUsed) {
  // KV tensors holding many rows past the ones cu_seqlens use: the workspace is the same as over exactly the rows used
  // (the accumulators cover the rows the query rows reach), and both phases run.
  SmlaGradCall exact;
  ASSERT_EQ(exact.call().status, ACLNN_SUCCESS) << aclGetRecentErrMsg();
  aclDestroyAclOpExecutor(exact.executor);
  SmlaGradCall wide;
  wide.oriKv = wide.pool.make(ACL_BF16, {4096, 1, kD});
  wide.dOri = wide.pool.make(ACL_BF16, {4096, 1, kD});
  wide.cmpKv = wide.pool.make(ACL_BF16, {1024, 1, kD});
  wide.dCmp = wide.pool.make(ACL_BF16, {1024, 1, kD});
  ASSERT_EQ(wide.call().status, ACLNN_SUCCESS) << aclGetRecentErrMsg();
  aclDestroyAclOpExecutor(wide.executor);
  EXPECT_EQ(wide.workspaceSize, exact.workspaceSize);
  EXPECT_LT(exact.workspaceSize, uint64_t{64} << 20);
  EXPECT_EQ(wide.run(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
}

}  // namespace
}  // namespace gradkit::test::smla
