// aclnnLightningIndexerV2MetadataGetWorkspaceSize: every rule (code and message) in upstream's order
// (docs/lightning_indexer_v2.md "Checks"; workspaceSize / executor null 561103, every other rule 161002), the AI-CPU
// kernel's run-time value checks moved into the first phase, upstream's two example calls that fail (topk 0; no
// cmp_residual_k with cmp ratio 4 and the causal mask). Only the first phase is called: executors are destroyed unrun.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ops/liv2_test_util.h"

namespace gradkit::test::liv2 {
namespace {

using mhc::expectRejected;
using mhc::Rejection;
using mhc::ScopedSoc;

constexpr const char* kMetaApi = "aclnnLightningIndexerV2Metadata";

// The metadata op.
struct MetaCall {
  explicit MetaCall(const Config&) { metadata = pool.make(ACL_INT32, {1024}); }
  Outcome call() {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    Outcome o;
    o.status = aclnnLightningIndexerV2MetadataGetWorkspaceSize(
        cuQ, cuK, sequsedQ, sequsedK, residual, headsQ, headsK, headDim, topk, batch, maxQ, maxK,
        nullLayoutQ ? nullptr : layoutQ.data(), nullLayoutK ? nullptr : layoutK.data(), maskMode, cmpRatio, metadata,
        nullSize ? nullptr : &size, nullExecutor ? nullptr : &executor);
    o.message = aclGetRecentErrMsg();
    if (o.status == ACLNN_SUCCESS) aclDestroyAclOpExecutor(executor);
    return o;
  }
  aclTensor* ints(const std::vector<int32_t>& v) {
    aclTensor* t = pool.make(ACL_INT32, {static_cast<int64_t>(v.size())});
    std::memcpy(t->data, v.data(), v.size() * sizeof(int32_t));
    return t;
  }
  TensorPool pool;
  const aclTensor *cuQ = nullptr, *cuK = nullptr, *sequsedQ = nullptr, *sequsedK = nullptr, *residual = nullptr,
                  *metadata = nullptr;
  int64_t headsQ = 16, headsK = 1, headDim = 128, topk = 32, batch = 2, maxQ = 64, maxK = 32, maskMode = 3,
          cmpRatio = 4;
  std::string layoutQ = "BSND", layoutK = "BSND";
  bool nullLayoutQ = false, nullLayoutK = false, nullSize = false, nullExecutor = false;
};

TEST(LiV2MetadataChecks, RulesInOrder) {
  ScopedSoc soc("Ascend950");
  using R = Rejection<MetaCall>;
  const auto withResidual = [](MetaCall& c) { c.residual = c.ints({2, 2}); };
  {
    MetaCall ok{Config{}};
    withResidual(ok);
    EXPECT_EQ(ok.call().status, ACLNN_SUCCESS) << aclGetRecentErrMsg();
  }
  expectRejected<MetaCall>(
      kMetaApi, Config{},
      std::vector<R>{
          {"size", [](MetaCall& c) { c.nullSize = true; }, 561103, "workspaceSize", "a non-null", "nullptr"},
          {"executor", [](MetaCall& c) { c.nullExecutor = true; }, 561103, "executor", "a non-null", "nullptr"},
          {"heads 0", [](MetaCall& c) { c.headsQ = 0; }, 161002, "numHeadsQ", "[1, 64]", "0"},
          {"heads k 2", [](MetaCall& c) { c.headsK = 2; }, 161002, "numHeadsK", "1", "2"},
          {"head dim", [](MetaCall& c) { c.headDim = 64; }, 161002, "headDim", "128", "64"},
          {"topk 0 (upstream's example)", [](MetaCall& c) { c.topk = 0; }, 161002, "topk", "[1, 8192]", "0"},
          {"batch", [](MetaCall& c) { c.batch = -1; }, 161002, "batchSize", "a value >= 0", "-1"},
          {"max q", [](MetaCall& c) { c.maxQ = -2; }, 161002, "maxSeqlenQ", "-1 or a length", "-2"},
          {"max k", [](MetaCall& c) { c.maxK = -2; }, 161002, "maxSeqlenK", "-1 or a length", "-2"},
          {"mask", [](MetaCall& c) { c.maskMode = 1; }, 161002, "maskMode", "0 (no mask) or 3", "1"},
          {"ratio", [](MetaCall& c) { c.cmpRatio = 200; }, 161002, "cmpRatio", "[1, 128]", "200"},
          {"layout q null", [](MetaCall& c) { c.nullLayoutQ = true; }, 161002, "layoutQOptional", "\"TND\" or \"BSND\"",
           "nullptr"},
          {"layout k", [](MetaCall& c) { c.layoutK = "BNSD"; }, 161002, "layoutKOptional", "\"PA_BBND\"", "\"BNSD\""},
          {"layouts differ", [](MetaCall& c) { c.layoutK = "TND"; }, 161002, "layoutKOptional", "unless PA_BBND",
           "\"TND\""},
          {"bsnd max q 0", [](MetaCall& c) { c.maxQ = 0; }, 161002, "maxSeqlenQ", "BSND", "0"},
          {"residual missing (upstream's LIV2 example)", [](MetaCall&) {}, 161002, "cmpResidualKOptional",
           "cmpRatio != 1 with maskMode 3", "nullptr"},
          {"metadata missing",
           [&](MetaCall& c) {
             withResidual(c);
             c.metadata = nullptr;
           },
           161002, "metadata", "INT32 [1024]", "nullptr"},
          {"metadata 512",
           [&](MetaCall& c) {
             withResidual(c);
             c.metadata = c.pool.make(ACL_INT32, {512});
           },
           161002, "metadata", "1024 elements", "512 elements"},
          {"residual size",
           [](MetaCall& c) {
             c.residual = c.ints({2, 2, 2});
           },
           161002, "cmpResidualKOptional", "[B] with B = 2 from batchSize", "shape [3]"},
          {"residual value",
           [](MetaCall& c) {
             c.residual = c.ints({2, 4});
           },
           161002, "cmpResidualKOptional", "[0, 4)", "cmpResidualKOptional[1] = 4"},
          {"seqused_q above max",
           [&](MetaCall& c) {
             withResidual(c);
             c.sequsedQ = c.ints({64, 65});
           },
           161002, "sequsedQOptional", "<= maxSeqlenQ = 64", "sequsedQOptional[1] = 65"},
      });
}

TEST(LiV2MetadataChecks, TndBatchesAndValues) {
  ScopedSoc soc("Ascend950");
  using R = Rejection<MetaCall>;
  const auto tndCall = [](MetaCall& c) {
    c.layoutQ = c.layoutK = "TND";
    c.maskMode = 0;
    c.cuQ = c.ints({0, 5, 9});
    c.cuK = c.ints({0, 3, 8});
  };
  {
    MetaCall ok{Config{}};
    tndCall(ok);
    EXPECT_EQ(ok.call().status, ACLNN_SUCCESS) << aclGetRecentErrMsg();
  }
  expectRejected<MetaCall>(kMetaApi, Config{},
                           std::vector<R>{
                               {"no cu_k",
                                [&](MetaCall& c) {
                                  tndCall(c);
                                  c.cuK = nullptr;
                                },
                                161002, "cuSeqlensKOptional", "layoutKOptional is TND", "nullptr"},
                               {"batches differ",
                                [&](MetaCall& c) {
                                  tndCall(c);
                                  c.cuK = c.ints({0, 8});
                                },
                                161002, "cuSeqlensKOptional", "2 from cuSeqlensQOptional", "1 from cuSeqlensKOptional"},
                               {"decreasing",
                                [&](MetaCall& c) {
                                  tndCall(c);
                                  c.cuQ = c.ints({0, 5, 4});
                                },
                                161002, "cuSeqlensQOptional", "non-decreasing", "cuSeqlensQOptional[2] = 4 after 5"},
                               {"seqused_k above length",
                                [&](MetaCall& c) {
                                  tndCall(c);
                                  c.sequsedK = c.ints({3, 6});
                                },
                                161002, "sequsedKOptional", "cu_seqlens length 5", "sequsedKOptional[1] = 6"},
                           });
}

}  // namespace
}  // namespace gradkit::test::liv2
