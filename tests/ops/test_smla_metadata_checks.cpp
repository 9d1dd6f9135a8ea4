// aclnnSparseFlashMla[Grad]MetadataGetWorkspaceSize: the rule book of src/ops/sparse_attention/smla_metadata_check.cpp
// in its order, code and message: workspaceSize / executor (561103), the gradient's profile, single parameters per
// profile, existence, consistency, gradkit's pointer, format and memory rules, then the values upstream's AI CPU
// kernel checks at run time (161002 here). Every accepted call is run. A rejected call hands out no executor.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ops/smla_metadata_test_util.h"

namespace gradkit::test::smla {
namespace {

using mhc::failsWith;
using mhc::Rejection;

constexpr aclnnStatus kInvalid = ACLNN_ERR_PARAM_INVALID;
constexpr aclnnStatus kNullOut = ACLNN_ERR_INNER_NULLPTR;

/** The valid call a rule breaks. */
enum class Base { BsndHca, TndCsa, PagedSwa, A2Hca, A2DSpark };

struct Config {
  Base base = Base::BsndHca;
  bool grad = false;
};

/** A valid call of `Config`, as mhc::expectRejected builds it. */
struct Meta : MetaCall {
  explicit Meta(const Config& k) {
    grad = k.grad;
    switch (k.base) {
      case Base::BsndHca:
      case Base::A2Hca:
        docHca();
        break;
      case Base::TndCsa:  // TND q and kv, seqused on both, CSA with cmp top-k 3 in mask mode 0
        layoutQ = layoutKv = "TND";
        hasCmpKv = true;
        cmpRatio = 4;
        cmpTopk = 3;
        cmpMaskMode = 0;
        cuSeqlensQ = ints({3}, {0, 2, 5});
        sequsedQ = ints({2}, {2, 3});
        cuSeqlensOriKv = ints({3}, {0, 10, 30});
        sequsedOriKv = ints({2}, {9, 20});
        cuSeqlensCmpKv = ints({3}, {0, 2, 7});
        cmpResidualKv = ints({2}, {1, 0});
        cmpTopkLength = ints({5, 1}, {1, 2, 3, 0, 2});
        break;
      case Base::PagedSwa:  // TND q, PA_BBND ori kv with seqused
        layoutQ = "TND";
        layoutKv = "PA_BBND";
        cuSeqlensQ = ints({3}, {0, 1, 2});
        sequsedOriKv = ints({2}, {4096, 300});
        break;
      case Base::A2DSpark:  // SWA with ori top-k on A2/A3: mask mode 0, windows >= 0, lengths per row
        batchSize = 2;
        maxSeqlenQ = maxSeqlenOriKv = 64;
        oriTopk = 16;
        oriMaskMode = 0;
        oriTopkLength = ints({2, 64, 1}, std::vector<int32_t>(128, 16));
        break;
    }
  }
  Outcome call() { return MetaCall::call().outcome; }
};

using R = Rejection<Meta>;

void expectRejected(const Config& k, const std::vector<R>& rules) {
  mhc::expectRejected(k.grad ? "aclnnSparseFlashMlaGradMetadata" : "aclnnSparseFlashMlaMetadata", k, rules);
}

/** A stride-0 INT32 view of `rows` elements over one word (costs the caller nothing). */
const aclTensor* broadcastInts(TensorPool& pool, int64_t rows, int32_t value) {
  aclTensor* word = int32Tensor(pool, {1}, {value});
  return pool.alias(word, ACL_INT32, {rows}, 0, {0});
}

TEST(SmlaMetadataChecks, ValidCallsSucceedAndRun) {
  for (bool grad : {false, true}) {
    for (Base base : {Base::BsndHca, Base::TndCsa}) {
      Meta c({base, grad});
      EXPECT_EQ(c.call().status, ACLNN_SUCCESS) << recentError() << " grad " << grad;
    }
  }
  Meta paged({Base::PagedSwa, false});
  EXPECT_EQ(paged.call().status, ACLNN_SUCCESS) << recentError();
  for (const char* soc : {"Ascend910B", "Ascend910_93"}) {
    mhc::ScopedSoc scoped(soc);
    for (Base base : {Base::A2Hca, Base::A2DSpark, Base::PagedSwa}) {
      Meta c({base, false});
      EXPECT_EQ(c.call().status, ACLNN_SUCCESS) << recentError() << " " << soc;
    }
  }
}

TEST(SmlaMetadataChecks, EmptyOptionalsAreAbsent) {
  // Upstream's "exists": null, 0 dims or dim 0 of 0 are all absent (the SFM example passes (0,) tensors).
  Meta c({Base::BsndHca, false});
  c.cuSeqlensQ = c.ints({0}, {});
  c.sequsedQ = c.ints({0}, {});
  c.sequsedOriKv = c.pool.make(ACL_INT32, {});
  c.oriTopkLength = c.ints({0, 3, 1}, {});
  EXPECT_EQ(c.call().status, ACLNN_SUCCESS) << recentError();
}

TEST(SmlaMetadataChecks, OutParametersFirst) {
  for (bool grad : {false, true}) {
    Meta c({Base::BsndHca, grad});
    c.nullSize = true;
    c.headDim = 7;  // a later rule
    EXPECT_TRUE(
        failsWith(c.call(), kNullOut, {"argument 'workspaceSize': expected a non-null pointer, given nullptr"}));
    Meta d({Base::BsndHca, grad});
    d.nullExecutor = true;
    EXPECT_TRUE(failsWith(d.call(), kNullOut, {"argument 'executor': expected a non-null pointer, given nullptr"}));
  }
}

TEST(SmlaMetadataChecks, GradientIsAscend950Only) {
  for (const char* soc : {"Ascend910B", "Ascend910_93"}) {
    mhc::ScopedSoc scoped(soc);
    Meta c({Base::BsndHca, true});
    EXPECT_TRUE(
        failsWith(c.call(), kInvalid, {"aclnnSparseFlashMlaGradMetadata: the operator exists only on Ascend950", soc}));
  }
}

/** The rules both operators share on the Ascend950 profile (from the BSND HCA call). */
std::vector<R> sharedSingleRules() {
  return {
      {"batchSize < 0", [](Meta& c) { c.batchSize = -1; }, kInvalid, "batchSize", "a value in [0, 1048576]", "-1"},
      {"batchSize over the limit", [](Meta& c) { c.batchSize = 1048577; }, kInvalid, "batchSize", "batch limit",
       "1048577"},
      {"maxSeqlenQ < 0", [](Meta& c) { c.maxSeqlenQ = -1; }, kInvalid, "maxSeqlenQ", "[0, 2147483647]", "-1"},
      {"maxSeqlenQ over int32", [](Meta& c) { c.maxSeqlenQ = 2147483648; }, kInvalid, "maxSeqlenQ", "int32",
       "2147483648"},
      {"maxSeqlenOriKv < 0", [](Meta& c) { c.maxSeqlenOriKv = -1; }, kInvalid, "maxSeqlenOriKv", "[0, ", "-1"},
      {"maxSeqlenCmpKv < 0", [](Meta& c) { c.maxSeqlenCmpKv = -1; }, kInvalid, "maxSeqlenCmpKv", "[0, ", "-1"},
      {"numHeadsQ 0", [](Meta& c) { c.numHeadsQ = 0; }, kInvalid, "numHeadsQ", "[1, 128]", "0"},
      {"numHeadsQ 129", [](Meta& c) { c.numHeadsQ = 129; }, kInvalid, "numHeadsQ", "[1, 128]", "129"},
      {"numHeadsKv 2", [](Meta& c) { c.numHeadsKv = 2; }, kInvalid, "numHeadsKv", "1", "2"},
      {"headDim 256", [](Meta& c) { c.headDim = 256; }, kInvalid, "headDim", "512", "256"},
      {"oriTopk < 0", [](Meta& c) { c.oriTopk = -1; }, kInvalid, "oriTopk", "[0, 2147483647]", "-1"},
      {"oriMaskMode 2", [](Meta& c) { c.oriMaskMode = 2; }, kInvalid, "oriMaskMode", "0, 3 or 4", "2"},
      {"oriWinLeft -2", [](Meta& c) { c.oriWinLeft = -2; }, kInvalid, "oriWinLeft", "[-1, 2147483647]", "-2"},
      {"oriWinRight -2", [](Meta& c) { c.oriWinRight = -2; }, kInvalid, "oriWinRight", "[-1, ", "-2"},
      {"oriWinLeft over int32", [](Meta& c) { c.oriWinLeft = 2147483648; }, kInvalid, "oriWinLeft", "int32",
       "2147483648"},
      {"cmpTopk < 0", [](Meta& c) { c.cmpTopk = -1; }, kInvalid, "cmpTopk", "[0, 2147483647]", "-1"},
      {"cmpMaskMode 4", [](Meta& c) { c.cmpMaskMode = 4; }, kInvalid, "cmpMaskMode", "0 or 3", "4"},
      {"cmpRatio 0", [](Meta& c) { c.cmpRatio = 0; }, kInvalid, "cmpRatio", "[1, 128]", "0"},
      {"cmpRatio 129", [](Meta& c) { c.cmpRatio = 129; }, kInvalid, "cmpRatio", "[1, 128]", "129"},
      {"layoutQ null", [](Meta& c) { c.layoutQ = nullptr; }, kInvalid, "layoutQOptional", "\"BSND\" or \"TND\"",
       "nullptr"},
      {"layoutKv null", [](Meta& c) { c.layoutKv = nullptr; }, kInvalid, "layoutKvOptional", "\"TND\"", "nullptr"},
      {"layoutQ BNSD", [](Meta& c) { c.layoutQ = "BNSD"; }, kInvalid, "layoutQOptional", "\"BSND\" or \"TND\"",
       "\"BNSD\""},
      {"layoutKv XXX", [](Meta& c) { c.layoutKv = "XXX"; }, kInvalid, "layoutKvOptional", "\"TND\"", "\"XXX\""},
      {"layouts differ", [](Meta& c) { c.layoutKv = "TND"; }, kInvalid, "layoutKvOptional",
       "layoutQOptional's \"BSND\"", "\"TND\""},
      {"BSND maxSeqlenQ 0", [](Meta& c) { c.maxSeqlenQ = 0; }, kInvalid, "maxSeqlenQ", "> 0 with layout BSND", "0"},
      {"BSND maxSeqlenOriKv 0", [](Meta& c) { c.maxSeqlenOriKv = 0; }, kInvalid, "maxSeqlenOriKv", "> 0 with hasOriKv",
       "0"},
      {"BSND maxSeqlenCmpKv 0", [](Meta& c) { c.maxSeqlenCmpKv = 0; }, kInvalid, "maxSeqlenCmpKv", "> 0 with hasCmpKv",
       "0"},
  };
}

TEST(SmlaMetadataChecks, SingleParametersInOrder) {
  for (bool grad : {false, true}) expectRejected({Base::BsndHca, grad}, sharedSingleRules());
  // The sides are checked only when present: no cmp kv, any cmp argument passes.
  Meta c({Base::BsndHca, false});
  c.hasCmpKv = false;
  c.cmpRatio = 0;
  c.cmpMaskMode = 9;
  c.cmpTopk = -5;
  EXPECT_EQ(c.call().status, ACLNN_SUCCESS) << recentError();
  // The gradient takes no PA_BBND; the forward takes it with any q layout.
  expectRejected({Base::BsndHca, true}, {{"grad PA_BBND", [](Meta& m) { m.layoutKv = "PA_BBND"; }, kInvalid,
                                          "layoutKvOptional", "\"BSND\" or \"TND\"", "\"PA_BBND\""}});
  // The first broken rule is reported.
  Meta two({Base::BsndHca, false});
  two.batchSize = -1;
  two.headDim = 1;
  EXPECT_TRUE(failsWith(two.call(), kInvalid, {"'batchSize'"}));
}

TEST(SmlaMetadataChecks, AtlasA2A3SingleParameters) {
  mhc::ScopedSoc scoped("Ascend910B");
  expectRejected(
      {Base::A2Hca, false},
      {
          {"G not a power of two", [](Meta& c) { c.numHeadsQ = 48; }, kInvalid, "numHeadsQ", "power of two", "48"},
          {"ori top-k with cmp kv", [](Meta& c) { c.oriTopk = 8; }, kInvalid, "oriTopk", "0 when hasCmpKv", "8"},
          {"SWA mask mode 3", [](Meta& c) { c.oriMaskMode = 3; }, kInvalid, "oriMaskMode", "4 (Atlas A2/A3", "3"},
          {"SWA window 100", [](Meta& c) { c.oriWinLeft = 100; }, kInvalid, "oriWinLeft", "127", "100"},
          {"SWA right window 1", [](Meta& c) { c.oriWinRight = 1; }, kInvalid, "oriWinRight", "0 (Atlas", "1"},
          {"cmpTopk 8193", [](Meta& c) { c.cmpTopk = 8193; }, kInvalid, "cmpTopk", "[0, 8192]", "8193"},
          {"cmp mask mode 0", [](Meta& c) { c.cmpMaskMode = 0; }, kInvalid, "cmpMaskMode", "3 (Atlas A2/A3)", "0"},
          {"HCA ratio 4", [](Meta& c) { c.cmpRatio = 4; }, kInvalid, "cmpRatio", "128 (Atlas A2/A3 HCA", "4"},
          {"CSA ratio 3",
           [](Meta& c) {
             c.cmpTopk = 512;
             c.cmpRatio = 3;
           },
           kInvalid, "cmpRatio", "1, 2 or 4", "3"},
      });
  expectRejected({Base::A2DSpark, false}, {
                                              {"DSpark mask mode 4", [](Meta& c) { c.oriMaskMode = 4; }, kInvalid,
                                               "oriMaskMode", "0 (Atlas A2/A3 with oriTopk != 0)", "4"},
                                              {"DSpark window -1", [](Meta& c) { c.oriWinLeft = -1; }, kInvalid,
                                               "oriWinLeft", "[0, 2147483647] (DSpark", "-1"},
                                          });
}

TEST(SmlaMetadataChecks, ExistenceInOrder) {
  const std::vector<R> tnd{
      {"TND q without cu_seqlens_q", [](Meta& c) { c.cuSeqlensQ = nullptr; }, kInvalid, "cuSeqlensQOptional",
       "a tensor with at least one row (layout of q TND)", "nullptr"},
      {"cu_seqlens_q without rows", [](Meta& c) { c.cuSeqlensQ = c.ints({0}, {}); }, kInvalid, "cuSeqlensQOptional",
       "at least one row", "a tensor without rows, shape [0]"},
      {"TND kv without cu_seqlens_ori_kv", [](Meta& c) { c.cuSeqlensOriKv = nullptr; }, kInvalid,
       "cuSeqlensOriKvOptional", "(hasOriKv and kv layout TND)", "nullptr"},
      {"ori top-k, mode 0, no lengths",
       [](Meta& c) {
         c.oriTopk = 4;
         c.oriMaskMode = 0;
       },
       kInvalid, "oriTopkLengthOptional", "(oriTopk != 0, mask mode 0)", "nullptr"},
      {"TND kv without cu_seqlens_cmp_kv", [](Meta& c) { c.cuSeqlensCmpKv = nullptr; }, kInvalid,
       "cuSeqlensCmpKvOptional", "(hasCmpKv and kv layout TND)", "nullptr"},
      {"causal cmp without residual",
       [](Meta& c) {
         c.cmpMaskMode = 3;
         c.cmpResidualKv = nullptr;
       },
       kInvalid, "cmpResidualKvOptional", "(cmpRatio != 1 with cmp mask mode 3)", "nullptr"},
      {"cmp top-k, mode 0, no lengths", [](Meta& c) { c.cmpTopkLength = nullptr; }, kInvalid, "cmpTopkLengthOptional",
       "(cmpTopk != 0, mask mode 0)", "nullptr"},
      {"no metadata", [](Meta& c) { c.metadata = c.ints({0}, {}); }, kInvalid, "metaData", "(the output)",
       "a tensor without rows"},
  };
  for (bool grad : {false, true}) expectRejected({Base::TndCsa, grad}, tnd);
  expectRejected({Base::PagedSwa, false},
                 {{"PA without seqused_ori_kv", [](Meta& c) { c.sequsedOriKv = nullptr; }, kInvalid,
                   "sequsedOriKvOptional", "(kv layout PA_BBND unless ori mask mode 0 with ori top-k)", "nullptr"},
                  {"PA cmp without seqused_cmp_kv",
                   [](Meta& c) {
                     c.hasCmpKv = true;
                     c.cmpMaskMode = 0;
                   },
                   kInvalid, "sequsedCmpKvOptional", "unless cmp mask mode 0 with cmp top-k", "nullptr"}});
  // Ori mask mode 0 with ori top-k (and lengths) needs no seqused on PA_BBND: the length is the top-k length.
  Meta sparse({Base::PagedSwa, false});
  sparse.sequsedOriKv = nullptr;
  sparse.batchSize = 2;  // the ori side's batch now comes from batchSize
  sparse.oriTopk = 8;
  sparse.oriMaskMode = 0;
  sparse.oriWinLeft = sparse.oriWinRight = -1;
  sparse.oriTopkLength = sparse.ints({2, 1}, {8, 3});
  EXPECT_EQ(sparse.call().status, ACLNN_SUCCESS) << recentError();
}

TEST(SmlaMetadataChecks, ConsistencyInOrder) {
  const std::vector<R> tnd{
      {"cu_seqlens_q rank 2",
       [](Meta& c) {
         c.cuSeqlensQ = c.ints({3, 1}, {0, 2, 5});
       },
       kInvalid, "cuSeqlensQOptional", "1 dim", "2 dims, shape [3, 1]"},
      {"cu_seqlens_q INT64", [](Meta& c) { c.cuSeqlensQ = c.pool.make(ACL_INT64, {3}); }, kInvalid,
       "cuSeqlensQOptional", "dtype INT32", "INT64"},
      {"seqused_q rank 2",
       [](Meta& c) {
         c.sequsedQ = c.ints({2, 1}, {2, 3});
       },
       kInvalid, "sequsedQOptional", "1 dim", "2 dims"},
      {"cu_seqlens_ori_kv FLOAT", [](Meta& c) { c.cuSeqlensOriKv = c.pool.make(ACL_FLOAT, {3}); }, kInvalid,
       "cuSeqlensOriKvOptional", "dtype INT32", "FLOAT"},
      {"seqused_ori_kv INT64", [](Meta& c) { c.sequsedOriKv = c.pool.make(ACL_INT64, {2}); }, kInvalid,
       "sequsedOriKvOptional", "dtype INT32", "INT64"},
      {"cu_seqlens_cmp_kv rank 2",
       [](Meta& c) {
         c.cuSeqlensCmpKv = c.ints({3, 1}, {0, 2, 7});
       },
       kInvalid, "cuSeqlensCmpKvOptional", "1 dim", "2 dims"},
      {"residual INT64", [](Meta& c) { c.cmpResidualKv = c.pool.make(ACL_INT64, {2}); }, kInvalid,
       "cmpResidualKvOptional", "dtype INT32", "INT64"},
      {"cmp topk length rank 3 with TND q",
       [](Meta& c) {
         c.cmpTopkLength = c.ints({5, 1, 1}, {});
       },
       kInvalid, "cmpTopkLengthOptional", "2 dims [T1, N2] (layout of q TND)", "3 dims"},
      {"metadata rank 2",
       [](Meta& c) {
         c.metadata = c.pool.make(ACL_INT32, {1024, 1});
       },
       kInvalid, "metaData", "1 dim [1024]", "2 dims"},
      {"metadata 512", [](Meta& c) { c.metadata = c.pool.make(ACL_INT32, {512}); }, kInvalid, "metaData",
       "1024 elements", "shape [512]"},
      {"metadata INT64", [](Meta& c) { c.metadata = c.pool.make(ACL_INT64, {1024}); }, kInvalid, "metaData",
       "dtype INT32", "INT64"},
      {"too many batches", [](Meta& c) { c.sequsedQ = broadcastInts(c.pool, 1048577, 1); }, kInvalid,
       "sequsedQOptional", "at most 1048576 batches (gradkit's limit)", "1048577 (the length of sequsedQOptional)"},
      {"cu_seqlens_q vs seqused_q",
       [](Meta& c) {
         c.sequsedQ = c.ints({3}, {1, 1, 1});
       },
       kInvalid, "cuSeqlensQOptional", "one more element than sequsedQOptional (4)", "shape [3]"},
      {"ori batch",
       [](Meta& c) {
         c.sequsedOriKv = c.ints({3}, {1, 1, 1});
       },
       kInvalid, "sequsedOriKvOptional", "the query's batch for the ori kv (2, the length of sequsedQOptional)",
       "3 (the length of sequsedOriKvOptional)"},
      {"cu_seqlens_ori_kv vs seqused_ori_kv",
       [](Meta& c) {
         c.cuSeqlensOriKv = c.ints({4}, {0, 1, 2, 3});
       },
       kInvalid, "cuSeqlensOriKvOptional", "one more element than sequsedOriKvOptional (3)", "shape [4]"},
      {"cmp batch",
       [](Meta& c) {
         c.cuSeqlensCmpKv = c.ints({4}, {0, 1, 2, 3});
       },
       kInvalid, "cuSeqlensCmpKvOptional", "the query's batch for the cmp kv (2,",
       "3 (the length of cuSeqlensCmpKvOptional - 1)"},
      {"residual length",
       [](Meta& c) {
         c.cmpResidualKv = c.ints({3}, {0, 0, 0});
       },
       kInvalid, "cmpResidualKvOptional", "2 elements (the query batch, the length of sequsedQOptional)", "shape [3]"},
      {"cmp topk length N2",
       [](Meta& c) {
         c.cmpTopkLength = c.ints({5, 2}, {});
       },
       kInvalid, "cmpTopkLengthOptional", "shape [5, 1] ([T1, numHeadsKv])", "shape [5, 2]"},
  };
  for (bool grad : {false, true}) expectRejected({Base::TndCsa, grad}, tnd);
  expectRejected(
      {Base::BsndHca, false},
      {
          {"batchSize vs seqused_ori",
           [](Meta& c) {
             c.sequsedOriKv = c.ints({3}, {1, 1, 1});
           },
           kInvalid, "sequsedOriKvOptional", "(4, batchSize)", "3 (the length of sequsedOriKvOptional)"},
          {"seqused_q vs batchSize",
           [](Meta& c) {
             c.sequsedQ = c.ints({3}, {1, 1, 1});
           },
           kInvalid, "sequsedQOptional", "(3, the length of sequsedQOptional)", "4 (batchSize)"},
          {"BSND ori topk length dims",
           [](Meta& c) {
             c.oriTopk = 8;
             c.oriMaskMode = 0;
             c.oriTopkLength = c.ints({3, 1024, 1}, {});
           },
           kInvalid, "oriTopkLengthOptional", "shape [4, 1024, 1] ([B, maxSeqlenQ, numHeadsKv]", "shape [3, 1024, 1]"},
      });
  mhc::ScopedSoc scoped("Ascend910B");
  expectRejected({Base::A2Hca, false},
                 {{"A2 cmp topk length",
                   [](Meta& c) {
                     c.cmpTopkLength = c.ints({4, 1024, 1}, {});
                   },
                   kInvalid, "cmpTopkLengthOptional", "reserved on Atlas A2/A3", "shape [4, 1024, 1]"}});
}

TEST(SmlaMetadataChecks, PointersFormatsAndMemory) {
  expectRejected(
      {Base::TndCsa, false},
      {
          {"cu_seqlens_q without data",
           [](Meta& c) {  // aclCreateTensor refuses this; a descriptor changed behind its back
             aclTensor* t = c.ints({3}, {0, 2, 5});
             t->data = nullptr;
             c.cuSeqlensQ = t;
           },
           kInvalid, "cuSeqlensQOptional", "a non-null data pointer", "nullptr data with shape [3]"},
          {"metadata FRACTAL_NZ",
           [](Meta& c) { c.metadata = c.pool.make(ACL_INT32, {1024}, {}, ACL_FORMAT_FRACTAL_NZ); }, kInvalid,
           "metaData", "a public format", "format FRACTAL_NZ"},
          {"metadata over cu_seqlens_q", [](Meta& c) { c.metadata = c.pool.alias(c.cuSeqlensQ, ACL_INT32, {1024}); },
           kInvalid, "metaData", "memory that does not overlap the input cuSeqlensQOptional", "bytes overlapping"},
      });
}

TEST(SmlaMetadataChecks, ValuesInTheAiCpuOrder) {
  const std::vector<R> tnd{
      {"cu_seqlens_q[0] 1",
       [](Meta& c) {
         c.cuSeqlensQ = c.ints({3}, {1, 2, 5});
       },
       kInvalid, "cuSeqlensQOptional", "first element 0", "cuSeqlensQOptional[0] = 1"},
      {"cu_seqlens_q decreasing",
       [](Meta& c) {
         c.cuSeqlensQ = c.ints({3}, {0, 5, 2});
       },
       kInvalid, "cuSeqlensQOptional", "non-decreasing", "cuSeqlensQOptional[2] = 2 after cuSeqlensQOptional[1] = 5"},
      {"seqused_q < 0",
       [](Meta& c) {
         c.sequsedQ = c.ints({2}, {-1, 3});
       },
       kInvalid, "sequsedQOptional", "elements >= 0", "sequsedQOptional[0] = -1"},
      {"seqused_q over the cu length",
       [](Meta& c) {
         c.sequsedQ = c.ints({2}, {2, 4});
       },
       kInvalid, "sequsedQOptional", "the batch's length from cu_seqlens (3 for batch 1)", "sequsedQOptional[1] = 4"},
      {"cu_seqlens_ori_kv[0] 2",
       [](Meta& c) {
         c.cuSeqlensOriKv = c.ints({3}, {2, 10, 30});
       },
       kInvalid, "cuSeqlensOriKvOptional", "first element 0", "cuSeqlensOriKvOptional[0] = 2"},
      {"seqused_ori_kv over the cu length",
       [](Meta& c) {
         c.sequsedOriKv = c.ints({2}, {11, 20});
       },
       kInvalid, "sequsedOriKvOptional", "(10 for batch 0)", "sequsedOriKvOptional[0] = 11"},
      {"cu_seqlens_cmp_kv decreasing",
       [](Meta& c) {
         c.cuSeqlensCmpKv = c.ints({3}, {0, 7, 2});
       },
       kInvalid, "cuSeqlensCmpKvOptional", "non-decreasing", "cuSeqlensCmpKvOptional[2] = 2"},
      {"residual = ratio",
       [](Meta& c) {
         c.cmpResidualKv = c.ints({2}, {0, 4});
       },
       kInvalid, "cmpResidualKvOptional", "elements in [0, cmpRatio = 4)", "cmpResidualKvOptional[1] = 4"},
      {"residual < 0",
       [](Meta& c) {
         c.cmpResidualKv = c.ints({2}, {-1, 0});
       },
       kInvalid, "cmpResidualKvOptional", "[0, cmpRatio = 4)", "cmpResidualKvOptional[0] = -1"},
      {"cmp topk length < 0",
       [](Meta& c) {
         c.cmpTopkLength = c.ints({5, 1}, {1, 2, -3, 0, 0});
       },
       kInvalid, "cmpTopkLengthOptional", "elements >= 0", "cmpTopkLengthOptional[2] = -3"},
      {"cmp topk length too short: rows 2..4 are read",
       [](Meta& c) {
         c.sequsedQ = c.ints({2}, {1, 3});
         c.cmpTopkLength = c.ints({4, 1}, {1, 1, 1, 1});
       },
       kInvalid, "cmpTopkLengthOptional", "at least 5 elements (one per query row: 4 rows, the last read is row 4)",
       "4, shape [4, 1]"},
      {"cmp topk length over the row limit",
       [](Meta& c) {
         c.cmpTopkLength = c.pool.alias(c.cmpTopkLength, ACL_INT32, {16777217, 1}, 0, {0, 0});
       },
       kInvalid, "cmpTopkLengthOptional", "at most 16777216 elements (gradkit's limit)", "16777217"},
  };
  for (bool grad : {false, true}) expectRejected({Base::TndCsa, grad}, tnd);
  expectRejected(
      {Base::BsndHca, false},
      {
          {"BSND seqused_q over maxSeqlenQ",
           [](Meta& c) {
             c.sequsedQ = c.ints({4}, {1, 1025, 1, 1});
           },
           kInvalid, "sequsedQOptional", "elements <= maxSeqlenQ = 1024 (layout BSND)", "sequsedQOptional[1] = 1025"},
          {"BSND seqused_cmp_kv over maxSeqlenCmpKv",
           [](Meta& c) {
             c.sequsedCmpKv = c.ints({4}, {1, 1, 1, 1025});
           },
           kInvalid, "sequsedCmpKvOptional", "elements <= maxSeqlenCmpKv = 1024", "sequsedCmpKvOptional[3] = 1025"},
      });
  // gradkit's row limit: B maxSeqlenQ query rows of a BSND call, before the planner walks them.
  Meta rows({Base::BsndHca, false});
  rows.batchSize = 1;
  rows.maxSeqlenQ = 16777217;
  rows.cmpResidualKv = rows.ints({1}, {0});
  EXPECT_TRUE(failsWith(rows.call(), kInvalid,
                        {"aclnnSparseFlashMlaMetadata: at most 16777216 query rows in all (gradkit's limit), given "
                         "16777217"}));
  // The first broken value is reported: cu_seqlens_q before the residual.
  Meta two({Base::TndCsa, false});
  two.cuSeqlensQ = two.ints({3}, {1, 2, 5});
  two.cmpResidualKv = two.ints({2}, {9, 9});
  EXPECT_TRUE(failsWith(two.call(), kInvalid, {"'cuSeqlensQOptional'"}));
}

}  // namespace
}  // namespace gradkit::test::smla
