// aclnnSparseLightningIndexerKLLossGradMetadata: the images of both AI-CPU algorithms (upstream's doc example under
// Ascend950 and A2/A3, a balanced A2/A3 split of 48 equal rows over 24 cores, a causal one checked for its invariants),
// a strided output, and the rule book of kl_grad_metadata_check.cpp in order, code and message.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "aclnnop/aclnn_sparse_lightning_indexer_kl_loss_grad_metadata.h"
#include "opapi/tensor.h"
#include "ops/block_residuals_check_util.h"

namespace gradkit::test::block_residuals {
namespace {

/** A valid metadata call: the upstream doc example (TND, cu_q {0,16}, cu_k {0,4}, N1 8, topk 512, mask 0, cr 4). */
struct Meta {
  static constexpr const char* kApi = "aclnnSparseLightningIndexerKLLossGradMetadata";

  explicit Meta(const Config& config) : strided(config.strided) {
    cuQ = ints({0, 16});
    cuK = ints({0, 4});
    metadata = strided ? pool.makeStrided(ACL_INT32, {64}) : pool.make(ACL_INT32, {64});
  }

  aclTensor* ints(const std::vector<int64_t>& values) {
    aclTensor* t = pool.make(ACL_INT32, {static_cast<int64_t>(values.size())});
    auto* first = static_cast<int32_t*>(t->firstElement());
    for (size_t i = 0; i < values.size(); ++i) first[i] = static_cast<int32_t>(values[i]);
    return t;
  }

  Outcome call() {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    const aclnnStatus status = aclnnSparseLightningIndexerKLLossGradMetadataGetWorkspaceSize(
        cuQ, cuK, seqUsedQ, seqUsedK, residual, batchSize, maxSeqlenQ, maxSeqlenK, numHeadsQ, numHeadsK, headDim, topk,
        nullLayoutQ ? nullptr : layoutQ, layoutK, maskMode, cmpRatio, metadata, nullSize ? nullptr : &size, &executor);
    return settle(status, size, executor, aclnnSparseLightningIndexerKLLossGradMetadata);
  }

  /** The 64 words the op wrote. */
  std::array<int32_t, 64> image() const {
    std::array<int32_t, 64> out{};
    const auto* first = static_cast<const int32_t*>(metadata->firstElement());
    for (int64_t i = 0; i < 64; ++i) out[static_cast<size_t>(i)] = first[i * metadata->strides[0]];
    return out;
  }

  TensorPool pool;
  bool strided;
  const aclTensor *cuQ, *cuK, *seqUsedQ = nullptr, *seqUsedK = nullptr, *residual = nullptr, *metadata;
  int64_t batchSize = 0, maxSeqlenQ = 16, maxSeqlenK = 4, numHeadsQ = 8, numHeadsK = 1, headDim = 128, topk = 512;
  char layoutQ[8] = "TND", layoutK[8] = "TND";
  int64_t maskMode = 0, cmpRatio = 4;
  bool nullLayoutQ = false, nullSize = false;
};

using M = Meta;

std::array<int32_t, 64> words(std::initializer_list<std::pair<size_t, int32_t>> set) {
  std::array<int32_t, 64> out{};
  for (const auto& [at, value] : set) out[at] = value;
  return out;
}

TEST(KlGradMetadata, Ascend950Image) {
  mhc::ScopedSoc soc("Ascend950");
  for (bool strided : {false, true}) {
    M m({ACL_BF16, 0, 0, 0, strided});
    ASSERT_EQ(m.call().status, ACLNN_SUCCESS) << recentError();
    // 16 rows over 32 AI Cube cores: 16, ceil(16/32) = 1, 0, 1 * 32 - 16 = 16, min(16, 32) = 16.
    EXPECT_EQ(m.image(), words({{0, 16}, {1, 1}, {2, 0}, {3, 16}, {4, 16}}));
  }
  M bsnd({});  // BSND: batchSize 3 of maxSeqlenQ 40 rows, seqused_q {40, 7, 0} -> 47 rows
  std::strcpy(bsnd.layoutQ, "BSND"), std::strcpy(bsnd.layoutK, "BSND");
  bsnd.cuQ = bsnd.cuK = nullptr;
  bsnd.batchSize = 3, bsnd.maxSeqlenQ = 40, bsnd.seqUsedQ = bsnd.ints({40, 7, 0});
  ASSERT_EQ(bsnd.call().status, ACLNN_SUCCESS) << recentError();
  EXPECT_EQ(bsnd.image(), words({{0, 47}, {1, 2}, {2, 1}, {3, 17}, {4, 32}}));
}

TEST(KlGradMetadata, A2Images) {
  for (const char* name : {"Ascend910B", "Ascend910_93"}) {
    mhc::ScopedSoc soc(name);
    M m({});
    ASSERT_EQ(m.call().status, ACLNN_SUCCESS) << recentError();
    // 16 rows of equal load over min(16, 24, 25) cores: one row each; the unused entries hold totalSize.
    std::array<int32_t, 64> expected = words({{0, 16}, {1, 16}, {2, 1}});
    for (size_t c = 0; c < 25; ++c) expected[8 + c] = c < 16 ? static_cast<int32_t>(c) : 16;
    EXPECT_EQ(m.image(), expected) << name;
    M even({});  // 48 equal rows over 24 cores: two each
    even.cuQ = even.ints({0, 48}), even.cuK = even.ints({0, 48});
    ASSERT_EQ(even.call().status, ACLNN_SUCCESS) << recentError();
    expected = words({{0, 24}, {1, 48}, {2, 2}});
    for (size_t c = 0; c < 25; ++c) expected[8 + c] = c < 24 ? static_cast<int32_t>(2 * c) : 48;
    EXPECT_EQ(even.image(), expected) << name;
    M causal({});  // causal cr 1, 100 rows over 60 keys: rows 0-39 see nothing (load 0), then growing loads
    causal.cuQ = causal.ints({0, 100}), causal.cuK = causal.ints({0, 60});
    causal.maskMode = 3, causal.cmpRatio = 1;
    ASSERT_EQ(causal.call().status, ACLNN_SUCCESS) << recentError();
    const std::array<int32_t, 64> image = causal.image();
    EXPECT_EQ(image[0], 24);
    EXPECT_EQ(image[1], 100);
    EXPECT_EQ(image[2], 5);
    EXPECT_EQ(image[8], 40);  // the first row with work
    for (size_t c = 1; c < 24; ++c) EXPECT_LT(image[7 + c], image[8 + c]) << c;
    EXPECT_EQ(image[32], 100);
  }
}

TEST(KlGradMetadata, Checks) {
  mhc::ScopedSoc soc("Ascend950");
  recentError();
  const auto set = [](auto field, auto value) { return [=](M& c) { c.*field = value; }; };
  expectEachRejected<M>({
      {"workspaceSize", set(&M::nullSize, true), kNull, {"'workspaceSize'", "non-null"}},
      {"numHeadsQ 0", set(&M::numHeadsQ, int64_t{0}), kInvalid, {"'numHeadsQ'", "[1, 128] (N1)", "given 0"}},
      {"numHeadsQ 129", set(&M::numHeadsQ, int64_t{129}), kInvalid, {"'numHeadsQ'", "given 129"}},
      {"numHeadsK 2", set(&M::numHeadsK, int64_t{2}), kInvalid, {"'numHeadsK'", "expected 1", "given 2"}},
      {"headDim 64", set(&M::headDim, int64_t{64}), kInvalid, {"'headDim'", "expected 128", "given 64"}},
      {"topk 2049", set(&M::topk, int64_t{2049}), kInvalid, {"'topk'", "[1, 2048]", "given 2049"}},
      {"batchSize -1", set(&M::batchSize, int64_t{-1}), kInvalid, {"'batchSize'", ">= 0", "given -1"}},
      {"maxSeqlenK -1", set(&M::maxSeqlenK, int64_t{-1}), kInvalid, {"'maxSeqlenK'", "given -1"}},
      {"maskMode 2", set(&M::maskMode, int64_t{2}), kInvalid, {"'maskMode'", "given 2"}},
      {"cmpRatio 0", set(&M::cmpRatio, int64_t{0}), kInvalid, {"'cmpRatio'", "[1, 128]"}},
      {"layoutQ null", set(&M::nullLayoutQ, true), kInvalid, {"'layoutQOptional'", "given nullptr"}},
      {"layoutK PA_BBND", [](M& c) { std::strcpy(c.layoutK, "PA_BBND"); }, kInvalid, {"'layoutKOptional'"}},
      {"layouts differ",
       [](M& c) { std::strcpy(c.layoutK, "BSND"); },
       kInvalid,
       {"'layoutKOptional'", "the layout of layoutQOptional"}},
      {"BSND maxSeqlenQ 0",
       [](M& c) { std::strcpy(c.layoutQ, "BSND"), std::strcpy(c.layoutK, "BSND"), c.maxSeqlenQ = 0; },
       kInvalid,
       {"'maxSeqlenQ'", "> 0 with layout BSND"}},
      {"cu_q missing", [](M& c) { c.cuQ = nullptr; }, kInvalid, {"'cuSeqLensQOptional'", "layout TND", "nullptr"}},
      {"cu_k empty",
       [](M& c) { c.cuK = c.pool.make(ACL_INT32, {0}); },
       kInvalid,
       {"'cuSeqLensKOptional'", "an empty tensor"}},
      {"residual missing", [](M& c) { c.maskMode = 3; }, kInvalid, {"'cmpResidualKOptional'", "maskMode is 3"}},
      {"metadata missing",
       [](M& c) { c.metadata = nullptr; },
       kInvalid,
       {"'metadata'", "INT32 tensor [64]", "nullptr"}},
      {"cu_q rank 2",
       [](M& c) {
         c.cuQ = c.pool.make(ACL_INT32, {2, 1});
       },
       kInvalid,
       {"'cuSeqLensQOptional'", "1 dims"}},
      {"cu_k int64", [](M& c) { c.cuK = c.pool.make(ACL_INT64, {2}); }, kInvalid, {"'cuSeqLensKOptional'", "INT64"}},
      {"metadata int64", [](M& c) { c.metadata = c.pool.make(ACL_INT64, {64}); }, kInvalid, {"'metadata'", "INT64"}},
      {"metadata 1024",
       [](M& c) { c.metadata = c.pool.make(ACL_INT32, {1024}); },
       kInvalid,
       {"'metadata'", "[64]", "[1024]"}},
      {"batches differ",
       [](M& c) {
         c.cuK = c.ints({0, 2, 4});
       },
       kInvalid,
       {"'cuSeqLensKOptional'", "a batch of 1 (from cuSeqLensQOptional)", "2 (from cuSeqLensKOptional)"}},
      {"seqused_q against batchSize",
       [](M& c) {
         std::strcpy(c.layoutQ, "BSND"), std::strcpy(c.layoutK, "BSND");
         c.batchSize = 2, c.seqUsedQ = c.ints({1, 1, 1});
       },
       kInvalid,
       {"'batchSize'", "a batch of 3 (from seqUsedQOptional)", "2 (from batchSize)"}},
      {"residual size",
       [](M& c) {
         c.maskMode = 3, c.residual = c.ints({0, 0});
       },
       kInvalid,
       {"'cmpResidualKOptional'", "[B] with B = 1"}},
      {"cu_q[0] 2",
       [](M& c) {
         c.cuQ = c.ints({2, 16});
       },
       kInvalid,
       {"'cuSeqLensQOptional'", "cu_seqlens[0] = 2"}},
      {"cu_k decreasing",
       [](M& c) {
         c.cuK = c.ints({0, -1});
       },
       kInvalid,
       {"'cuSeqLensKOptional'", "non-decreasing"}},
      {"seqused_q past length",
       [](M& c) { c.seqUsedQ = c.ints({17}); },
       kInvalid,
       {"'seqUsedQOptional'", "16 for b = 0", "given 17"}},
      {"seqused_k negative", [](M& c) { c.seqUsedK = c.ints({-2}); }, kInvalid, {"'seqUsedKOptional'", "given -2"}},
      {"residual = cmpRatio",
       [](M& c) { c.maskMode = 3, c.residual = c.ints({4}); },
       kInvalid,
       {"'cmpResidualKOptional'", "< cmpRatio = 4", "cmp_residual_k[0] = 4"}},
      {"metadata on cu_q",
       [](M& c) { c.metadata = c.pool.alias(c.cuQ, ACL_INT32, {64}); },
       kInvalid,
       {"'metadata'", "overlap"}},
  });
}

TEST(KlGradMetadata, A2Checks) {
  mhc::ScopedSoc soc("Ascend910B");
  recentError();
  expectEachRejected<M>({
      {"metadata null", [](M& c) { c.metadata = nullptr, c.numHeadsQ = 0; }, kNull, {"'metadata'", "non-null"}},
      {"numHeadsQ 12", [](M& c) { c.numHeadsQ = 12; }, kInvalid, {"'numHeadsQ'", "{8, 16, 32, 64}", "given 12"}},
      {"topk 100", [](M& c) { c.topk = 100; }, kInvalid, {"'topk'", "512 or a multiple of 1024", "given 100"}},
      {"no query rows",
       [](M& c) {
         c.cuQ = c.ints({0, 0});
       },
       kInvalid,
       {"'seqUsedQOptional'", "0 query rows"}},
  });
}

}  // namespace
}  // namespace gradkit::test::block_residuals
