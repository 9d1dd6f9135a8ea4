// aclnnLightningIndexerV2GetWorkspaceSize: every rule (code and message) in upstream's order
// (docs/lightning_indexer_v2.md "Checks"), the tiling-time and value rules as 161002 in the first phase (DECISIONS.md
// "Check early and clearly"), the A2/A3 profiles' rules (upstream's arch22 tiling), and that the first broken rule is
// the one reported when two are broken. Only the first phase is called: executors are destroyed unrun. The metadata op:
// test_lightning_indexer_v2_metadata_checks.cpp.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "ops/liv2_test_util.h"

namespace gradkit::test::liv2 {
namespace {

using mhc::expectRejected;
using mhc::failsWith;
using mhc::Rejection;
using mhc::ScopedSoc;

constexpr const char* kApi = "aclnnLightningIndexerV2";

Config tnd() {
  Config c;
  c.layoutQ = c.layoutK = "TND";
  return c;
}

Config paged() {
  Config c;
  c.layoutK = "PA_BBND";
  return c;
}

TEST(LiV2Checks, ValidCallsPassInEveryLayoutAndProfile) {
  for (const char* soc : mhc::kAllSocs) {
    ScopedSoc scoped(soc);
    for (const Config& c : {Config{}, tnd(), paged()}) {
      Call call(c);
      const Outcome o = call.call();
      EXPECT_EQ(o.status, ACLNN_SUCCESS) << soc << " " << c.layoutQ << "/" << c.layoutK << ": " << o.message;
    }
  }
}

TEST(LiV2Checks, GeneratedLayerNullsAndDtypes) {
  ScopedSoc soc("Ascend950");
  using R = Rejection<Call>;
  expectRejected<Call>(
      kApi, Config{},
      std::vector<R>{
          {"workspaceSize", [](Call& c) { c.nullWorkspaceSize = true; }, 161001, "workspaceSize", "a non-null",
           "nullptr"},
          {"executor", [](Call& c) { c.nullExecutor = true; }, 161001, "executor", "a non-null", "nullptr"},
          {"q", [](Call& c) { c.q = nullptr; }, 161001, "q", "a non-null", "nullptr"},
          {"k", [](Call& c) { c.k = nullptr; }, 161001, "k", "a non-null", "nullptr"},
          {"w", [](Call& c) { c.w = nullptr; }, 161001, "w", "a non-null", "nullptr"},
          {"indices", [](Call& c) { c.indices = nullptr; }, 161001, "sparseIndices", "a non-null", "nullptr"},
          {"values", [](Call& c) { c.values = nullptr; }, 161001, "sparseValues", "a non-null", "nullptr"},
          {"layoutQ", [](Call& c) { c.nullLayoutQ = true; }, 161001, "layoutQ", "a non-null", "nullptr"},
          {"layoutK", [](Call& c) { c.nullLayoutK = true; }, 161001, "layoutK", "a non-null", "nullptr"},
          {"q fp32",
           [](Call& c) {
             c.q = c.pool.make(ACL_FLOAT, {2, 6, 4, 128});
           },
           161002, "q", "dtype in {FLOAT16, BFLOAT16}", "dtype FLOAT"},
          {"k fp16",
           [](Call& c) {
             c.k = c.pool.make(ACL_FLOAT16, {2, 10, 1, 128});
           },
           161002, "k", "dtype BFLOAT16 (the dtype of q)", "dtype FLOAT16"},
          {"w bf16",
           [](Call& c) {
             c.w = c.pool.make(ACL_BF16, {2, 6, 4});
           },
           161002, "w", "dtype in {FLOAT}", "dtype BFLOAT16"},
          {"metadata int64", [](Call& c) { c.metadata = c.pool.make(ACL_INT64, {1024}); }, 161002, "metadataOptional",
           "dtype in {INT32}", "dtype INT64"},
          {"indices int64",
           [](Call& c) {
             c.indices = c.pool.make(ACL_INT64, {2, 6, 1, 8});
           },
           161002, "sparseIndices", "dtype in {INT32}", "dtype INT64"},
          {"values fp16",
           [](Call& c) {
             c.values = c.pool.make(ACL_FLOAT16, {2, 6, 1, 8});
           },
           161002, "sparseValues", "dtype in {FLOAT}", "dtype FLOAT16"},
      });
}

TEST(LiV2Checks, SingleParametersInOrder) {
  ScopedSoc soc("Ascend950");
  using R = Rejection<Call>;
  expectRejected<Call>(
      kApi, Config{},
      std::vector<R>{
          {"layoutQ PA", [](Call& c) { c.layoutQ = "PA_BBND"; }, 161002, "layoutQ", "\"BSND\" or \"TND\"",
           "\"PA_BBND\""},
          {"layoutQ lower", [](Call& c) { c.layoutQ = "bsnd"; }, 161002, "layoutQ", "\"BSND\" or \"TND\"", "\"bsnd\""},
          {"layoutK", [](Call& c) { c.layoutK = "BNSD"; }, 161002, "layoutK", "\"PA_BBND\"", "\"BNSD\""},
          {"layouts differ", [](Call& c) { c.layoutK = "TND"; }, 161002, "layoutK", "layoutQ's \"BSND\"", "\"TND\""},
          {"topk 0", [](Call& c) { c.topk = 0; }, 161002, "topk", "an integer in [1, 8192]", "0"},
          {"topk 8193", [](Call& c) { c.topk = 8193; }, 161002, "topk", "an integer in [1, 8192]", "8193"},
          {"maskMode 2", [](Call& c) { c.maskMode = 2; }, 161002, "maskMode", "0 (no mask) or 3", "2"},
          {"cmpRatio 0", [](Call& c) { c.cmpRatio = 0; }, 161002, "cmpRatio", "an integer in [1, 128]", "0"},
          {"cmpRatio 129", [](Call& c) { c.cmpRatio = 129; }, 161002, "cmpRatio", "an integer in [1, 128]", "129"},
          {"maxSeqlenQ -2", [](Call& c) { c.maxSeqlenQ = -2; }, 161002, "maxSeqlenQ", "-1 (unknown)", "-2"},
          {"maxSeqlenQ 2^31", [](Call& c) { c.maxSeqlenQ = int64_t{1} << 31; }, 161002, "maxSeqlenQ", "[0, 2147483647]",
           "2147483648"},
          {"returnValue 2", [](Call& c) { c.returnValue = 2; }, 161002, "returnValue", "0 or 1", "2"},
          {"q rank 3",
           [](Call& c) {
             c.q = c.pool.make(ACL_BF16, {12, 4, 128});
           },
           161002, "q", "BSND [B, S1, N1, D]", "3 dims [12, 4, 128]"},
          {"k rank 3",
           [](Call& c) {
             c.k = c.pool.make(ACL_BF16, {20, 1, 128});
           },
           161002, "k", "BSND [B, S2, 1, D]", "3 dims [20, 1, 128]"},
          {"w rank 2",
           [](Call& c) {
             c.w = c.pool.make(ACL_FLOAT, {12, 4});
           },
           161002, "w", "[B, S1, N1]", "2 dims [12, 4]"},
          {"indices rank",
           [](Call& c) {
             c.indices = c.pool.make(ACL_INT32, {12, 1, 8});
           },
           161002, "sparseIndices", "[B, S1, 1, topk]", "3 dims [12, 1, 8]"},
          {"values rank",
           [](Call& c) {
             c.values = c.pool.make(ACL_FLOAT, {12, 8});
           },
           161002, "sparseValues", "(returnValue 1)", "2 dims [12, 8]"},
          {"offset rank", [](Call& c) { c.offset = c.pool.make(ACL_INT32, {12}); }, 161002, "outputIdxOffsetOptional",
           "[B, S1, 1]", "1 dims [12]"},
          {"residual rank",
           [](Call& c) {
             c.residual = c.pool.make(ACL_INT32, {2, 1});
           },
           161002, "cmpResidualKOptional", "one value per batch", "2 dims [2, 1]"},
      });
}

TEST(LiV2Checks, PagedCacheRules) {
  ScopedSoc soc("Ascend950");
  using R = Rejection<Call>;
  expectRejected<Call>(
      kApi, paged(),
      std::vector<R>{
          {"table rank",
           [](Call& c) {
             c.table = c.ints({1, 2});
           },
           161002, "blockTableOptional", "[B, maxBlocksPerSeq]", "1 dims [2]"},
          {"block size 24",
           [](Call& c) {
             c.k = c.pool.make(ACL_BF16, {3, 24, 1, 128});
           },
           161002, "k", "a multiple of 16 in [16, 1024]", "block size 24"},
          {"block size 2048",
           [](Call& c) {
             c.k = c.pool.make(ACL_BF16, {3, 2048, 1, 128});
           },
           161002, "k", "a multiple of 16 in [16, 1024]", "block size 2048"},
          {"no blocks",
           [](Call& c) {
             c.k = c.pool.make(ACL_BF16, {0, 16, 1, 128});
           },
           161002, "k", "at least one cache block", "shape [0, 16, 1, 128]"},
          {"table missing", [](Call& c) { c.table = nullptr; }, 161001, "blockTableOptional", "layoutK is PA_BBND",
           "nullptr"},
          {"seqused_k missing", [](Call& c) { c.sequsedK = nullptr; }, 161001, "sequsedKOptional", "layoutK is PA_BBND",
           "nullptr"},
          {"cu_seqlens_k given",
           [](Call& c) {
             c.cuK = c.ints({0, 10, 17});
           },
           161002, "cuSeqlensKOptional", "nullptr (layoutK is PA_BBND)", "a tensor of shape [3]"},
          {"table rows",
           [](Call& c) {
             c.table = c.ints({1, 2, 0}, {3, 1});
           },
           161002, "blockTableOptional", "dim 0 = B = 2", "shape [3, 1]"},
          {"entry past the cache",
           [](Call& c) {
             c.table = c.ints({1, 3}, {2, 1});
           },
           161002, "blockTableOptional", "entries in [0, blockNum = 3)", "blockTableOptional[1][0] = 3"},
          {"seqused_k past the table",
           [](Call& c) {
             c.sequsedK = c.ints({10, 17});
           },
           161002, "sequsedKOptional", "blockTable columns * blockSize = 16", "sequsedKOptional[1] = 17"},
      });
}

TEST(LiV2Checks, ExistenceInOrder) {
  ScopedSoc soc("Ascend950");
  using R = Rejection<Call>;
  expectRejected<Call>(kApi, Config{},
                       std::vector<R>{
                           {"metadata", [](Call& c) { c.metadata = nullptr; }, 161001, "metadataOptional",
                            "required in the Ascend950", "nullptr"},
                           {"0-dim metadata counts as absent", [](Call& c) { c.metadata = c.pool.make(ACL_INT32, {}); },
                            161001, "metadataOptional", "required in the Ascend950", "nullptr"},
                           {"bsnd with cu_seqlens_k",
                            [](Call& c) {
                              c.cuK = c.ints({0, 10, 20});
                            },
                            161002, "cuSeqlensKOptional", "nullptr (layoutK is BSND)", "a tensor of shape [3]"},
                           {"bsnd with cu_seqlens_q",
                            [](Call& c) {
                              c.cuQ = c.ints({0, 6, 12});
                            },
                            161002, "cuSeqlensQOptional", "nullptr (layoutQ is BSND)", "a tensor of shape [3]"},
                           {"residual missing", [](Call& c) { c.residual = nullptr; }, 161001, "cmpResidualKOptional",
                            "cmpRatio != 1", "nullptr"},
                           {"residual with cr 1", [](Call& c) { c.cmpRatio = 1; }, 161002, "cmpResidualKOptional",
                            "given only when cmpRatio != 1 and maskMode != 0", "a tensor of shape [2]"},
                           {"residual with mask 0", [](Call& c) { c.maskMode = 0; }, 161002, "cmpResidualKOptional",
                            "given only when cmpRatio != 1 and maskMode != 0", "a tensor of shape [2]"},
                           {"table with bsnd",
                            [](Call& c) {
                              c.table = c.ints({0, 0}, {2, 1});
                            },
                            161002, "blockTableOptional", "nullptr (layoutK is BSND)", "a tensor of shape [2, 1]"},
                       });
  expectRejected<Call>(kApi, tnd(),
                       std::vector<R>{
                           {"tnd k without cu", [](Call& c) { c.cuK = nullptr; }, 161001, "cuSeqlensKOptional",
                            "layoutK is TND", "nullptr"},
                           {"tnd q without cu", [](Call& c) { c.cuQ = nullptr; }, 161001, "cuSeqlensQOptional",
                            "layoutQ is TND", "nullptr"},
                       });
}

TEST(LiV2Checks, FeaturesAndShapesInOrder) {
  ScopedSoc soc("Ascend950");
  using R = Rejection<Call>;
  expectRejected<Call>(kApi, Config{},
                       std::vector<R>{
                           {"two key heads",
                            [](Call& c) {
                              c.k = c.pool.make(ACL_BF16, {2, 10, 2, 128});
                            },
                            161002, "k", "N2 = 1", "N2 = 2"},
                           {"q D 64",
                            [](Call& c) {
                              c.q = c.pool.make(ACL_BF16, {2, 6, 4, 64});
                            },
                            161002, "q", "D (last dim) = 128", "D = 64"},
                           {"k D 256",
                            [](Call& c) {
                              c.k = c.pool.make(ACL_BF16, {2, 10, 1, 256});
                            },
                            161002, "k", "D (last dim) = 128", "D = 256"},
                           {"N1 65",
                            [](Call& c) {
                              c.q = c.pool.make(ACL_BF16, {2, 6, 65, 128});
                            },
                            161002, "q", "N1 (query heads) in [1, 64]", "N1 = 65"},
                           {"q empty",
                            [](Call& c) {
                              c.q = c.pool.make(ACL_BF16, {2, 0, 4, 128});
                            },
                            161002, "q", "a non-empty tensor", "empty shape [2, 0, 4, 128]"},
                           {"w heads",
                            [](Call& c) {
                              c.w = c.pool.make(ACL_FLOAT, {2, 6, 5});
                            },
                            161002, "w", "[2, 6, 4]", "shape [2, 6, 5]"},
                           {"indices topk",
                            [](Call& c) {
                              c.indices = c.pool.make(ACL_INT32, {2, 6, 1, 7});
                            },
                            161002, "sparseIndices", "[2, 6, 1, 8]", "shape [2, 6, 1, 7]"},
                           {"values rows",
                            [](Call& c) {
                              c.values = c.pool.make(ACL_FLOAT, {2, 5, 1, 8});
                            },
                            161002, "sparseValues", "[2, 6, 1, 8]", "shape [2, 5, 1, 8]"},
                           {"offset shape",
                            [](Call& c) {
                              c.offset = c.pool.make(ACL_INT32, {2, 6, 4});
                            },
                            161002, "outputIdxOffsetOptional", "[2, 6, 1]", "shape [2, 6, 4]"},
                           {"metadata 512", [](Call& c) { c.metadata = c.pool.make(ACL_INT32, {512}); }, 161002,
                            "metadataOptional", "1024 INT32 elements", "512 elements"},
                           {"k batch",
                            [](Call& c) {
                              c.k = c.pool.make(ACL_BF16, {3, 10, 1, 128});
                            },
                            161002, "k", "dim 0 = B = 2", "shape [3, 10, 1, 128]"},
                           {"seqused_q size",
                            [](Call& c) {
                              c.sequsedQ = c.ints({6, 6, 6});
                            },
                            161002, "sequsedQOptional", "[2]", "shape [3]"},
                           {"residual size", [](Call& c) { c.residual = c.ints({1}); }, 161002, "cmpResidualKOptional",
                            "[2]", "shape [1]"},
                       });
  using R2 = Rejection<Call>;
  expectRejected<Call>(kApi, tnd(),
                       std::vector<R2>{
                           {"one batch value", [](Call& c) { c.cuQ = c.ints({0}); }, 161002, "cuSeqlensQOptional",
                            "B >= 1", "shape [1]"},
                           {"cu_k size",
                            [](Call& c) {
                              c.cuK = c.ints({0, 20});
                            },
                            161002, "cuSeqlensKOptional", "[3]", "shape [2]"},
                       });
}

TEST(LiV2Checks, ValuesReadInTheFirstPhase) {
  ScopedSoc soc("Ascend950");
  using R = Rejection<Call>;
  expectRejected<Call>(
      kApi, tnd(),
      std::vector<R>{
          {"cu_q start",
           [](Call& c) {
             c.cuQ = c.ints({1, 6, 12});
           },
           161002, "cuSeqlensQOptional", "prefix sums starting at 0", "cuSeqlensQOptional[0] = 1"},
          {"cu_q decreasing",
           [](Call& c) {
             c.cuQ = c.ints({0, 7, 6});
           },
           161002, "cuSeqlensQOptional", "non-decreasing prefix sums",
           "cuSeqlensQOptional[2] = 6 after cuSeqlensQOptional[1] = 7"},
          {"cu_q past T1",
           [](Call& c) {
             c.cuQ = c.ints({0, 6, 13});
           },
           161002, "cuSeqlensQOptional", "a last value <= T1 (the rows of q) = 12", "cuSeqlensQOptional[2] = 13"},
          {"cu_k past T2",
           [](Call& c) {
             c.cuK = c.ints({0, 10, 21});
           },
           161002, "cuSeqlensKOptional", "a last value <= T2 (the rows of k) = 20", "cuSeqlensKOptional[2] = 21"},
          {"seqused_q above",
           [](Call& c) {
             c.sequsedQ = c.ints({6, 7});
           },
           161002, "sequsedQOptional", "0 <= value <= cuSeqlensQ[b + 1] - cuSeqlensQ[b] = 6 for batch 1",
           "sequsedQOptional[1] = 7"},
          {"seqused_k negative",
           [](Call& c) {
             c.sequsedK = c.ints({-1, 7});
           },
           161002, "sequsedKOptional", "for batch 0", "sequsedKOptional[0] = -1"},
          {"residual cr",
           [](Call& c) {
             c.residual = c.ints({1, 4});
           },
           161002, "cmpResidualKOptional", "values in [0, cmpRatio) = [0, 4)", "cmpResidualKOptional[1] = 4"},
          {"residual negative",
           [](Call& c) {
             c.residual = c.ints({-1, 0});
           },
           161002, "cmpResidualKOptional", "[0, 4)", "cmpResidualKOptional[0] = -1"},
          {"offset negative",
           [](Call& c) {
             c.offset = c.ints({0, 0, 0, -5, 0, 0, 0, 0, 0, 0, 0, 0}, {12, 1});
           },
           161002, "outputIdxOffsetOptional", "offsets >= 0", "outputIdxOffsetOptional[3][0] = -5"},
          {"offset overflow",
           [](Call& c) {
             c.offset = c.ints({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, INT32_MAX - 5}, {12, 1});
           },
           161002, "outputIdxOffsetOptional", "<= 2147483647",
           "outputIdxOffsetOptional[11][0] = 2147483642 with indices up to 9"},
      });
}

TEST(LiV2Checks, MemoryRules) {
  ScopedSoc soc("Ascend950");
  Call call{Config{}};
  call.values = call.pool.alias(call.w, ACL_FLOAT, {2, 6, 1, 8});  // values over w's memory
  EXPECT_TRUE(failsWith(call.call(), 161002, {"sparseValues", "w"}));
  Call unread{Config{}};
  unread.returnValue = 0;  // sparseValues is not written: its memory and shape do not matter
  unread.values = unread.pool.alias(unread.w, ACL_FLOAT, {0});
  EXPECT_EQ(unread.call().status, ACLNN_SUCCESS) << aclGetRecentErrMsg();
}

TEST(LiV2Checks, FirstBrokenRuleIsReported) {
  ScopedSoc soc("Ascend950");
  Call call{Config{}};
  call.topk = 0;                                       // single parameter
  call.metadata = nullptr;                             // existence
  call.k = call.pool.make(ACL_BF16, {2, 10, 2, 128});  // feature
  EXPECT_TRUE(failsWith(call.call(), 161002, {"argument 'topk'"}));
  call.topk = 8;
  EXPECT_TRUE(failsWith(call.call(), 161001, {"argument 'metadataOptional'"}));
}

TEST(LiV2Checks, A2A3Profiles) {
  for (const char* name : {"Ascend910B", "Ascend910_93"}) {
    ScopedSoc soc(name);
    using R = Rejection<Call>;
    expectRejected<Call>(
        kApi, Config{},
        std::vector<R>{
            {"topk 2500", [](Call& c) { c.topk = 2500; }, 161002, "topk", "3072, 4096", "2500"},
            {"seqused_q",
             [](Call& c) {
               c.sequsedQ = c.ints({6, 6});
             },
             161002, "sequsedQOptional", "exists only in the Ascend950", "a tensor of shape [2]"},
            {"offsets",
             [](Call& c) {
               c.offset = c.pool.make(ACL_INT32, {2, 6, 1});
             },
             161002, "outputIdxOffsetOptional", "exists only in the Ascend950", "a tensor of shape [2, 6, 1]"},
            {"seqused_k bsnd",
             [](Call& c) {
               c.sequsedK = c.ints({10, 10});
             },
             161002, "sequsedKOptional", "seqused_k goes with PA_BBND only", "a tensor of shape [2]"},
        });
    Call call{Config{}};  // metadata and cmpResidualK optional there, maxSeqlenQ ignored; topk 3072 allowed
    call.metadata = nullptr;
    call.residual = nullptr;
    call.maxSeqlenQ = 64;
    EXPECT_EQ(call.call().status, ACLNN_SUCCESS) << name << ": " << aclGetRecentErrMsg();
    Call big{Config{}};
    big.topk = 3072;
    big.indices = big.pool.make(ACL_INT32, {2, 6, 1, 3072});
    big.values = big.pool.make(ACL_FLOAT, {2, 6, 1, 3072});
    EXPECT_EQ(big.call().status, ACLNN_SUCCESS) << name << ": " << aclGetRecentErrMsg();
  }
}

}  // namespace
}  // namespace gradkit::test::liv2
