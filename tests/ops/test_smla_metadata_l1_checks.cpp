// aclnnSparseFlashMlaSoftmaxL1NormMetadataGetWorkspaceSize: the rule book of
// src/ops/sparse_attention/smla_metadata_l1_check.cpp in its order, code and message (561103 for the out parameters,
// the profile, single parameters, existence, consistency, gradkit's rules, the values), and upstream's doc program's
// call, which fails with 161002 on a device too (headDim 128).
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "ops/smla_metadata_test_util.h"

namespace gradkit::test::smla {
namespace {

using mhc::failsWith;
using mhc::Rejection;

constexpr aclnnStatus kInvalid = ACLNN_ERR_PARAM_INVALID;
constexpr const char* kApi = "aclnnSparseFlashMlaSoftmaxL1NormMetadata";

struct Config {
  bool tnd = false;
};

/** A valid call: BSND B 2 (16 query, 64 key rows each), or TND with cu_seqlens of two batches. */
struct L1 : L1Call {
  explicit L1(const Config& k) {
    if (!k.tnd) return;
    layoutQ = layoutK = "TND";
    batchSize = 0;
    cuSeqLensQ = ints({3}, {0, 6, 10});
    cuSeqLensK = ints({3}, {0, 128, 256});
    maskMode = 3;
    cmpRatio = 4;
    cmpResidualK = ints({2}, {2, 1});
  }
  Outcome call() { return L1Call::call().outcome; }
};

using R = Rejection<L1>;

TEST(SmlaL1MetadataChecks, ValidCallsSucceedAndRun) {
  for (bool tnd : {false, true}) {
    L1 c({tnd});
    EXPECT_EQ(c.call().status, ACLNN_SUCCESS) << recentError();
  }
  L1 sparse({true});  // mask mode 0 with top-k: lengths per row; seqused on both sides
  sparse.maskMode = 0;
  sparse.topk = 128;
  sparse.topkLength = sparse.ints({10, 1}, std::vector<int32_t>(10, 64));
  sparse.seqUsedQ = sparse.ints({2}, {6, 4});
  sparse.seqUsedK = sparse.ints({2}, {100, 128});
  EXPECT_EQ(sparse.call().status, ACLNN_SUCCESS) << recentError();
}

TEST(SmlaL1MetadataChecks, OutParametersAndProfile) {
  L1 c({false});
  c.nullSize = true;
  c.headDim = 1;
  EXPECT_TRUE(failsWith(c.call(), ACLNN_ERR_INNER_NULLPTR, {"argument 'workspaceSize': expected a non-null pointer"}));
  L1 d({false});
  d.nullExecutor = true;
  EXPECT_TRUE(failsWith(d.call(), ACLNN_ERR_INNER_NULLPTR, {"argument 'executor'"}));
  mhc::ScopedSoc scoped("Ascend910_93");
  L1 e({false});
  EXPECT_TRUE(failsWith(e.call(), kInvalid, {std::string(kApi) + ": the operator exists only on Ascend950"}));
}

TEST(SmlaL1MetadataChecks, UpstreamDocProgramFailsLikeCann) {
  // TND, cu_seqlens {0, 16} / {0, 4}, N1 8, headDim 128, topk 64, mask mode 3, cmpRatio 4 without residual.
  L1 c({false});
  c.layoutQ = c.layoutK = "TND";
  c.batchSize = 0;
  c.maxSeqLenQ = 16;
  c.maxSeqLenK = 4;
  c.headDim = 128;
  c.topk = 64;
  c.maskMode = 3;
  c.cmpRatio = 4;
  c.cuSeqLensQ = c.ints({2}, {0, 16});
  c.cuSeqLensK = c.ints({2}, {0, 4});
  EXPECT_TRUE(failsWith(c.call(), kInvalid, {"argument 'headDim': expected 512, given 128"}));
}

TEST(SmlaL1MetadataChecks, SingleParametersInOrder) {
  mhc::expectRejected(
      kApi, Config{false},
      std::vector<R>{
          {"batchSize < 0", [](L1& c) { c.batchSize = -1; }, kInvalid, "batchSize", "[0, 1048576]", "-1"},
          {"maxSeqLenQ < 0", [](L1& c) { c.maxSeqLenQ = -1; }, kInvalid, "maxSeqLenQ", "[0, 2147483647]", "-1"},
          {"maxSeqLenK < 0", [](L1& c) { c.maxSeqLenK = -1; }, kInvalid, "maxSeqLenK", "[0, 2147483647]", "-1"},
          {"numHeadsQ 129", [](L1& c) { c.numHeadsQ = 129; }, kInvalid, "numHeadsQ", "[1, 128]", "129"},
          {"numHeadsK 2", [](L1& c) { c.numHeadsK = 2; }, kInvalid, "numHeadsK", "1", "2"},
          {"headDim 128", [](L1& c) { c.headDim = 128; }, kInvalid, "headDim", "512", "128"},
          {"topk < 0", [](L1& c) { c.topk = -1; }, kInvalid, "topk", "[0, 2147483647]", "-1"},
          {"maskMode 4", [](L1& c) { c.maskMode = 4; }, kInvalid, "maskMode", "0 or 3", "4"},
          {"cmpRatio 0", [](L1& c) { c.cmpRatio = 0; }, kInvalid, "cmpRatio", "[1, 128]", "0"},
          {"layoutQ null", [](L1& c) { c.nullLayoutQ = true; }, kInvalid, "layoutQ", "\"BSND\" or \"TND\"", "nullptr"},
          {"layoutQ BNSD", [](L1& c) { c.layoutQ = "BNSD"; }, kInvalid, "layoutQ", "\"BSND\" or \"TND\"", "\"BNSD\""},
          {"BSND maxSeqLenQ 0", [](L1& c) { c.maxSeqLenQ = 0; }, kInvalid, "maxSeqLenQ", "> 0 with layoutQ BSND", "0"},
          {"layoutK null", [](L1& c) { c.nullLayoutK = true; }, kInvalid, "layoutK", "\"BSND\" or \"TND\"", "nullptr"},
          {"layoutK PA_BBND", [](L1& c) { c.layoutK = "PA_BBND"; }, kInvalid, "layoutK", "\"TND\"", "\"PA_BBND\""},
      });
}

TEST(SmlaL1MetadataChecks, ExistenceInOrder) {
  mhc::expectRejected(kApi, Config{true},
                      std::vector<R>{
                          {"TND q without cu", [](L1& c) { c.cuSeqLensQ = nullptr; }, kInvalid, "cuSeqLensQOptional",
                           "(layoutQ TND)", "nullptr"},
                          {"TND k without cu", [](L1& c) { c.cuSeqLensK = c.ints({0}, {}); }, kInvalid,
                           "cuSeqLensKOptional", "(layoutK TND)", "a tensor without rows"},
                          {"sparse mode 0 without lengths",
                           [](L1& c) {
                             c.maskMode = 0;
                             c.topk = 8;
                           },
                           kInvalid, "topkLengthOptional", "(maskMode 0 with sparse indices, topk > 0)", "nullptr"},
                          {"mode 3 ratio 4 without residual", [](L1& c) { c.cmpResidualK = nullptr; }, kInvalid,
                           "cmpResidualKOptional", "(maskMode 3 with cmpRatio != 1)", "nullptr"},
                          {"no metadata", [](L1& c) { c.metadata = c.ints({0}, {}); }, kInvalid, "metadata",
                           "(the output)", "a tensor without rows"},
                      });
}

TEST(SmlaL1MetadataChecks, ConsistencyInOrder) {
  mhc::expectRejected(
      kApi, Config{true},
      std::vector<R>{
          {"cu_q rank 2",
           [](L1& c) {
             c.cuSeqLensQ = c.ints({3, 1}, {0, 6, 10});
           },
           kInvalid, "cuSeqLensQOptional", "1 dim", "2 dims"},
          {"cu_k INT64", [](L1& c) { c.cuSeqLensK = c.pool.make(ACL_INT64, {3}); }, kInvalid, "cuSeqLensKOptional",
           "dtype INT32", "INT64"},
          {"seqused_k FLOAT", [](L1& c) { c.seqUsedK = c.pool.make(ACL_FLOAT, {2}); }, kInvalid, "seqUsedKOptional",
           "dtype INT32", "FLOAT"},
          {"residual rank 2",
           [](L1& c) {
             c.cmpResidualK = c.ints({2, 1}, {});
           },
           kInvalid, "cmpResidualKOptional", "1 dim", "2 dims"},
          {"topk length rank 3 with TND q",
           [](L1& c) {
             c.topkLength = c.ints({10, 1, 1}, {});
           },
           kInvalid, "topkLengthOptional", "2 dims [T1, N2]", "3 dims"},
          {"metadata INT64", [](L1& c) { c.metadata = c.pool.make(ACL_INT64, {1024}); }, kInvalid, "metadata",
           "dtype INT32", "INT64"},  // dtype before the size, as upstream
          {"metadata 1024", [](L1& c) { c.metadata = c.pool.make(ACL_INT32, {1024}); }, kInvalid, "metadata",
           "64 elements", "shape [1024]"},
          {"too many batches", [](L1& c) { c.seqUsedQ = c.pool.alias(c.cuSeqLensQ, ACL_INT32, {1048577}, 0, {0}); },
           kInvalid, "seqUsedQOptional", "at most 1048576 batches", "1048577"},
          {"query and key batches",
           [](L1& c) {
             c.seqUsedK = c.ints({3}, {1, 1, 1});
           },
           kInvalid, "seqUsedKOptional", "the query's batch for the key (2, the length of cuSeqLensQOptional - 1)",
           "3 (the length of seqUsedKOptional)"},
          {"cu_q vs seqused_q",
           [](L1& c) {
             c.seqUsedQ = c.ints({3}, {1, 1, 1});
             c.seqUsedK = c.ints({3}, {1, 1, 1});
           },
           kInvalid, "cuSeqLensQOptional", "4 elements (the query batch + 1)", "shape [3]"},
          {"residual length",
           [](L1& c) {
             c.cmpResidualK = c.ints({3}, {0, 0, 0});
           },
           kInvalid, "cmpResidualKOptional", "2 elements (the query batch)", "shape [3]"},
          {"batchSize not the tensors' batch", [](L1& c) { c.batchSize = 3; }, kInvalid, "batchSize",
           "0 or the query batch 2 (the length of cuSeqLensQOptional - 1)", "3"},
      });
  mhc::expectRejected(
      kApi, Config{false},
      std::vector<R>{
          {"no batch", [](L1& c) { c.batchSize = 0; }, kInvalid, "batchSize", "a batch > 0", "0 (batchSize)"},
          {"topk length rank 2 with BSND q",
           [](L1& c) {
             c.topkLength = c.ints({2, 16}, {});
           },
           kInvalid, "topkLengthOptional", "3 dims [B, S1, N2]", "2 dims"},
      });
}

TEST(SmlaL1MetadataChecks, FormatsMemoryAndValues) {
  mhc::expectRejected(
      kApi, Config{true},
      std::vector<R>{
          {"metadata NC1HWC0", [](L1& c) { c.metadata = c.pool.make(ACL_INT32, {64}, {}, ACL_FORMAT_NC1HWC0); },
           kInvalid, "metadata", "a public format", "format NC1HWC0"},
          {"metadata over cu_q", [](L1& c) { c.metadata = c.pool.alias(c.cuSeqLensQ, ACL_INT32, {64}); }, kInvalid,
           "metadata", "memory that does not overlap the input cuSeqLensQOptional", "bytes overlapping"},
          {"cu_q[0] 1",
           [](L1& c) {
             c.cuSeqLensQ = c.ints({3}, {1, 6, 10});
           },
           kInvalid, "cuSeqLensQOptional", "first element 0", "cuSeqLensQOptional[0] = 1"},
          {"cu_k decreasing",
           [](L1& c) {
             c.cuSeqLensK = c.ints({3}, {0, 128, 100});
           },
           kInvalid, "cuSeqLensKOptional", "non-decreasing",
           "cuSeqLensKOptional[2] = 100 after cuSeqLensKOptional[1] = 128"},
          {"seqused_k over the cu length",
           [](L1& c) {
             c.seqUsedK = c.ints({2}, {128, 129});
           },
           kInvalid, "seqUsedKOptional", "(128 for batch 1)", "seqUsedKOptional[1] = 129"},
          {"residual = ratio",
           [](L1& c) {
             c.cmpResidualK = c.ints({2}, {4, 0});
           },
           kInvalid, "cmpResidualKOptional", "[0, cmpRatio = 4)", "cmpResidualKOptional[0] = 4"},
          {"topk length < 0",
           [](L1& c) {
             c.topkLength = c.ints({10, 1}, {0, 0, -1});
           },
           kInvalid, "topkLengthOptional", "elements >= 0", "topkLengthOptional[2] = -1"},
      });
  mhc::expectRejected(kApi, Config{false},
                      std::vector<R>{{"BSND seqused_q over maxSeqLenQ",
                                      [](L1& c) {
                                        c.seqUsedQ = c.ints({2}, {16, 17});
                                      },
                                      kInvalid, "seqUsedQOptional", "elements <= maxSeqLenQ = 16 (layout BSND)",
                                      "seqUsedQOptional[1] = 17"}});
  L1 rows({false});  // 2 x (2^31 - 1) rows do not fit the int32 words
  rows.maxSeqLenQ = 2147483647;
  EXPECT_TRUE(failsWith(rows.call(), kInvalid,
                        {std::string(kApi) + ": at most 2147483647 query rows in all", "given 4294967294"}));
}

}  // namespace
}  // namespace gradkit::test::smla
