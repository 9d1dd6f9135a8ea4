#include "ops/mhc/mhc_pre_backward_plan.h"

#include <algorithm>

#include "core/int_math.h"
#include "core/kernel_select.h"
#include "core/parallel.h"

namespace gradkit::ops {
namespace {

// Pass 1: tokens per chunk (one partial sum of grad_bias / grad_alpha per chunk).
constexpr int64_t kTokenChunk = 60;
// Pass 2: tokens per block (the K of the grad_phi tile product; its partial sums are added with compensation) and
// the widest column block (a multiple of every SIMD panel width). Narrower blocks when K is small, so that a small
// K still gives several blocks to share. 120 tokens are whole row tiles of the SIMD kernel (6 rows on AVX2, 8 on
// AVX-512): with 128 two rows of every strip ran in 1-row tiles, whose chains wait on each other (~5 % of the kernel).
constexpr int64_t kTokenBlock = 120;
static_assert(kTokenBlock % kTokenChunk == 0, "a token block holds whole pass-1 chunks");
static_assert(kTokenBlock % kernels::kMhcDmTileRows == 0, "a token block holds whole dm tiles");
// Both passes run one group of tokens at a time, so dm and the per-token coefficients need workspace for one group
// only, whatever T is. With several slots a group is K tokens (dm [group, F] is then about one [F, K] array, the size
// of packed phi), at least 16 token blocks: each group costs two parallel regions, whose barriers cost more than
// the cache misses smaller groups would save (16 blocks were 3-9 % slower than one group at T = 4096, 2 and 4
// blocks 10-20 %). One slot takes groups of one token block: its pass 1 then finds the block's x still in the cache.
constexpr int64_t kMinGroupBlocks = 16;
constexpr int64_t kMaxColumnBlock = 256;
constexpr int64_t kMinColumnBlock = 64;
constexpr int64_t kTargetColumnBlocks = 16;

// The per-slot scratch of pass 2, in floats from the slot's base; every piece starts on 64 bytes.
struct SlotLayout {
  int64_t gammaPart = 0;  // [Kc] sum over a block's tokens of x * dxg
  int64_t xgStrip = 0;    // [Tb, kMhcStripColumns] x * gamma of a strip (HF32-rounded in mode 1)
  int64_t floats = 0;     // the slot's size
};

SlotLayout slotLayout(int64_t tokenBlock, int64_t columnBlock) {
  SlotLayout s;
  int64_t at = 0;
  const auto take = [&at](int64_t floats) {
    const int64_t start = at;
    at += roundUp(floats, 16);
    return start;
  };
  s.gammaPart = take(columnBlock);
  s.xgStrip = take(tokenBlock * kernels::kMhcStripColumns);
  s.floats = at;
  return s;
}

}  // namespace

MhcPreBackwardPasses planMhcPreBackwardPasses(const MhcDims& dims, aclDataType dtype, float hcEps, bool hf32,
                                              bool hasGamma, WorkspaceBooking& booking) {
  MhcPreBackwardPasses plan;
  plan.dims = dims;
  const MhcDims& d = plan.dims;
  const int64_t f = d.fusion, k = d.width();
  plan.dtype = dtype;
  plan.hcEps = hcEps;
  plan.hf32 = hf32;
  plan.gammaFactored = hasGamma && !plan.hf32;

  plan.tokenChunk = kTokenChunk;
  plan.tokenBlock = std::min(kTokenBlock, d.tokens);  // a multiple of tokenChunk, or every token
  plan.columnBlock =
      std::min(k, std::clamp(roundUp(ceilDiv(k, kTargetColumnBlocks), 16), kMinColumnBlock, kMaxColumnBlock));
  const int64_t blocks = ceilDiv(k, plan.columnBlock);
  plan.ldPack = plan.columnBlock + 16;  // rows 16 floats more than a block apart: a strip's rows spread over L1 sets
  const auto packed = static_cast<uint64_t>(blocks * f * plan.ldPack);
  plan.phiPack = booking.bookArray("packed phi", packed, sizeof(float));
  plan.phiSum = booking.bookArray("grad_phi sums", packed, sizeof(float));
  plan.phiComp = booking.bookArray("grad_phi compensation", packed, sizeof(float));
  if (hasGamma && !plan.gammaFactored)
    plan.gammaComp = booking.bookArray("grad_gamma compensation", static_cast<uint64_t>(k), sizeof(float));
  plan.slots = std::max<int64_t>(1, std::min<int64_t>(threadCount(), blocks));
  plan.groupTokens =
      plan.slots == 1 ? plan.tokenBlock : std::max(plan.tokenBlock * kMinGroupBlocks, roundUp(k, plan.tokenBlock));
  plan.groupTokens = std::min(d.tokens, plan.groupTokens);
  plan.dm = booking.bookArray("dm", static_cast<uint64_t>(plan.groupTokens * f), sizeof(float));
  plan.dmTiles = booking.bookArray(
      "dm tiles", static_cast<uint64_t>(roundUp(plan.groupTokens, kernels::kMhcDmTileRows) * f), sizeof(float));
  plan.rmsCoef = booking.bookArray("rms coefficient", static_cast<uint64_t>(plan.groupTokens), sizeof(float));
  plan.chunkSums = booking.bookArray(
      "chunk sums", static_cast<uint64_t>(ceilDiv(plan.groupTokens, plan.tokenChunk) * (f + 3)), sizeof(float));
  const SlotLayout layout = slotLayout(plan.tokenBlock, plan.columnBlock);
  plan.slotGammaPart = layout.gammaPart;
  plan.slotXgStrip = layout.xgStrip;
  plan.slotBytes = static_cast<uint64_t>(layout.floats) * sizeof(float);
  plan.slotScratch = booking.bookArray("column block scratch", static_cast<uint64_t>(plan.slots), plan.slotBytes);
  plan.kernels = &chooseKernels(kernels::kMhcPreBackwardSimdKernels, kernels::kMhcPreBackwardScalarKernels);
  return plan;
}

MhcPreBackwardPlan planMhcPreBackward(const MhcPreBackwardArgs& args) {
  MhcPreBackwardPlan plan;
  WorkspaceBooking& booking = plan.workspace;
  const auto stage = [&booking](const aclTensor& view, const char* name) {
    return StagedTensor::planUnlessDense(view, name, booking);
  };
  plan.x = stage(*args.x, "x staging");
  plan.phi = stage(*args.phi, "phi staging");
  plan.alpha = stage(*args.alpha, "alpha staging");
  plan.gradHIn = stage(*args.gradHIn, "gradHIn staging");
  plan.gradHPost = stage(*args.gradHPost, "gradHPost staging");
  plan.gradHRes = stage(*args.gradHRes, "gradHRes staging");
  plan.invRms = stage(*args.invRms, "invRms staging");
  plan.hMix = stage(*args.hMix, "hMix staging");
  plan.hPre = stage(*args.hPre, "hPre staging");
  plan.hPost = stage(*args.hPost, "hPost staging");
  if (args.gamma != nullptr) plan.gamma = stage(*args.gamma, "gamma staging");
  if (args.gradXPost != nullptr) plan.gradXPost = stage(*args.gradXPost, "gradXPost staging");
  plan.gradX = stage(*args.gradX, "gradX staging");
  plan.gradPhi = stage(*args.gradPhi, "gradPhi staging");
  plan.gradAlpha = stage(*args.gradAlpha, "gradAlpha staging");
  plan.gradBias = stage(*args.gradBias, "gradBias staging");
  if (args.gamma != nullptr) plan.gradGamma = stage(*args.gradGamma, "gradGamma staging");
  plan.passes = planMhcPreBackwardPasses(mhcDimsOf(*args.x, *args.phi), args.x->dtype, args.hcEps,
                                         args.opImplMode == kMhcHf32Matmul, args.gamma != nullptr, booking);
  return plan;
}

}  // namespace gradkit::ops
