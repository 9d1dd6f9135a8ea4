// aclnnSparseFlashMla's argument rules: each broken on the valid call of smla_test_util.h, with its code and the
// argument its message names, in upstream's order; the accepted variants (layouts, modes, profiles) run.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "gradkit/gradkit.h"
#include "ops/block_residuals_check_util.h"
#include "ops/smla_test_util.h"
#include "runtime/runtime.h"

namespace gradkit::test::smla {
namespace {

using block_residuals::kInvalid;
using block_residuals::kNull;
using block_residuals::rejects;

struct Rule {
  const char* name;
  std::function<void(SmlaCall&)> breakIt;
  aclnnStatus code;
  std::vector<std::string> fragments;
};

/** q, out, lse and sinks for `n1` heads of `d`. */
void reshapeQ(SmlaCall& c, int64_t n1, int64_t d) {
  c.q = c.pool.make(ACL_BF16, {6, n1, d});
  c.out = c.pool.make(ACL_BF16, {6, n1, d});
  c.lse = c.pool.make(ACL_FLOAT, {1, 6, n1});
  c.sinks = c.pool.make(ACL_FLOAT, {n1});
}

void expectRejected(const std::vector<Rule>& rules) {
  for (const Rule& rule : rules) {
    SmlaCall call;
    rule.breakIt(call);
    EXPECT_TRUE(rejects(call.call(), rule.code, SmlaCall::kApi, rule.fragments)) << rule.name;
  }
}

TEST(SmlaChecks, TheBaseCallIsAcceptedAndRuns) {
  SmlaCall call;
  EXPECT_EQ(call.run(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
}

TEST(SmlaChecks, NullRequiredArguments) {
  expectRejected({
      {"q", [](SmlaCall& c) { c.q = nullptr; }, kNull, {"'q'"}},
      {"oriKv", [](SmlaCall& c) { c.oriKv = nullptr; }, kNull, {"'oriKvOptional'"}},
      {"sinks", [](SmlaCall& c) { c.sinks = nullptr; }, kNull, {"'sinksOptional'"}},
      {"metadata", [](SmlaCall& c) { c.metadata = nullptr; }, kNull, {"'metadataOptional'"}},
      {"out", [](SmlaCall& c) { c.out = nullptr; }, kNull, {"'attnOutOut'"}},
  });
}

TEST(SmlaChecks, SingleArguments) {
  expectRejected({
      {"layoutQ", [](SmlaCall& c) { c.layoutQ = "BNSD"; }, kInvalid, {"'layoutQOptional'", "\"BNSD\""}},
      {"layoutQ paged", [](SmlaCall& c) { c.layoutQ = "PA_BBND"; }, kInvalid, {"'layoutQOptional'"}},
      {"layoutKv", [](SmlaCall& c) { c.layoutKv = "XXX"; }, kInvalid, {"'layoutKvOptional'", "\"XXX\""}},
      {"scale", [](SmlaCall& c) { c.scale = 1.0 / 0.0; }, kInvalid, {"'softmaxScale'", "finite"}},
      {"q fp32",
       [](SmlaCall& c) {
         c.q = c.pool.make(ACL_FLOAT, {6, 4, kD});
       },
       kInvalid,
       {"'q'", "FLOAT"}},
      {"q rank",
       [](SmlaCall& c) {
         c.q = c.pool.make(ACL_BF16, {1, 6, 4, kD});
       },
       kInvalid,
       {"'q'", "3 dims"}},
      {"q empty",
       [](SmlaCall& c) {
         c.q = c.pool.make(ACL_BF16, {0, 4, kD});
       },
       kInvalid,
       {"'q'", "empty"}},
      {"oriKv rank",
       [](SmlaCall& c) {
         c.oriKv = c.pool.make(ACL_BF16, {16, 1, kD});
       },
       kInvalid,
       {"'oriKvOptional'"}},
      {"cu int64",
       [](SmlaCall& c) { c.cuQ = c.pool.make(ACL_INT64, {3}); },
       kInvalid,
       {"'cuSeqlensQOptional'", "INT64"}},
      {"ratio", [](SmlaCall& c) { c.ratio = 129; }, kInvalid, {"'cmpRatio'", "1 .. 128", "129"}},
      {"topkValueMode", [](SmlaCall& c) { c.topkValueMode = 2; }, kInvalid, {"'topkValueMode'"}},
      {"indices int64",
       [](SmlaCall& c) {
         c.cmpIdx = c.pool.make(ACL_INT64, {6, 1, 3});
       },
       kInvalid,
       {"'cmpSparseIndicesOptional'"}},
      {"ori mode", [](SmlaCall& c) { c.oriMode = 1; }, kInvalid, {"'oriMaskMode'", "1"}},
      {"cmp mode", [](SmlaCall& c) { c.cmpMode = 4; }, kInvalid, {"'cmpMaskMode'", "4"}},
      {"window", [](SmlaCall& c) { c.winLeft = -2; }, kInvalid, {"'oriWinLeft'", "-2"}},
      {"window int32", [](SmlaCall& c) { c.winRight = int64_t{1} << 31; }, kInvalid, {"'oriWinRight'"}},
      {"table rank",
       [](SmlaCall& c) {
         c.oriTable = c.pool.make(ACL_INT32, {2, 2, 1});
       },
       kInvalid,
       {"'oriBlockTableOptional'"}},
      {"sinks fp16", [](SmlaCall& c) { c.sinks = c.pool.make(ACL_FLOAT16, {4}); }, kInvalid, {"'sinksOptional'"}},
      {"sinks rank",
       [](SmlaCall& c) {
         c.sinks = c.pool.make(ACL_FLOAT, {4, 2});
       },
       kInvalid,
       {"'sinksOptional'"}},
      {"lse fp16",
       [](SmlaCall& c) {
         c.lse = c.pool.make(ACL_FLOAT16, {1, 6, 4});
       },
       kInvalid,
       {"'softmaxLseOutOptional'"}},
  });
}

TEST(SmlaChecks, Existence) {
  expectRejected({
      {"TND q needs cu", [](SmlaCall& c) { c.cuQ = nullptr; }, kInvalid, {"'cuSeqlensQOptional'", "layoutQ TND"}},
      {"cmp indices need cmpKv",
       [](SmlaCall& c) {
         c.cmpKv = nullptr;
         c.cmpTable = c.usedCmp = c.residual = nullptr;
         c.ratio = 1;
         c.cmpMode = 0;
       },
       kInvalid,
       {"'cmpKvOptional'"}},
      {"residual needed", [](SmlaCall& c) { c.residual = nullptr; }, kInvalid, {"'cmpResidualKvOptional'"}},
      {"residual forbidden", [](SmlaCall& c) { c.ratio = 1; }, kInvalid, {"'cmpResidualKvOptional'"}},
      {"ori lengths without mode 0",
       [](SmlaCall& c) {
         c.oriLen = int32Tensor(c.pool, {6, 1}, {1, 1, 1, 1, 1, 1});
       },
       kInvalid,
       {"'oriTopkLengthOptional'"}},
      {"paged needs ori table", [](SmlaCall& c) { c.oriTable = nullptr; }, kInvalid, {"'oriBlockTableOptional'"}},
      {"paged needs cmp table", [](SmlaCall& c) { c.cmpTable = nullptr; }, kInvalid, {"'cmpBlockTableOptional'"}},
      {"paged needs seqused", [](SmlaCall& c) { c.usedOri = nullptr; }, kInvalid, {"'sequsedOriKvOptional'"}},
      {"lse needed", [](SmlaCall& c) { c.lse = nullptr; }, kInvalid, {"'softmaxLseOutOptional'", "returnSoftmaxLse"}},
  });
}

TEST(SmlaChecks, FeaturesAndShapes) {
  expectRejected({
      {"windows without band", [](SmlaCall& c) { c.oriMode = 3; }, kInvalid, {"'oriWinLeft'", "oriMaskMode 3"}},
      {"out shape",
       [](SmlaCall& c) {
         c.out = c.pool.make(ACL_BF16, {6, 4, 256});
       },
       kInvalid,
       {"'attnOutOut'"}},
      {"out dtype",
       [](SmlaCall& c) {
         c.out = c.pool.make(ACL_FLOAT16, {6, 4, kD});
       },
       kInvalid,
       {"'attnOutOut'"}},
      {"heads", [](SmlaCall& c) { reshapeQ(c, 129, kD); }, kInvalid, {"'q'", "1 .. 128"}},
      {"D", [](SmlaCall& c) { reshapeQ(c, 4, 256); }, kInvalid, {"'q'", "D = 512"}},
      {"kv heads",
       [](SmlaCall& c) {
         c.oriKv = c.pool.make(ACL_BF16, {4, 4, 2, kD});
       },
       kInvalid,
       {"'oriKvOptional'"}},
      {"block size",
       [](SmlaCall& c) {
         c.oriKv = c.pool.make(ACL_BF16, {4, 1025, 1, kD});
       },
       kInvalid,
       {"'oriKvOptional'", "1 .. 1024"}},
      {"kv dtype",
       [](SmlaCall& c) {
         c.cmpKv = c.pool.make(ACL_FLOAT16, {2, 4, 1, kD});
       },
       kInvalid,
       {"'cmpKvOptional'"}},
      {"seqused size",
       [](SmlaCall& c) {
         c.usedOri = int32Tensor(c.pool, {3}, {5, 8, 8});
       },
       kInvalid,
       {"'sequsedOriKvOptional'", "2 elements"}},
      {"residual size",
       [](SmlaCall& c) {
         c.residual = int32Tensor(c.pool, {3}, {1, 0, 0});
       },
       kInvalid,
       {"'cmpResidualKvOptional'"}},
      {"indices tokens",
       [](SmlaCall& c) {
         c.cmpIdx = c.pool.make(ACL_INT32, {5, 1, 3});
       },
       kInvalid,
       {"'cmpSparseIndicesOptional'"}},
      {"table batches",
       [](SmlaCall& c) {
         c.oriTable = int32Tensor(c.pool, {3, 2}, {0, 1, 2, 3, 0, 0});
       },
       kInvalid,
       {"'oriBlockTableOptional'", "B = 2"}},
      {"sinks heads", [](SmlaCall& c) { c.sinks = c.pool.make(ACL_FLOAT, {8}); }, kInvalid, {"'sinksOptional'"}},
      {"lse shape",
       [](SmlaCall& c) {
         c.lse = c.pool.make(ACL_FLOAT, {6, 4, 1});
       },
       kInvalid,
       {"'softmaxLseOutOptional'"}},
      {"metadata size",
       [](SmlaCall& c) { c.metadata = c.pool.make(ACL_INT32, {512}); },
       kInvalid,
       {"'metadataOptional'", "1024 elements"}},
  });
}

TEST(SmlaChecks, Values) {
  expectRejected({
      {"cu first",
       [](SmlaCall& c) {
         c.cuQ = int32Tensor(c.pool, {3}, {1, 2, 6});
       },
       kInvalid,
       {"'cuSeqlensQOptional'", "first element 0"}},
      {"cu order",
       [](SmlaCall& c) {
         c.cuQ = int32Tensor(c.pool, {3}, {0, 4, 3});
       },
       kInvalid,
       {"'cuSeqlensQOptional'", "non-decreasing"}},
      {"cu last",
       [](SmlaCall& c) {
         c.cuQ = int32Tensor(c.pool, {3}, {0, 2, 7});
       },
       kInvalid,
       {"'cuSeqlensQOptional'", "<= 6"}},
      {"seqused range",
       [](SmlaCall& c) {
         c.usedOri = int32Tensor(c.pool, {2}, {5, 9});
       },
       kInvalid,
       {"'sequsedOriKvOptional'", "0 .. 8"}},
      {"residual range",
       [](SmlaCall& c) {
         c.residual = int32Tensor(c.pool, {2}, {4, 0});
       },
       kInvalid,
       {"'cmpResidualKvOptional'", "[0, cmpRatio = 4)"}},
      {"block id",
       [](SmlaCall& c) {
         c.oriTable = int32Tensor(c.pool, {2, 2}, {0, 4, 2, 3});
       },
       kInvalid,
       {"'oriBlockTableOptional'", "0 .. 3", "[0, 1] = 4"}},
  });
}

TEST(SmlaChecks, A2A3ProfileLimits) {
  ASSERT_EQ(gradkitSetSoc("Ascend910B"), 0);
  expectRejected({
      {"heads power of two", [](SmlaCall& c) { reshapeQ(c, 3, kD); }, kInvalid, {"'q'", "power of two"}},
      {"block size", [](SmlaCall&) {}, kInvalid, {"'oriKvOptional'", "multiple of 16"}},
      {"band only", [](SmlaCall& c) { c.winLeft = 63; }, kInvalid, {"'oriMaskMode'", "Ascend910B"}},
      {"csa ratio", [](SmlaCall& c) { c.ratio = 2; }, kInvalid, {"'cmpRatio'", "CSA 4"}},
  });
  SmlaCall call;  // blocks of 16 rows: one block per batch
  call.oriKv = call.pool.make(ACL_BF16, {2, 16, 1, kD});
  call.cmpKv = call.pool.make(ACL_BF16, {2, 16, 1, kD});
  call.oriTable = int32Tensor(call.pool, {2, 1}, {0, 1});
  call.cmpTable = int32Tensor(call.pool, {2, 1}, {1, 0});
  EXPECT_EQ(call.run(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  rt::clearSocOverride();
}

TEST(SmlaChecks, EmptyOptionalTensorsAreAbsentAndAPlaceholderLseIsIgnored) {
  SmlaCall call;
  call.cuOri = call.pool.make(ACL_INT32, {0});  // upstream's example passes empty prefix sums for the metadata call
  call.returnLse = false;
  call.lse = call.pool.make(ACL_FLOAT16, {1});  // never checked or written without returnSoftmaxLse
  EXPECT_EQ(call.run(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
}

}  // namespace
}  // namespace gradkit::test::smla
