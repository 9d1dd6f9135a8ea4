// Concurrency: 8 threads, each with its own stream and its own data, run every operator family while another
// thread keeps producing argument errors; each thread queues all its executors before one synchronize. Every
// result must equal the single-threaded one bit for bit, and every thread must see only its own error messages.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_compressor.h"
#include "aclnnop/aclnn_compressor_grad.h"
#include "aclnnop/aclnn_dropout_do_mask.h"
#include "aclnnop/aclnn_dropout_gen_mask.h"
#include "aclnnop/aclnn_dropout_v3.h"
#include "aclnnop/aclnn_dropout_v3_grad.h"
#include "aclnnop/aclnn_flash_attention_score.h"
#include "aclnnop/aclnn_flash_attention_score_grad.h"
#include "aclnnop/aclnn_mhc_pre.h"
#include "aclnnop/aclnn_mhc_pre_backward.h"
#include "aclnnop/aclnn_threshold_backward.h"
#include "gradkit/float_convert.h"
#include "ops/op_test_util.h"
#include "ops/random_data.h"

namespace gradkit::test {
namespace {

constexpr int64_t kElements = 70000;  // several parallel chunks and a tail
constexpr int64_t kMaskBytes = (kElements + 127) / 128 * 16;

// mHC: a TND problem whose token count does not divide into the kernels' blocks.
constexpr int64_t kTokens = 37, kStreams = 4, kHidden = 64, kWidth = kStreams * kHidden;
constexpr int64_t kFusion = 2 * kStreams + kStreams * kStreams;

/** n values uniform in [-1, 1) as fp32 or bf16 bytes (mHC inputs: finite, of order one). */
std::vector<unsigned char> uniformElements(aclDataType dtype, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const size_t size = dtype == ACL_BF16 ? 2 : 4;
  std::vector<unsigned char> bytes(static_cast<size_t>(n) * size);
  for (int64_t i = 0; i < n; ++i) {
    const float value = uniform(rng);
    if (dtype == ACL_BF16) {
      const uint16_t bits = floatToBf16(value);
      std::memcpy(bytes.data() + i * 2, &bits, 2);
    } else {
      std::memcpy(bytes.data() + i * 4, &value, 4);
    }
  }
  return bytes;
}

/** One thread's MhcPre + MhcPreBackward data: the backward reads the caches the forward queued before it wrote. */
struct MhcJob {
  explicit MhcJob(uint32_t seed)
      : x(uniformElements(ACL_BF16, kTokens * kWidth, seed)),
        phi(uniformElements(ACL_FLOAT, kFusion * kWidth, seed + 1)),
        alpha(uniformElements(ACL_FLOAT, 3, seed + 2)),
        bias(uniformElements(ACL_FLOAT, kFusion, seed + 3)),
        gamma(uniformElements(ACL_FLOAT, kWidth, seed + 4)),
        gradHIn(uniformElements(ACL_BF16, kTokens * kHidden, seed + 5)),
        gradHPost(uniformElements(ACL_FLOAT, kTokens * kStreams, seed + 6)),
        gradHRes(uniformElements(ACL_FLOAT, kTokens * kStreams * kStreams, seed + 7)),
        gradXPost(uniformElements(ACL_BF16, kTokens * kWidth, seed + 8)) {}

  std::vector<unsigned char> x, phi, alpha, bias, gamma, gradHIn, gradHPost, gradHRes, gradXPost;
  // Outputs: forward, then backward.
  std::vector<unsigned char> hIn = std::vector<unsigned char>(kTokens * kHidden * 2);
  std::vector<unsigned char> hPost = std::vector<unsigned char>(kTokens * kStreams * 4);
  std::vector<unsigned char> hRes = std::vector<unsigned char>(kTokens * kStreams * kStreams * 4);
  std::vector<unsigned char> invRms = std::vector<unsigned char>(kTokens * 4);
  std::vector<unsigned char> hMix = std::vector<unsigned char>(kTokens * kFusion * 4);
  std::vector<unsigned char> hPre = std::vector<unsigned char>(kTokens * kStreams * 4);
  std::vector<unsigned char> gradX = std::vector<unsigned char>(kTokens * kWidth * 2);
  std::vector<unsigned char> gradPhi = std::vector<unsigned char>(kFusion * kWidth * 4);
  std::vector<unsigned char> gradAlpha = std::vector<unsigned char>(3 * 4);
  std::vector<unsigned char> gradBias = std::vector<unsigned char>(kFusion * 4);
  std::vector<unsigned char> gradGamma = std::vector<unsigned char>(kWidth * 4);

  bool operator==(const MhcJob& other) const {
    return hIn == other.hIn && hPost == other.hPost && hRes == other.hRes && invRms == other.invRms &&
           hMix == other.hMix && hPre == other.hPre && gradX == other.gradX && gradPhi == other.gradPhi &&
           gradAlpha == other.gradAlpha && gradBias == other.gradBias && gradGamma == other.gradGamma;
  }
};

// Compressor: TH, two batches of 7 and 6 tokens starting at positions 2 and 5 (history read from a paged state
// cache: blocks of 8 positions, batch 0 in blocks 1-2, batch 1 in blocks 3-4), H = 1024, D = 128, coff = 2, cr = 4.
constexpr int64_t kCmpTokens = 13, kCmpBatch = 2, kCmpHidden = 1024, kCmpHeadDim = 128, kCmpCoff = 2, kCmpRatio = 4;
constexpr int64_t kCmpChannels = kCmpCoff * kCmpHeadDim, kCmpBlockRows = kCmpCoff * kCmpRatio;
constexpr int64_t kCmpRows = 5;  // min(T, T / cr + B)
constexpr int64_t kCmpCacheBlocks = 5, kCmpCacheBlockSize = 8, kCmpCacheWidth = 2 * kCmpChannels;
// The ring-buffer call (cacheMode 2): one ring of 16 positions per batch (>= coff*cr + 7 - 1), its two blocks 64 floats
// apart beyond their extent, given only by stateCacheStrideDim0 (the tensor is described densely).
constexpr int64_t kRingBlockSize = 16, kRingStride = kRingBlockSize * kCmpCacheWidth + 64;
constexpr int64_t kRingStorage = kRingStride + kRingBlockSize * kCmpCacheWidth;

/**
 * One thread's Compressor (gradEnabled) + CompressorGrad data: the backward reads the softmaxScore and kv the forward
 * queued before it wrote. The forward reads the cache below start_pos and writes it from start_pos on, so repeated
 * rounds read the same history.
 */
struct CompressorJob {
  explicit CompressorJob(uint32_t seed)
      : x(uniformElements(ACL_BF16, kCmpTokens * kCmpHidden, seed)),
        wkv(uniformElements(ACL_BF16, kCmpChannels * kCmpHidden, seed + 1)),
        wgate(uniformElements(ACL_BF16, kCmpChannels * kCmpHidden, seed + 2)),
        ape(uniformElements(ACL_FLOAT, kCmpRatio * kCmpChannels, seed + 3)),
        stateCache(uniformElements(ACL_FLOAT, kCmpCacheBlocks * kCmpCacheBlockSize * kCmpCacheWidth, seed + 4)),
        dCmpKv(uniformElements(ACL_BF16, kCmpRows * kCmpHeadDim, seed + 5)),
        ringCache(uniformElements(ACL_FLOAT, kRingStorage, seed + 6)) {}

  std::vector<unsigned char> x, wkv, wgate, ape, stateCache, dCmpKv, ringCache;
  std::vector<int32_t> table = {1, 2, 3, 4}, cuSeqlens = {0, 7, 13}, startPos = {2, 5}, ringTable = {1, 0};
  std::vector<unsigned char> ringCmpKv = std::vector<unsigned char>(kCmpRows * kCmpHeadDim * 2);
  // Outputs: forward (the cache above), then backward.
  std::vector<unsigned char> cmpKv = std::vector<unsigned char>(kCmpRows * kCmpHeadDim * 2);
  std::vector<unsigned char> softmaxScore = std::vector<unsigned char>(kCmpRows * kCmpBlockRows * kCmpHeadDim * 4);
  std::vector<unsigned char> kv = std::vector<unsigned char>(kCmpRows * kCmpBlockRows * kCmpHeadDim * 4);
  std::vector<unsigned char> dX = std::vector<unsigned char>(kCmpTokens * kCmpHidden * 2);
  std::vector<unsigned char> dWkv = std::vector<unsigned char>(kCmpChannels * kCmpHidden * 2);
  std::vector<unsigned char> dWgate = std::vector<unsigned char>(kCmpChannels * kCmpHidden * 2);
  std::vector<unsigned char> dApe = std::vector<unsigned char>(kCmpRatio * kCmpChannels * 4);

  bool operator==(const CompressorJob& other) const {
    return stateCache == other.stateCache && cmpKv == other.cmpKv && softmaxScore == other.softmaxScore &&
           kv == other.kv && dX == other.dX && dWkv == other.dWkv && dWgate == other.dWgate && dApe == other.dApe &&
           ringCache == other.ringCache && ringCmpKv == other.ringCmpKv;
  }
};

// Flash attention: BSND, B = 1, N1 = 4 query heads over N2 = 2 KV heads, S1 = S2 = 40, D = 32, causal (sparse mode 3
// with upstream's [2048, 2048] template), dropout with keepProb 0.9 from a packed mask of the thread's own bits.
constexpr int64_t kFaHeads = 4, kFaKvHeads = 2, kFaSeq = 40, kFaDim = 32, kFaTemplate = 2048;
constexpr int64_t kFaQ = kFaSeq * kFaHeads * kFaDim, kFaKv = kFaSeq * kFaKvHeads * kFaDim;
constexpr int64_t kFaStats = kFaHeads * kFaSeq * 8, kFaDropBytes = (kFaHeads * kFaSeq * kFaSeq + 7) / 8;

/** The causal template (1 above the diagonal), shared read-only by every thread. */
const std::vector<uint8_t>& faCausalTemplate() {
  static const std::vector<uint8_t> bytes = [] {
    std::vector<uint8_t> t(static_cast<size_t>(kFaTemplate * kFaTemplate));
    for (int64_t i = 0; i < kFaTemplate; ++i) {
      for (int64_t j = i + 1; j < kFaTemplate; ++j) t[static_cast<size_t>(i * kFaTemplate + j)] = 1;
    }
    return t;
  }();
  return bytes;
}

/** About 9 in 10 bits set, drawn from `seed`. */
std::vector<uint8_t> faDropBits(uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> bytes(kFaDropBytes, 0);
  for (int64_t bit = 0; bit < kFaDropBytes * 8; ++bit) {
    if (rng() % 10 != 0) bytes[static_cast<size_t>(bit / 8)] |= static_cast<uint8_t>(1u << (bit % 8));
  }
  return bytes;
}

/** One thread's FlashAttentionScoreV2 + ScoreGradV2 data: the backward reads the out and statistics queued before. */
struct FlashAttentionJob {
  explicit FlashAttentionJob(uint32_t seed)
      : q(uniformElements(ACL_BF16, kFaQ, seed)),
        k(uniformElements(ACL_BF16, kFaKv, seed + 1)),
        v(uniformElements(ACL_BF16, kFaKv, seed + 2)),
        dy(uniformElements(ACL_BF16, kFaQ, seed + 3)),
        drop(faDropBits(seed + 4)) {}

  std::vector<unsigned char> q, k, v, dy;
  std::vector<uint8_t> drop;
  // Outputs: forward, then backward.
  std::vector<unsigned char> out = std::vector<unsigned char>(kFaQ * 2);
  std::vector<unsigned char> max = std::vector<unsigned char>(kFaStats * 4);
  std::vector<unsigned char> sum = std::vector<unsigned char>(kFaStats * 4);
  std::vector<unsigned char> dq = std::vector<unsigned char>(kFaQ * 2);
  std::vector<unsigned char> dk = std::vector<unsigned char>(kFaKv * 2);
  std::vector<unsigned char> dv = std::vector<unsigned char>(kFaKv * 2);

  bool operator==(const FlashAttentionJob& other) const {
    return out == other.out && max == other.max && sum == other.sum && dq == other.dq && dk == other.dk &&
           dv == other.dv;
  }
};

/** One thread's inputs and outputs; `seed` makes every thread's data and dropout stream its own. */
struct Job {
  explicit Job(uint32_t dataSeed)
      : grad(randomElements(ACL_BF16, kElements, dataSeed)),
        self(randomElements(ACL_BF16, kElements, dataSeed + 1)),
        seed(dataSeed),
        mhc(dataSeed + 2),
        compressor(dataSeed + 3),
        flashAttention(dataSeed + 4) {}

  std::vector<unsigned char> grad, self;
  uint32_t seed;
  MhcJob mhc;
  CompressorJob compressor;
  FlashAttentionJob flashAttention;
  // Outputs: ThresholdBackward, GenMaskV2, DropoutV3 (out, mask), DoMask, V3Grad.
  std::vector<unsigned char> threshold = std::vector<unsigned char>(kElements * 2);
  std::vector<uint8_t> genMask = std::vector<uint8_t>(kMaskBytes);
  std::vector<unsigned char> v3Out = std::vector<unsigned char>(kElements * 2);
  std::vector<uint8_t> v3Mask = std::vector<uint8_t>(kMaskBytes);
  std::vector<unsigned char> doMask = std::vector<unsigned char>(kElements * 2);
  std::vector<unsigned char> v3Grad = std::vector<unsigned char>(kElements * 2);

  bool operator==(const Job& other) const {
    return threshold == other.threshold && genMask == other.genMask && v3Out == other.v3Out && v3Mask == other.v3Mask &&
           doMask == other.doMask && v3Grad == other.v3Grad && mhc == other.mhc && compressor == other.compressor &&
           flashAttention == other.flashAttention;
  }
};

/** Plans and launches one op on `stream` without waiting; false (with a gtest failure) when a phase fails. */
template <class Plan, class Launch>
bool enqueue(Plan plan, Launch launch, aclrtStream stream, std::vector<std::vector<unsigned char>>& workspaces) {
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus planned = plan(&size, &executor);
  EXPECT_EQ(planned, ACLNN_SUCCESS) << recentError();
  if (planned != ACLNN_SUCCESS) return false;
  workspaces.emplace_back(size);  // kept alive until the stream has run
  const aclnnStatus launched = launch(workspaces.back().data(), size, executor, stream);
  EXPECT_EQ(launched, ACLNN_SUCCESS) << recentError();
  return launched == ACLNN_SUCCESS;
}

/**
 * Queues MhcPre, then MhcPreBackward on the caches it writes (the stream runs them in order). The aclTensor
 * descriptors are destroyed before the stream runs, as CANN programs may do: executors must not refer to them.
 */
void enqueueMhc(MhcJob& job, aclrtStream stream, std::vector<std::vector<unsigned char>>& workspaces) {
  auto x = makeView(job.x.data(), ACL_BF16, {kTokens, kStreams, kHidden});
  auto phi = makeView(job.phi.data(), ACL_FLOAT, {kFusion, kWidth});
  auto alpha = makeView(job.alpha.data(), ACL_FLOAT, {3});
  auto bias = makeView(job.bias.data(), ACL_FLOAT, {kFusion});
  auto gamma = makeView(job.gamma.data(), ACL_FLOAT, {kStreams, kHidden});
  auto hIn = makeView(job.hIn.data(), ACL_BF16, {kTokens, kHidden});
  auto hPost = makeView(job.hPost.data(), ACL_FLOAT, {kTokens, kStreams});
  auto hRes = makeView(job.hRes.data(), ACL_FLOAT, {kTokens, kStreams, kStreams});
  auto invRms = makeView(job.invRms.data(), ACL_FLOAT, {kTokens});
  auto hMix = makeView(job.hMix.data(), ACL_FLOAT, {kTokens, kFusion});
  auto hPre = makeView(job.hPre.data(), ACL_FLOAT, {kTokens, kStreams});
  auto gradHIn = makeView(job.gradHIn.data(), ACL_BF16, {kTokens, kHidden});
  auto gradHPost = makeView(job.gradHPost.data(), ACL_FLOAT, {kTokens, kStreams});
  auto gradHRes = makeView(job.gradHRes.data(), ACL_FLOAT, {kTokens, kStreams, kStreams});
  auto gradXPost = makeView(job.gradXPost.data(), ACL_BF16, {kTokens, kStreams, kHidden});
  auto gradX = makeView(job.gradX.data(), ACL_BF16, {kTokens, kStreams, kHidden});
  auto gradPhi = makeView(job.gradPhi.data(), ACL_FLOAT, {kFusion, kWidth});
  auto gradAlpha = makeView(job.gradAlpha.data(), ACL_FLOAT, {3});
  auto gradBias = makeView(job.gradBias.data(), ACL_FLOAT, {kFusion});
  auto gradGamma = makeView(job.gradGamma.data(), ACL_FLOAT, {kStreams, kHidden});
  enqueue(
      [&](uint64_t* s, aclOpExecutor** e) {
        return aclnnMhcPreGetWorkspaceSize(x.get(), phi.get(), alpha.get(), bias.get(), gamma.get(), 1e-6, 1e-6,
                                           hIn.get(), hPost.get(), hRes.get(), invRms.get(), hMix.get(), hPre.get(), s,
                                           e);
      },
      aclnnMhcPre, stream, workspaces);
  enqueue(
      [&](uint64_t* s, aclOpExecutor** e) {
        return aclnnMhcPreBackwardGetWorkspaceSize(x.get(), phi.get(), alpha.get(), gradHIn.get(), gradHPost.get(),
                                                   gradHRes.get(), invRms.get(), hMix.get(), hPre.get(), hPost.get(),
                                                   gamma.get(), gradXPost.get(), 1e-6f, gradX.get(), gradPhi.get(),
                                                   gradAlpha.get(), gradBias.get(), gradGamma.get(), s, e);
      },
      aclnnMhcPreBackward, stream, workspaces);
}

/** Queues Compressor (gradEnabled), then CompressorGrad on the softmaxScore and kv it writes. */
void enqueueCompressor(CompressorJob& job, aclrtStream stream, std::vector<std::vector<unsigned char>>& workspaces) {
  auto x = makeView(job.x.data(), ACL_BF16, {kCmpTokens, kCmpHidden});
  auto wkv = makeView(job.wkv.data(), ACL_BF16, {kCmpChannels, kCmpHidden});
  auto wgate = makeView(job.wgate.data(), ACL_BF16, {kCmpChannels, kCmpHidden});
  auto ape = makeView(job.ape.data(), ACL_FLOAT, {kCmpRatio, kCmpChannels});
  auto cache = makeView(job.stateCache.data(), ACL_FLOAT, {kCmpCacheBlocks, kCmpCacheBlockSize, kCmpCacheWidth});
  auto table = makeView(job.table.data(), ACL_INT32, {kCmpBatch, 2});
  auto cuSeqlens = makeView(job.cuSeqlens.data(), ACL_INT32, {kCmpBatch + 1});
  auto startPos = makeView(job.startPos.data(), ACL_INT32, {kCmpBatch});
  auto cmpKv = makeView(job.cmpKv.data(), ACL_BF16, {kCmpRows, kCmpHeadDim});
  auto softmaxScore = makeView(job.softmaxScore.data(), ACL_FLOAT, {kCmpRows, kCmpBlockRows, kCmpHeadDim});
  auto kv = makeView(job.kv.data(), ACL_FLOAT, {kCmpRows, kCmpBlockRows, kCmpHeadDim});
  auto dCmpKv = makeView(job.dCmpKv.data(), ACL_BF16, {kCmpRows, kCmpHeadDim});
  auto dX = makeView(job.dX.data(), ACL_BF16, {kCmpTokens, kCmpHidden});
  auto dWkv = makeView(job.dWkv.data(), ACL_BF16, {kCmpChannels, kCmpHidden});
  auto dWgate = makeView(job.dWgate.data(), ACL_BF16, {kCmpChannels, kCmpHidden});
  auto dApe = makeView(job.dApe.data(), ACL_FLOAT, {kCmpRatio, kCmpChannels});
  enqueue(
      [&](uint64_t* s, aclOpExecutor** e) {
        return aclnnCompressorGetWorkspaceSize(x.get(), wkv.get(), wgate.get(), cache.get(), ape.get(), table.get(),
                                               cuSeqlens.get(), nullptr, startPos.get(), kCmpRatio, kCmpCoff, 1, 0,
                                               true, cmpKv.get(), softmaxScore.get(), kv.get(), s, e);
      },
      aclnnCompressor, stream, workspaces);
  enqueue(
      [&](uint64_t* s, aclOpExecutor** e) {
        return aclnnCompressorGradGetWorkspaceSize(x.get(), wkv.get(), wgate.get(), dCmpKv.get(), softmaxScore.get(),
                                                   kv.get(), cuSeqlens.get(), nullptr, startPos.get(), kCmpRatio,
                                                   kCmpCoff, dX.get(), dWkv.get(), dWgate.get(), dApe.get(), s, e);
      },
      aclnnCompressorGrad, stream, workspaces);
  // Then the same tokens through the ring-buffer cache with a padded block stride (read, then written in place).
  auto ringCache =
      makeView(job.ringCache.data(), ACL_FLOAT, {kCmpBatch, kRingBlockSize, kCmpCacheWidth}, {}, 0, kRingStorage);
  auto ringTable = makeView(job.ringTable.data(), ACL_INT32, {kCmpBatch});
  auto ringCmpKv = makeView(job.ringCmpKv.data(), ACL_BF16, {kCmpRows, kCmpHeadDim});
  enqueue(
      [&](uint64_t* s, aclOpExecutor** e) {
        return aclnnCompressorGetWorkspaceSize(x.get(), wkv.get(), wgate.get(), ringCache.get(), ape.get(),
                                               ringTable.get(), cuSeqlens.get(), nullptr, startPos.get(), kCmpRatio,
                                               kCmpCoff, 2, kRingStride, false, ringCmpKv.get(), softmaxScore.get(),
                                               kv.get(), s, e);
      },
      aclnnCompressor, stream, workspaces);
}

/** Queues FlashAttentionScoreV2, then FlashAttentionScoreGradV2 on the out and statistics it writes. */
void enqueueFlashAttention(FlashAttentionJob& job, aclrtStream stream,
                           std::vector<std::vector<unsigned char>>& workspaces) {
  const std::vector<int64_t> qShape = {1, kFaSeq, kFaHeads, kFaDim}, kvShape = {1, kFaSeq, kFaKvHeads, kFaDim};
  const std::vector<int64_t> statsShape = {1, kFaHeads, kFaSeq, 8};
  auto q = makeView(job.q.data(), ACL_BF16, qShape);
  auto k = makeView(job.k.data(), ACL_BF16, kvShape);
  auto v = makeView(job.v.data(), ACL_BF16, kvShape);
  auto dy = makeView(job.dy.data(), ACL_BF16, qShape);
  auto mask = makeView(const_cast<uint8_t*>(faCausalTemplate().data()), ACL_UINT8, {kFaTemplate, kFaTemplate});
  auto drop = makeView(job.drop.data(), ACL_UINT8, {kFaDropBytes});
  auto out = makeView(job.out.data(), ACL_BF16, qShape);
  auto max = makeView(job.max.data(), ACL_FLOAT, statsShape);
  auto sum = makeView(job.sum.data(), ACL_FLOAT, statsShape);
  auto dq = makeView(job.dq.data(), ACL_BF16, qShape);
  auto dk = makeView(job.dk.data(), ACL_BF16, kvShape);
  auto dv = makeView(job.dv.data(), ACL_BF16, kvShape);
  char layout[] = "BSND";
  const double scale = 1.0 / std::sqrt(static_cast<double>(kFaDim)), keep = 0.9;
  constexpr int64_t kAll = 2147483647, kCausal = 3, kPseType = 1;
  enqueue(
      [&](uint64_t* s, aclOpExecutor** e) {
        return aclnnFlashAttentionScoreV2GetWorkspaceSize(
            q.get(), k.get(), v.get(), nullptr, drop.get(), nullptr, mask.get(), nullptr, nullptr, nullptr, scale, keep,
            kAll, 0, kFaHeads, layout, 0, kCausal, kPseType, max.get(), sum.get(), nullptr, out.get(), s, e);
      },
      aclnnFlashAttentionScoreV2, stream, workspaces);
  enqueue(
      [&](uint64_t* s, aclOpExecutor** e) {
        return aclnnFlashAttentionScoreGradV2GetWorkspaceSize(
            q.get(), k.get(), v.get(), dy.get(), nullptr, drop.get(), nullptr, mask.get(), max.get(), sum.get(),
            nullptr, out.get(), nullptr, nullptr, nullptr, scale, keep, kAll, 0, kFaHeads, layout, 0, kCausal, kPseType,
            dq.get(), dk.get(), dv.get(), nullptr, s, e);
      },
      aclnnFlashAttentionScoreGradV2, stream, workspaces);
}

/** Queues every op of `job` on `stream` (DoMask and V3Grad read the mask GenMaskV2 wrote), then synchronizes. */
void runJob(Job& job, aclrtStream stream) {
  const std::vector<int64_t> shape = {kElements};
  auto grad = makeView(job.grad.data(), ACL_BF16, shape), self = makeView(job.self.data(), ACL_BF16, shape);
  auto threshold = makeView(job.threshold.data(), ACL_BF16, shape);
  auto genMask = makeView(job.genMask.data(), ACL_UINT8, {kMaskBytes});
  auto v3Out = makeView(job.v3Out.data(), ACL_BF16, shape);
  auto v3Mask = makeView(job.v3Mask.data(), ACL_UINT8, {kMaskBytes});
  auto doMask = makeView(job.doMask.data(), ACL_BF16, shape);
  auto v3Grad = makeView(job.v3Grad.data(), ACL_BF16, shape);
  auto zero = makeScalar<float>(0.25f, ACL_FLOAT);
  std::unique_ptr<aclIntArray, void (*)(aclIntArray*)> dims(aclCreateIntArray(shape.data(), 1),
                                                            [](aclIntArray* a) { aclDestroyIntArray(a); });
  std::vector<std::vector<unsigned char>> workspaces;
  workspaces.reserve(12);
  const int64_t seed = job.seed, offset = 4 * (job.seed % 7);
  enqueue(
      [&](uint64_t* s, aclOpExecutor** e) {
        return aclnnThresholdBackwardGetWorkspaceSize(grad.get(), self.get(), zero.get(), threshold.get(), s, e);
      },
      aclnnThresholdBackward, stream, workspaces);
  enqueue(
      [&](uint64_t* s, aclOpExecutor** e) {
        return aclnnDropoutGenMaskV2GetWorkspaceSize(dims.get(), 0.3, seed, offset, ACL_BF16, genMask.get(), s, e);
      },
      aclnnDropoutGenMaskV2, stream, workspaces);
  enqueue(
      [&](uint64_t* s, aclOpExecutor** e) {
        return aclnnDropoutV3GetWorkspaceSize(self.get(), nullptr, 0.3, seed, offset, v3Out.get(), v3Mask.get(), s, e);
      },
      aclnnDropoutV3, stream, workspaces);
  enqueue(
      [&](uint64_t* s, aclOpExecutor** e) {
        return aclnnDropoutDoMaskGetWorkspaceSize(grad.get(), genMask.get(), 0.3, doMask.get(), s, e);
      },
      aclnnDropoutDoMask, stream, workspaces);
  enqueue(
      [&](uint64_t* s, aclOpExecutor** e) {
        return aclnnDropoutV3GradGetWorkspaceSize(grad.get(), genMask.get(), 1.0 / 0.7, v3Grad.get(), s, e);
      },
      aclnnDropoutV3Grad, stream, workspaces);
  enqueueMhc(job.mhc, stream, workspaces);
  enqueueCompressor(job.compressor, stream, workspaces);
  enqueueFlashAttention(job.flashAttention, stream, workspaces);
  EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS) << recentError();
}

TEST(Concurrency, EightStreamsInParallelGiveTheSingleThreadedBitsWhileAnotherThreadFails) {
  constexpr int kThreads = 8;
  std::vector<Job> expected, actual;
  for (int t = 0; t < kThreads; ++t) {
    expected.emplace_back(1000 + 10 * t);
    actual.emplace_back(1000 + 10 * t);
  }
  for (Job& job : expected) runJob(job, nullptr);  // one thread, the default stream, one job at a time

  std::atomic<bool> stop{false};
  std::atomic<int> errorsSeen{0};
  std::thread failing([&] {
    // Argument errors on a thread of its own: each call's message names its own argument, never another thread's.
    std::vector<unsigned char> bytes(64);
    auto tensor = makeView(bytes.data(), ACL_FLOAT, {16});
    while (!stop.load()) {
      uint64_t size = 0;
      aclOpExecutor* executor = nullptr;
      const aclnnStatus status =
          aclnnDropoutDoMaskGetWorkspaceSize(tensor.get(), nullptr, 0.5, tensor.get(), &size, &executor);
      const std::string message = recentError();
      if (status != ACLNN_ERR_PARAM_NULLPTR || !mentions(message, {"aclnnDropoutDoMask", "'mask'"}) ||
          message.find('\n') != std::string::npos) {
        ADD_FAILURE() << "status " << status << ", message: " << message;
        return;
      }
      ++errorsSeen;
    }
  });
  std::vector<std::thread> workers;
  for (int t = 0; t < kThreads; ++t) {
    workers.emplace_back([&, t] {
      aclrtStream stream = nullptr;
      ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
      for (int round = 0; round < 3; ++round) runJob(actual[t], stream);
      EXPECT_EQ(recentError(), "") << "no error text leaks into a thread whose calls all succeeded";
      EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS);
    });
  }
  for (std::thread& worker : workers) worker.join();
  stop = true;
  failing.join();
  EXPECT_GT(errorsSeen.load(), 0);
  for (int t = 0; t < kThreads; ++t) EXPECT_TRUE(actual[t] == expected[t]) << "thread " << t;
  // Different seeds really gave different masks and gradients (the comparison above is not vacuous).
  EXPECT_NE(expected[0].genMask, expected[1].genMask);
  EXPECT_NE(expected[0].mhc.gradPhi, expected[1].mhc.gradPhi);
  EXPECT_NE(expected[0].mhc.gradPhi, std::vector<unsigned char>(expected[0].mhc.gradPhi.size()));
  EXPECT_NE(expected[0].compressor.dWkv, expected[1].compressor.dWkv);
  EXPECT_NE(expected[0].compressor.dApe, std::vector<unsigned char>(expected[0].compressor.dApe.size()));
  EXPECT_NE(expected[0].flashAttention.dq, expected[1].flashAttention.dq);
  EXPECT_NE(expected[0].flashAttention.dk, std::vector<unsigned char>(expected[0].flashAttention.dk.size()));
}

}  // namespace
}  // namespace gradkit::test
