// aclnnCompressor against a state cache and block table a careless or hostile caller describes (the probes of issue
// 27): a stateCacheStrideDim0 inside the documented range whose blocks reach past the storage the caller declared
// (the run used to write 64 KiB past the buffer), and block tables whose descriptors claim far more columns than the
// memory behind them (the first phase used to copy them whole). Every buffer is exactly as large as the storage its
// descriptor declares, so ASan sees any access past it.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "aclnnop/aclnn_compressor.h"
#include "ops/mhc_test_util.h"

namespace gradkit::test::compressor {
namespace {

using mhc::failsWith;
using mhc::Outcome;
using mhc::quoted;
using mhc::TensorPool;

constexpr int64_t kHidden = 1024, kHeadDim = 128, kCoff = 2, kCmpRatio = 4, kWidth = 2 * kCoff * kHeadDim;

// The call: BSH B = 2, S = 9, bf16, coff 2, cmpRatio 4, paged cache [block_num, block_size, 512] fp32, no
// start_pos, gradEnabled off. The cache and the table are the test's to describe.
struct HostileCall {
  int64_t batch = 2, seq = 9;
  TensorPool pool;
  const aclTensor *x, *wkv, *wgate, *ape, *cmpKv, *score, *kv;

  HostileCall() {
    x = pool.make(ACL_BF16, {batch, seq, kHidden});
    wkv = pool.make(ACL_BF16, {kCoff * kHeadDim, kHidden});
    wgate = pool.make(ACL_BF16, {kCoff * kHeadDim, kHidden});
    ape = pool.make(ACL_FLOAT, {kCmpRatio, kCoff * kHeadDim});
    auto* apeValues = static_cast<float*>(ape->data);
    for (int64_t i = 0; i < kCmpRatio * kCoff * kHeadDim; ++i) apeValues[i] = 1.0f;
    const int64_t rows = (seq + kCmpRatio - 1) / kCmpRatio;
    cmpKv = pool.make(ACL_BF16, {batch, rows, kHeadDim});
    score = pool.make(ACL_FLOAT, {batch, rows, kCoff * kCmpRatio, kHeadDim});
    kv = pool.make(ACL_FLOAT, {batch, rows, kCoff * kCmpRatio, kHeadDim});
  }

  /** Both phases when the first succeeds (the run must then succeed too); the first phase's outcome. */
  Outcome call(aclTensor* cache, const aclTensor* table, int64_t strideDim0) {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    Outcome outcome;
    outcome.status =
        aclnnCompressorGetWorkspaceSize(x, wkv, wgate, cache, ape, table, nullptr, nullptr, nullptr, kCmpRatio, kCoff,
                                        1, strideDim0, false, cmpKv, score, kv, &size, &executor);
    outcome.message = recentError();
    if (outcome.status != ACLNN_SUCCESS) {
      EXPECT_EQ(executor, nullptr);
      return outcome;
    }
    std::vector<unsigned char> workspace(static_cast<size_t>(size));
    EXPECT_EQ(aclnnCompressor(size > 0 ? workspace.data() : nullptr, size, executor, nullptr), ACLNN_SUCCESS)
        << recentError();
    EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << recentError();
    return outcome;
  }
};

// A float cache [blocks, blockSize, 512] over a buffer of exactly `storage` floats, described densely.
aclTensor* cacheOver(TensorPool& pool, std::vector<float>& buffer, int64_t blocks, int64_t blockSize, int64_t storage) {
  buffer.assign(static_cast<size_t>(storage), 0.0f);
  return pool.view(buffer.data(), ACL_FLOAT, {blocks, blockSize, kWidth}, {}, 0, storage);
}

TEST(CompressorHostileArguments, BlockStrideReachingPastTheDeclaredStorageIs161002) {
  HostileCall c;
  std::vector<int32_t> entries = {3, 3};
  const aclTensor* table = c.pool.view(entries.data(), ACL_INT32, {2, 1});
  // The cache [4, 16, 512] holds 32768 floats (128 KiB); block 3 at stride 16384 would start at element 49152.
  std::vector<float> cache;
  aclTensor* dense = cacheOver(c.pool, cache, 4, 16, 4 * 16 * kWidth);
  EXPECT_TRUE(failsWith(c.call(dense, table, 16384), ACLNN_ERR_PARAM_INVALID,
                        {quoted("stateCacheStrideDim0"), "inside the storage stateCacheRef declares (32768 elements",
                         "given 16384, whose last block ends at element 57344"}));
  // Declared storage that holds every strided block: the call runs and writes only inside it.
  const int64_t reach = 3 * 16384 + 16 * kWidth;
  std::vector<float> roomy;
  aclTensor* padded = cacheOver(c.pool, roomy, 4, 16, reach);
  const Outcome ok = c.call(padded, table, 16384);
  ASSERT_EQ(ok.status, ACLNN_SUCCESS) << ok.message;
  // x = 0 gives KV = 0 and score_state = G + ape = ape = 1 (set below): block 3 rows 0..8 (both batches' positions
  // 0..8 go through entry 3) get [0 x 256, 1 x 256]; nothing else in the storage changes.
  for (int64_t e = 0; e < reach; ++e) {
    const int64_t inBlock = e - 3 * 16384, row = inBlock / kWidth, channel = inBlock % kWidth;
    const bool written = inBlock >= 0 && row < c.seq;
    const float expected = written && channel >= kWidth / 2 ? 1.0f : 0.0f;
    ASSERT_EQ(roomy[static_cast<size_t>(e)], expected) << "element " << e;
  }
  // An offset counts too: the same storage with the view one element in no longer holds the last block.
  aclTensor* shifted = c.pool.view(roomy.data(), ACL_FLOAT, {4, 16, kWidth}, {}, 1, reach);
  EXPECT_TRUE(failsWith(c.call(shifted, table, 16384), ACLNN_ERR_PARAM_INVALID,
                        {quoted("stateCacheStrideDim0"), "from offset 1"}));
}

TEST(CompressorHostileArguments, StrideZeroTablesCostWhatTheCallUses) {
  HostileCall c;
  // block_size 1: positions are int32, so a call reaches at most column 2^31 - 1; the table may have 2^31 columns.
  std::vector<float> cache;
  aclTensor* tiny = cacheOver(c.pool, cache, 2, 1, 2 * kWidth);
  int32_t one = 1;
  const int64_t maxColumns = int64_t{1} << 31;
  const aclTensor* widest = c.pool.view(&one, ACL_INT32, {2, maxColumns}, {0, 0}, 0, 1);
  // Copied whole, this table would be 2^32 entries: the first phase would need tens of GB.
  const Outcome ok = c.call(tiny, widest, 0);
  EXPECT_EQ(ok.status, ACLNN_SUCCESS) << ok.message;
  const aclTensor* tooWide = c.pool.view(&one, ACL_INT32, {2, maxColumns + 1}, {0, 0}, 0, 1);
  EXPECT_TRUE(
      failsWith(c.call(tiny, tooWide, 0), ACLNN_ERR_PARAM_INVALID,
                {quoted("stateBlockTableOptional"), "ceil(2^31 / block_size) = 2147483648", "[2, 2147483649]"}));
  // block_size 16 allows 2^27 columns; the issue's [2, 2^33] table was an out-of-memory 561000.
  std::vector<float> cache16;
  aclTensor* blocks16 = cacheOver(c.pool, cache16, 2, 16, 2 * 16 * kWidth);
  const aclTensor* huge = c.pool.view(&one, ACL_INT32, {2, int64_t{1} << 33}, {0, 0}, 0, 1);
  EXPECT_TRUE(failsWith(c.call(blocks16, huge, 0), ACLNN_ERR_PARAM_INVALID,
                        {quoted("stateBlockTableOptional"), "= 134217728", "[2, 8589934592]"}));
  const aclTensor* wide = c.pool.view(&one, ACL_INT32, {2, int64_t{1} << 24}, {0, 0}, 0, 1);
  const Outcome wideOk = c.call(blocks16, wide, 0);
  EXPECT_EQ(wideOk.status, ACLNN_SUCCESS) << wideOk.message;
}

}  // namespace
}  // namespace gradkit::test::compressor
