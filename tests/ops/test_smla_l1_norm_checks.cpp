// aclnnSparseFlashMlaSoftmaxL1Norm's argument rules: each broken on a valid call (TND CSA, mask 3, every optional
// tensor present), with its code and the argument its message names, in the order of upstream's tiling check, then
// gradkit's shape and value rules; the accepted variants (BSND, dense, mask 0, empty optionals, an empty q) run.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "aclnnop/aclnn_sparse_flash_mla_softmax_l1_norm.h"
#include "gradkit/gradkit.h"
#include "ops/block_residuals_check_util.h"
#include "ops/smla_test_util.h"
#include "runtime/runtime.h"

namespace gradkit::test::smla {
namespace {

using block_residuals::kInvalid;
using block_residuals::kNull;
using block_residuals::rejects;

/** A valid call: TND, 2 batches of 2 and 4 query rows, 6 compressed keys (2 + 4, ratio 4), top-3 lists. */
struct L1Call {
  static constexpr const char* kApi = "aclnnSparseFlashMlaSoftmaxL1Norm";
  TensorPool pool;
  aclTensor *q, *k, *lse, *idx, *cuQ, *cuK, *usedQ, *usedK, *residual, *topkLen, *metadata, *out;
  double scale = 0.0441941738;
  int64_t maxSeqlenK = 0, ratio = 4, mode = 3;
  std::string layoutQ = "TND", layoutK = "TND";
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;

  explicit L1Call(aclDataType dtype = ACL_BF16, int64_t n1 = 4) {
    std::mt19937 rng(5);
    q = pool.make(dtype, {6, n1, kD});
    fillUniform(q, rng);
    k = pool.make(dtype, {6, 1, kD});
    fillUniform(k, rng);
    lse = pool.make(ACL_FLOAT, {1, 6, n1});
    idx = int32Tensor(pool, {6, 1, 3}, {0, -1, 0, 0, 1, 1, 1, 0, -1, 0, 1, 2, 3, 0, 1, 1, 2, 3});
    cuQ = int32Tensor(pool, {3}, {0, 2, 6});
    cuK = int32Tensor(pool, {3}, {0, 2, 6});
    usedQ = int32Tensor(pool, {2}, {2, 4});
    usedK = int32Tensor(pool, {2}, {2, 4});
    residual = int32Tensor(pool, {2}, {1, 0});
    topkLen = int32Tensor(pool, {6, 1}, {3, 3, 3, 3, 3, 3});
    metadata = pool.make(ACL_INT32, {64});
    out = pool.make(ACL_FLOAT, {6, 1, 3});
  }

  Outcome call() {
    Outcome o;
    o.status = aclnnSparseFlashMlaSoftmaxL1NormGetWorkspaceSize(
        q, k, lse, idx, cuQ, cuK, usedQ, usedK, residual, topkLen, metadata, scale, maxSeqlenK, ratio, mode,
        layoutQ.data(), layoutK.data(), out, &workspaceSize, &executor);
    if (o.status != ACLNN_SUCCESS) o.message = aclGetRecentErrMsg();
    return o;
  }

  aclnnStatus run() {
    const Outcome planned = call();
    if (planned.status != ACLNN_SUCCESS) return planned.status;
    aclrtStream stream = nullptr;
    aclrtCreateStream(&stream);
    void* ws = nullptr;
    if (workspaceSize > 0) aclrtMalloc(&ws, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST);
    const aclnnStatus status = aclnnSparseFlashMlaSoftmaxL1Norm(ws, workspaceSize, executor, stream);
    aclrtSynchronizeStream(stream);
    if (ws != nullptr) aclrtFree(ws);
    aclrtDestroyStream(stream);
    return status;
  }

  /** The BSND form of the call: 2 batches of 3 query rows and 4 keys each. */
  void toBsnd() {
    layoutQ = layoutK = "BSND";
    const int64_t n1 = q->viewDims[1];
    q = pool.make(q->dtype, {2, 3, n1, kD});
    k = pool.make(q->dtype, {2, 4, 1, kD});
    lse = pool.make(ACL_FLOAT, {2, 1, 3, n1});
    idx = int32Tensor(pool, {2, 3, 1, 3}, {0, 1, 2});
    cuQ = cuK = nullptr;
    topkLen = int32Tensor(pool, {2, 3, 1}, {3, 3, 3, 3, 3, 3});
    usedQ = int32Tensor(pool, {2}, {3, 2});
    usedK = int32Tensor(pool, {2}, {4, 3});
    out = pool.make(ACL_FLOAT, {2, 3, 1, 3});
  }
};

struct Rule {
  const char* name;
  std::function<void(L1Call&)> breakIt;
  aclnnStatus code;
  std::vector<std::string> fragments;
};

void expectRejected(const std::vector<Rule>& rules) {
  for (const Rule& rule : rules) {
    L1Call call;
    rule.breakIt(call);
    EXPECT_TRUE(rejects(call.call(), rule.code, L1Call::kApi, rule.fragments)) << rule.name;
  }
}

TEST(SmlaL1Checks, ValidCallsAreAcceptedAndRun) {
  const std::vector<std::pair<const char*, std::function<void(L1Call&)>>> variants{
      {"TND CSA mask 3", [](L1Call&) {}},
      {"fp16",
       [](L1Call& c) {
         c.q = c.pool.make(ACL_FLOAT16, {6, 4, kD});
         c.k = c.pool.make(ACL_FLOAT16, {6, 1, kD});
       }},
      {"BSND", [](L1Call& c) { c.toBsnd(); }},
      {"TND dense, maxSeqlenK 8",
       [](L1Call& c) {
         c.idx = c.topkLen = nullptr;
         c.maxSeqlenK = 8;
         c.out = c.pool.make(ACL_FLOAT, {6, 1, 8});
       }},
      {"BSND dense (width S2)",
       [](L1Call& c) {
         c.toBsnd();
         c.idx = nullptr;
         c.out = c.pool.make(ACL_FLOAT, {2, 3, 1, 4});
       }},
      {"mask 0 with lengths, no residual",
       [](L1Call& c) {
         c.mode = 0;
         c.residual = nullptr;
       }},
      {"empty optionals are absent",
       [](L1Call& c) {
         c.usedQ = c.pool.make(ACL_INT32, {0});
         c.usedK = c.pool.make(ACL_INT32, {0});
         c.topkLen = c.pool.make(ACL_INT32, {0, 1});
       }},
      {"ratio 1 mask 3 needs no residual",
       [](L1Call& c) {
         c.ratio = 1;
         c.residual = nullptr;
       }},
      {"an empty q: nothing to compute",
       [](L1Call& c) {
         c.q = c.pool.make(ACL_BF16, {0, 4, kD});
         c.lse = c.pool.make(ACL_FLOAT, {1, 0, 4});
         c.idx = c.topkLen = c.usedQ = nullptr;
         c.cuQ = int32Tensor(c.pool, {3}, {0, 0, 0});
         c.maxSeqlenK = 4;
         c.out = c.pool.make(ACL_FLOAT, {0, 1, 4});
       }},
      {"strided lse, out and INT32 tensors",
       [](L1Call& c) {
         c.lse = c.pool.makeStrided(ACL_FLOAT, {1, 6, 4});
         c.out = c.pool.makeStrided(ACL_FLOAT, {6, 1, 3});
         c.cuQ = int32Tensor(c.pool, {3}, {0, 2, 6}, true);
         c.idx = int32Tensor(c.pool, {6, 1, 3}, {0, 1, 2}, true);
       }},
  };
  for (const auto& [name, change] : variants) {
    L1Call call;
    change(call);
    const Outcome planned = call.call();
    EXPECT_EQ(planned.status, ACLNN_SUCCESS) << name << ": " << planned.message;
    if (planned.status != ACLNN_SUCCESS) continue;
    aclDestroyAclOpExecutor(call.executor);
    EXPECT_EQ(call.run(), ACLNN_SUCCESS) << name;
  }
}

TEST(SmlaL1Checks, NullRequiredArgumentsThenTheProfile) {
  expectRejected({
      {"q", [](L1Call& c) { c.q = nullptr; }, kNull, {"'q'"}},
      {"k", [](L1Call& c) { c.k = nullptr; }, kNull, {"'k'"}},
      {"lse", [](L1Call& c) { c.lse = nullptr; }, kNull, {"'softmaxLse'"}},
      {"out", [](L1Call& c) { c.out = nullptr; }, kNull, {"'softmaxL1Norm'"}},
      {"metadata", [](L1Call& c) { c.metadata = nullptr; }, kNull, {"'metadataOptional'"}},
  });
  L1Call call;
  EXPECT_TRUE(rejects({aclnnSparseFlashMlaSoftmaxL1NormGetWorkspaceSize(
                           call.q, call.k, call.lse, call.idx, call.cuQ, call.cuK, call.usedQ, call.usedK,
                           call.residual, call.topkLen, call.metadata, call.scale, 0, 4, 3, call.layoutQ.data(),
                           call.layoutK.data(), call.out, nullptr, &call.executor),
                       aclGetRecentErrMsg()},
                      kNull, L1Call::kApi, {"'workspaceSize'"}));
  mhc::ScopedSoc scoped("Ascend910B");
  EXPECT_TRUE(rejects(L1Call().call(), kInvalid, L1Call::kApi, {"Ascend950", "Ascend910B"}));
}

TEST(SmlaL1Checks, UpstreamsRulesInOrder) {
  expectRejected({
      {"layoutQ", [](L1Call& c) { c.layoutQ = "PA_BBND"; }, kInvalid, {"'layoutQOptional'", "PA_BBND"}},
      {"layoutK", [](L1Call& c) { c.layoutK = "SBH"; }, kInvalid, {"'layoutKOptional'"}},
      {"layouts differ", [](L1Call& c) { c.layoutK = "BSND"; }, kInvalid, {"'layoutKOptional'", "TND"}},
      {"q dtype",
       [](L1Call& c) {
         c.q = c.pool.make(ACL_FLOAT, {6, 4, kD});
       },
       kInvalid,
       {"'q'"}},
      {"k dtype",
       [](L1Call& c) {
         c.k = c.pool.make(ACL_FLOAT, {6, 1, kD});
       },
       kInvalid,
       {"'k'"}},
      {"lse dtype",
       [](L1Call& c) {
         c.lse = c.pool.make(ACL_FLOAT16, {1, 6, 4});
       },
       kInvalid,
       {"'softmaxLse'"}},
      {"out dtype",
       [](L1Call& c) {
         c.out = c.pool.make(ACL_FLOAT16, {6, 1, 3});
       },
       kInvalid,
       {"'softmaxL1Norm'"}},
      {"indices dtype",
       [](L1Call& c) {
         c.idx = c.pool.make(ACL_INT64, {6, 1, 3});
       },
       kInvalid,
       {"'sparseIndicesOptional'"}},
      {"cuK dtype", [](L1Call& c) { c.cuK = c.pool.make(ACL_INT64, {3}); }, kInvalid, {"'cuSeqlensKOptional'"}},
      {"topk length dtype",
       [](L1Call& c) {
         c.topkLen = c.pool.make(ACL_FLOAT, {6, 1});
       },
       kInvalid,
       {"'topkLengthOptional'"}},
      {"metadata dtype",
       [](L1Call& c) { c.metadata = c.pool.make(ACL_FLOAT, {64}); },
       kInvalid,
       {"'metadataOptional'"}},
      {"q and k dtypes",
       [](L1Call& c) {
         c.k = c.pool.make(ACL_FLOAT16, {6, 1, kD});
       },
       kInvalid,
       {"'k'", "q"}},
      {"q rank",
       [](L1Call& c) {
         c.q = c.pool.make(ACL_BF16, {1, 6, 4, kD});
       },
       kInvalid,
       {"'q'", "3 dims"}},
      {"lse rank",
       [](L1Call& c) {
         c.lse = c.pool.make(ACL_FLOAT, {6, 4});
       },
       kInvalid,
       {"'softmaxLse'"}},
      {"metadata rank",
       [](L1Call& c) {
         c.metadata = c.pool.make(ACL_INT32, {8, 8});
       },
       kInvalid,
       {"'metadataOptional'"}},
      {"cmpRatio", [](L1Call& c) { c.ratio = 129; }, kInvalid, {"'cmpRatio'", "129"}},
      {"maskMode", [](L1Call& c) { c.mode = 4; }, kInvalid, {"'maskMode'"}},
      {"k heads",
       [](L1Call& c) {
         c.k = c.pool.make(ACL_BF16, {3, 2, kD});
       },
       kInvalid,
       {"'k'", "N2 = 1"}},
      {"k D",
       [](L1Call& c) {
         c.k = c.pool.make(ACL_BF16, {6, 1, 256});
       },
       kInvalid,
       {"'k'", "D = 512"}},
      {"TND without cuQ", [](L1Call& c) { c.cuQ = nullptr; }, kInvalid, {"'cuSeqlensQOptional'"}},
      {"TND without cuK", [](L1Call& c) { c.cuK = nullptr; }, kInvalid, {"'cuSeqlensKOptional'"}},
      {"cuK rank",
       [](L1Call& c) {
         c.cuK = int32Tensor(c.pool, {3, 1}, {0, 2, 6});
       },
       kInvalid,
       {"'cuSeqlensKOptional'"}},
      {"cuK batches",
       [](L1Call& c) {
         c.cuK = int32Tensor(c.pool, {2}, {0, 6});
       },
       kInvalid,
       {"'cuSeqlensKOptional'", "3 elements"}},
      {"N1",
       [](L1Call& c) {
         c.q = c.pool.make(ACL_BF16, {6, 129, kD});
       },
       kInvalid,
       {"'q'", "N1"}},
      {"q D",
       [](L1Call& c) {
         c.q = c.pool.make(ACL_BF16, {6, 4, 64});
       },
       kInvalid,
       {"'q'", "D = 512"}},
      {"lse shape",
       [](L1Call& c) {
         c.lse = c.pool.make(ACL_FLOAT, {1, 6, 3});
       },
       kInvalid,
       {"'softmaxLse'"}},
      {"residual missing", [](L1Call& c) { c.residual = nullptr; }, kInvalid, {"'cmpResidualKOptional'"}},
      {"residual size",
       [](L1Call& c) {
         c.residual = int32Tensor(c.pool, {3}, {0, 0, 0});
       },
       kInvalid,
       {"'cmpResidualKOptional'"}},
      {"seqused q size", [](L1Call& c) { c.usedQ = int32Tensor(c.pool, {1}, {2}); }, kInvalid, {"'sequsedQOptional'"}},
      {"seqused k size",
       [](L1Call& c) {
         c.usedK = int32Tensor(c.pool, {3}, {1, 1, 1});
       },
       kInvalid,
       {"'sequsedKOptional'"}},
      {"indices rank",
       [](L1Call& c) {
         c.idx = c.pool.make(ACL_INT32, {6, 3});
       },
       kInvalid,
       {"'sparseIndicesOptional'"}},
      {"mask 0 without lengths",
       [](L1Call& c) { c.mode = 0, c.topkLen = nullptr; },
       kInvalid,
       {"'topkLengthOptional'"}},
      {"lengths rank under mask 0",
       [](L1Call& c) { c.mode = 0, c.topkLen = c.pool.make(ACL_INT32, {6}); },
       kInvalid,
       {"'topkLengthOptional'"}},
  });
  L1Call bsnd;
  bsnd.toBsnd();
  bsnd.k = bsnd.pool.make(ACL_BF16, {3, 4, 1, kD});
  EXPECT_TRUE(rejects(bsnd.call(), kInvalid, L1Call::kApi, {"'k'", "dim 0 = B = 2"}));
  L1Call withCu;
  withCu.toBsnd();
  withCu.cuK = int32Tensor(withCu.pool, {3}, {0, 4, 8});
  EXPECT_TRUE(rejects(withCu.call(), kInvalid, L1Call::kApi, {"'cuSeqlensKOptional'", "BSND"}));
}

TEST(SmlaL1Checks, GradkitsShapeAndValueRules) {
  expectRejected({
      {"no batch",
       [](L1Call& c) {
         c.cuQ = int32Tensor(c.pool, {1}, {0}), c.cuK = int32Tensor(c.pool, {1}, {0});
         c.residual = c.usedQ = c.usedK = nullptr, c.ratio = 1;
       },
       kInvalid,
       {"'cuSeqlensQOptional'", "at least one batch"}},
      {"empty k",
       [](L1Call& c) {
         c.k = c.pool.make(ACL_BF16, {0, 1, kD});
       },
       kInvalid,
       {"'k'", "empty k"}},
      {"indices tokens",
       [](L1Call& c) {
         c.idx = int32Tensor(c.pool, {5, 1, 3}, {0});
       },
       kInvalid,
       {"'sparseIndicesOptional'"}},
      {"lengths tokens",
       [](L1Call& c) {
         c.topkLen = int32Tensor(c.pool, {6, 2}, {0});
       },
       kInvalid,
       {"'topkLengthOptional'"}},
      {"metadata size",
       [](L1Call& c) { c.metadata = c.pool.make(ACL_INT32, {1024}); },
       kInvalid,
       {"'metadataOptional'", "64 elements"}},
      {"out width",
       [](L1Call& c) {
         c.out = c.pool.make(ACL_FLOAT, {6, 1, 4});
       },
       kInvalid,
       {"'softmaxL1Norm'", "K"}},
      {"TND dense maxSeqlenK < 0", [](L1Call& c) { c.idx = nullptr, c.maxSeqlenK = -1; }, kInvalid, {"'maxSeqlenK'"}},
      {"TND dense out width",
       [](L1Call& c) { c.idx = nullptr, c.maxSeqlenK = 8; },
       kInvalid,
       {"'softmaxL1Norm'", "maxSeqlenK"}},
      {"cuQ start",
       [](L1Call& c) {
         c.cuQ = int32Tensor(c.pool, {3}, {1, 2, 6});
       },
       kInvalid,
       {"'cuSeqlensQOptional'", "first element 0"}},
      {"cuQ past T1",
       [](L1Call& c) {
         c.cuQ = int32Tensor(c.pool, {3}, {0, 2, 7});
       },
       kInvalid,
       {"'cuSeqlensQOptional'", "<= 6"}},
      {"cuK decreasing",
       [](L1Call& c) {
         c.cuK = int32Tensor(c.pool, {3}, {0, 3, 2});
       },
       kInvalid,
       {"'cuSeqlensKOptional'", "non-decreasing"}},
      {"seqused q past the batch",
       [](L1Call& c) {
         c.usedQ = int32Tensor(c.pool, {2}, {3, 4});
       },
       kInvalid,
       {"'sequsedQOptional'"}},
      {"seqused k negative",
       [](L1Call& c) {
         c.usedK = int32Tensor(c.pool, {2}, {-1, 4});
       },
       kInvalid,
       {"'sequsedKOptional'", ">= 0"}},
      {"residual value",
       [](L1Call& c) {
         c.residual = int32Tensor(c.pool, {2}, {4, 0});
       },
       kInvalid,
       {"'cmpResidualKOptional'", "[0, cmpRatio = 4)"}},
      {"topk length value",
       [](L1Call& c) {
         c.topkLen = int32Tensor(c.pool, {6, 1}, {3, -2});
       },
       kInvalid,
       {"'topkLengthOptional'", ">= 0"}},
      {"TND dense keys past maxSeqlenK",
       [](L1Call& c) {
         c.idx = nullptr, c.maxSeqlenK = 3;
         c.out = c.pool.make(ACL_FLOAT, {6, 1, 3});
       },
       kInvalid,
       {"'maxSeqlenK'", "batch 1 has 4"}},
      {"out overlaps lse",
       [](L1Call& c) {
         c.out = c.pool.view(c.lse->data, ACL_FLOAT, {6, 1, 3}, {3, 3, 1}, 0, 24);
       },
       kInvalid,
       {"softmaxL1Norm", "softmaxLse"}},
  });
  L1Call bsnd;
  bsnd.toBsnd();
  bsnd.usedK = int32Tensor(bsnd.pool, {2}, {5, 3});
  EXPECT_TRUE(rejects(bsnd.call(), kInvalid, L1Call::kApi, {"'sequsedKOptional'", "k's S2"}));
}

}  // namespace
}  // namespace gradkit::test::smla
