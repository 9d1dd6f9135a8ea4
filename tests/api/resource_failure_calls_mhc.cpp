// The mHC calls of the resource-failure table (resource_failure_calls.h).
#include <cstdint>
#include <memory>
#include <vector>

#include "aclnnop/aclnn_block_attention_residuals.h"
#include "aclnnop/aclnn_block_attention_residuals_grad.h"
#include "aclnnop/aclnn_mhc_post.h"
#include "aclnnop/aclnn_mhc_post_backward.h"
#include "aclnnop/aclnn_mhc_pre.h"
#include "aclnnop/aclnn_mhc_pre_backward.h"
#include "aclnnop/aclnn_mhc_pre_backward_v2.h"
#include "aclnnop/aclnn_mhc_pre_sinkhorn.h"
#include "aclnnop/aclnn_mhc_pre_sinkhorn_backward.h"
#include "aclnnop/aclnn_mhc_pre_v2.h"
#include "aclnnop/aclnn_mhc_sinkhorn.h"
#include "aclnnop/aclnn_mhc_sinkhorn_backward.h"
#include "api/resource_failure_calls.h"

namespace gradkit_test {
namespace {

// mHC (docs/mhc.md): TND, T = 5 tokens, N = 4 streams, D = 64 (the smallest hidden size of the default Ascend950
// profile), BF16 x, gamma given, the N*N residual: phi has F = 2N + N*N = 24 rows of K = N*D = 256.
constexpr int64_t kMhcTokens = 5, kMhcStreams = 4, kMhcHidden = 64;
constexpr int64_t kMhcRows = 2 * kMhcStreams + kMhcStreams * kMhcStreams, kMhcWidth = kMhcStreams * kMhcHidden;

}  // namespace

namespace {

/** aclnnMhcPre (V2: opImplMode 1, HF32) with every output, the caches included. */
std::unique_ptr<OpCall> mhcPreCall(bool v2) {
  auto call = std::make_unique<OpCall>();
  const int64_t t = kMhcTokens, n = kMhcStreams, d = kMhcHidden;
  aclTensor* x = mhcBf16(*call, {t, n, d}, 0.0f);
  aclTensor* phi = mhcFloat(*call, {kMhcRows, kMhcWidth}, 0.0f);
  aclTensor* alpha = mhcFloat(*call, {3}, 1.0f);
  aclTensor* bias = mhcFloat(*call, {kMhcRows}, 0.0f);
  aclTensor* gamma = mhcFloat(*call, {n, d}, 1.0f);
  aclTensor* hIn = shaped(*call, ACL_BF16, sizeof(uint16_t), {t, d}, true);
  aclTensor* hPost = mhcFloatOutput(*call, {t, n});
  aclTensor* hRes = mhcFloatOutput(*call, {t, n, n});
  aclTensor* invRms = mhcFloatOutput(*call, {t});
  aclTensor* hMix = mhcFloatOutput(*call, {t, kMhcRows});
  aclTensor* hPre = mhcFloatOutput(*call, {t, n});
  if (v2) {
    call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
      return aclnnMhcPreV2GetWorkspaceSize(x, phi, alpha, bias, gamma, 1e-6, 1e-6, 1, hIn, hPost, hRes, invRms, hMix,
                                           hPre, size, executor);
    };
    call->secondPhase = aclnnMhcPreV2;
  } else {
    call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
      return aclnnMhcPreGetWorkspaceSize(x, phi, alpha, bias, gamma, 1e-6, 1e-6, hIn, hPost, hRes, invRms, hMix, hPre,
                                         size, executor);
    };
    call->secondPhase = aclnnMhcPre;
  }
  return call;
}

}  // namespace

std::unique_ptr<OpCall> mhcPre() { return mhcPreCall(false); }
std::unique_ptr<OpCall> mhcPreV2() { return mhcPreCall(true); }

namespace {

/** aclnnMhcPreBackward (V2: opImplMode 1) with gamma and gradXPost, caches of plausible values. */
std::unique_ptr<OpCall> mhcPreBackwardCall(bool v2) {
  auto call = std::make_unique<OpCall>();
  const int64_t t = kMhcTokens, n = kMhcStreams, d = kMhcHidden;
  aclTensor* x = mhcBf16(*call, {t, n, d}, 0.0f);
  aclTensor* phi = mhcFloat(*call, {kMhcRows, kMhcWidth}, 0.0f);
  aclTensor* alpha = mhcFloat(*call, {3}, 1.0f);
  aclTensor* gradHIn = mhcBf16(*call, {t, d}, 0.0f);
  aclTensor* gradHPost = mhcFloat(*call, {t, n}, 0.0f);
  aclTensor* gradHRes = mhcFloat(*call, {t, n, n}, 0.0f);
  aclTensor* invRms = mhcFloat(*call, {t}, 4.0f);
  aclTensor* hMix = mhcFloat(*call, {t, kMhcRows}, 0.0f);
  aclTensor* hPre = mhcFloat(*call, {t, n}, 0.5f);   // sigmoid + hcEps: inside (0, 1)
  aclTensor* hPost = mhcFloat(*call, {t, n}, 1.0f);  // 2 sigmoid: inside (0, 2)
  aclTensor* gamma = mhcFloat(*call, {n, d}, 1.0f);
  aclTensor* gradXPost = mhcBf16(*call, {t, n, d}, 0.0f);
  aclTensor* gradX = shaped(*call, ACL_BF16, sizeof(uint16_t), {t, n, d}, true);
  aclTensor* gradPhi = mhcFloatOutput(*call, {kMhcRows, kMhcWidth});
  aclTensor* gradAlpha = mhcFloatOutput(*call, {3});
  aclTensor* gradBias = mhcFloatOutput(*call, {kMhcRows});
  aclTensor* gradGamma = mhcFloatOutput(*call, {n, d});
  if (v2) {
    call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
      return aclnnMhcPreBackwardV2GetWorkspaceSize(x, phi, alpha, gradHIn, gradHPost, gradHRes, invRms, hMix, hPre,
                                                   hPost, gamma, gradXPost, 1e-6f, 1, gradX, gradPhi, gradAlpha,
                                                   gradBias, gradGamma, size, executor);
    };
    call->secondPhase = aclnnMhcPreBackwardV2;
  } else {
    call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
      return aclnnMhcPreBackwardGetWorkspaceSize(x, phi, alpha, gradHIn, gradHPost, gradHRes, invRms, hMix, hPre, hPost,
                                                 gamma, gradXPost, 1e-6f, gradX, gradPhi, gradAlpha, gradBias,
                                                 gradGamma, size, executor);
    };
    call->secondPhase = aclnnMhcPreBackward;
  }
  return call;
}

}  // namespace

std::unique_ptr<OpCall> mhcPreBackward() { return mhcPreBackwardCall(false); }
std::unique_ptr<OpCall> mhcPreBackwardV2() { return mhcPreBackwardCall(true); }

/** aclnnMhcPost with hRes. */
std::unique_ptr<OpCall> mhcPost() {
  auto call = std::make_unique<OpCall>();
  const int64_t t = kMhcTokens, n = kMhcStreams, d = kMhcHidden;
  aclTensor* x = mhcBf16(*call, {t, n, d}, 0.5f);
  aclTensor* hRes = mhcFloat(*call, {t, n, n}, 0.25f);
  aclTensor* hOut = mhcBf16(*call, {t, d}, 1.0f);
  aclTensor* hPost = mhcFloat(*call, {t, n}, 1.0f);
  aclTensor* out = shaped(*call, ACL_BF16, sizeof(uint16_t), {t, n, d}, true);
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnMhcPostGetWorkspaceSize(x, hRes, hOut, hPost, out, size, executor);
  };
  call->secondPhase = aclnnMhcPost;
  return call;
}

/** aclnnMhcPostBackward with hRes. */
std::unique_ptr<OpCall> mhcPostBackward() {
  auto call = std::make_unique<OpCall>();
  const int64_t t = kMhcTokens, n = kMhcStreams, d = kMhcHidden;
  aclTensor* gradOutput = mhcBf16(*call, {t, n, d}, 0.25f);
  aclTensor* x = mhcBf16(*call, {t, n, d}, 0.5f);
  aclTensor* hRes = mhcFloat(*call, {t, n, n}, 0.25f);
  aclTensor* hOut = mhcBf16(*call, {t, d}, 1.0f);
  aclTensor* hPost = mhcFloat(*call, {t, n}, 1.0f);
  aclTensor* gradX = shaped(*call, ACL_BF16, sizeof(uint16_t), {t, n, d}, true);
  aclTensor* gradHRes = mhcFloatOutput(*call, {t, n, n});
  aclTensor* gradHOut = shaped(*call, ACL_BF16, sizeof(uint16_t), {t, d}, true);
  aclTensor* gradHPost = mhcFloatOutput(*call, {t, n});
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnMhcPostBackwardGetWorkspaceSize(gradOutput, x, hRes, hOut, hPost, gradX, gradHRes, gradHOut, gradHPost,
                                                size, executor);
  };
  call->secondPhase = aclnnMhcPostBackward;
  return call;
}

// MhcSinkhorn: T = 5 tokens of n = 4, 3 iterations (saved steps 2 * 3 * 5 * 4 * 8 and 2 * 3 * 5 * 8 elements).
constexpr int64_t kSinkhornIters = 3;
constexpr int64_t kSinkhornNorm = 2 * kSinkhornIters * kMhcTokens * kMhcStreams * 8;
constexpr int64_t kSinkhornSums = 2 * kSinkhornIters * kMhcTokens * 8;

/** aclnnMhcSinkhorn saving its steps. */
std::unique_ptr<OpCall> mhcSinkhorn() {
  auto call = std::make_unique<OpCall>();
  const int64_t t = kMhcTokens, n = kMhcStreams;
  aclTensor* x = mhcFloat(*call, {t, n, n}, 0.0f);
  aclTensor* output = mhcFloatOutput(*call, {t, n, n});
  aclTensor* normOut = mhcFloatOutput(*call, {kSinkhornNorm});
  aclTensor* sumOut = mhcFloatOutput(*call, {kSinkhornSums});
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnMhcSinkhornGetWorkspaceSize(x, 1e-6f, kSinkhornIters, output, normOut, sumOut, size, executor);
  };
  call->secondPhase = aclnnMhcSinkhorn;
  return call;
}

/** aclnnMhcSinkhornBackward over saved steps near 1 (any values: the run must only not fail). */
std::unique_ptr<OpCall> mhcSinkhornBackward() {
  auto call = std::make_unique<OpCall>();
  const int64_t t = kMhcTokens, n = kMhcStreams;
  aclTensor* gradOutput = mhcFloat(*call, {t, n, n}, 0.5f);
  aclTensor* normOut = mhcFloat(*call, {kSinkhornNorm}, 0.25f);
  aclTensor* sumOut = mhcFloat(*call, {kSinkhornSums}, 1.0f);
  aclTensor* out = mhcFloatOutput(*call, {t, n, n});
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnMhcSinkhornBackwardGetWorkspaceSize(gradOutput, normOut, sumOut, out, size, executor);
  };
  call->secondPhase = aclnnMhcSinkhornBackward;
  return call;
}

// MhcPreSinkhorn: BSND B = 1, S = 3, n = 4 and c = 4096 (the default Ascend950 profile's smaller width), BF16 x;
// 20 iterations, every saved tensor written (and read back by the backward).
constexpr int64_t kPsSeq = 3, kPsHidden = 4096, kPsRows = 24, kPsSteps = 40;

std::unique_ptr<OpCall> mhcPreSinkhorn() {
  auto call = std::make_unique<OpCall>();
  const int64_t s = kPsSeq, n = kMhcStreams, c = kPsHidden;
  aclTensor* x = mhcBf16(*call, {1, s, n, c}, 0.5f);
  aclTensor* phi = mhcFloat(*call, {kPsRows, n * c}, 0.0f);
  aclTensor* alpha = mhcFloat(*call, {3}, 1.0f);
  aclTensor* bias = mhcFloat(*call, {kPsRows}, 0.0f);
  aclTensor* hin = shaped(*call, ACL_BF16, sizeof(uint16_t), {1, s, c}, true);
  aclTensor* hPost = mhcFloatOutput(*call, {1, s, n});
  aclTensor* hRes = mhcFloatOutput(*call, {1, s, n * n});
  aclTensor* hPre = mhcFloatOutput(*call, {1, s, n});
  aclTensor* mix = mhcFloatOutput(*call, {1, s, kPsRows});
  aclTensor* invRms = mhcFloatOutput(*call, {1, s, 1});
  aclTensor* sumOut = mhcFloatOutput(*call, {kPsSteps, 1, s, n});
  aclTensor* normOut = mhcFloatOutput(*call, {kPsSteps, 1, s, n, n});
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnMhcPreSinkhornGetWorkspaceSize(x, phi, alpha, bias, n, 20, 1e-6, 1e-6, true, hin, hPost, hRes, hPre,
                                               mix, invRms, sumOut, normOut, size, executor);
  };
  call->secondPhase = aclnnMhcPreSinkhorn;
  return call;
}

/** aclnnMhcPreSinkhornBackward over saved tensors of plausible values (the run must only not fail). */
std::unique_ptr<OpCall> mhcPreSinkhornBackward() {
  auto call = std::make_unique<OpCall>();
  const int64_t s = kPsSeq, n = kMhcStreams, c = kPsHidden;
  aclTensor* gradHin = mhcBf16(*call, {1, s, c}, 0.0f);
  aclTensor* gradHPost = mhcFloat(*call, {1, s, n}, 0.0f);
  aclTensor* gradHRes = mhcFloat(*call, {1, s, n, n}, 0.0f);
  aclTensor* x = mhcBf16(*call, {1, s, n, c}, 0.5f);
  aclTensor* phi = mhcFloat(*call, {kPsRows, n * c}, 0.0f);
  aclTensor* alpha = mhcFloat(*call, {3}, 1.0f);
  aclTensor* bias = mhcFloat(*call, {kPsRows}, 0.0f);
  aclTensor* hPre = mhcFloat(*call, {1, s, n}, 0.5f);
  aclTensor* mix = mhcFloat(*call, {1, s, kPsRows}, 0.0f);
  aclTensor* invRms = mhcFloat(*call, {1, s, 1}, 4.0f);
  aclTensor* sumOut = mhcFloat(*call, {kPsSteps, 1, s, n}, 1.0f);
  aclTensor* normOut = mhcFloat(*call, {kPsSteps, 1, s, n, n}, 0.25f);
  aclTensor* gradX = shaped(*call, ACL_BF16, sizeof(uint16_t), {1, s, n, c}, true);
  aclTensor* gradPhi = mhcFloatOutput(*call, {kPsRows, n * c});
  aclTensor* gradAlpha = mhcFloatOutput(*call, {3});
  aclTensor* gradBias = mhcFloatOutput(*call, {kPsRows});
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnMhcPreSinkhornBackwardGetWorkspaceSize(gradHin, gradHPost, gradHRes, x, phi, alpha, bias, hPre, mix,
                                                       invRms, sumOut, normOut, 1e-6, gradX, gradPhi, gradAlpha,
                                                       gradBias, size, executor);
  };
  call->secondPhase = aclnnMhcPreSinkhornBackward;
  return call;
}

// BlockAttentionResiduals: T = 5 tokens, N = 3 blocks, H = 64, BF16, the forward saving invNorm and probs.
constexpr int64_t kBarBlocks = 3;

std::unique_ptr<OpCall> blockAttentionResiduals() {
  auto call = std::make_unique<OpCall>();
  const int64_t t = kMhcTokens, n = kBarBlocks, h = kMhcHidden;
  aclTensor* partialBlock = mhcBf16(*call, {t, h}, 0.5f);
  aclTensor* blockRes = mhcBf16(*call, {t, n, h}, 0.0f);
  aclTensor* projWeight = mhcBf16(*call, {h}, 0.25f);
  aclTensor* normWeight = mhcBf16(*call, {h}, 1.0f);
  aclTensor* hiddenStates = shaped(*call, ACL_BF16, sizeof(uint16_t), {t, h}, true);
  aclTensor* invNorm = mhcFloatOutput(*call, {t, n + 1});
  aclTensor* probs = mhcFloatOutput(*call, {t, n + 1});
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnBlockAttentionResidualsGetWorkspaceSize(partialBlock, blockRes, projWeight, normWeight, -1, 1e-6, true,
                                                        hiddenStates, invNorm, probs, size, executor);
  };
  call->secondPhase = aclnnBlockAttentionResiduals;
  return call;
}

/** aclnnBlockAttentionResidualsGrad over saved tensors of plausible values (the run must only not fail). */
std::unique_ptr<OpCall> blockAttentionResidualsGrad() {
  auto call = std::make_unique<OpCall>();
  const int64_t t = kMhcTokens, n = kBarBlocks, h = kMhcHidden;
  aclTensor* partialBlock = mhcBf16(*call, {t, h}, 0.5f);
  aclTensor* blockRes = mhcBf16(*call, {t, n, h}, 0.0f);
  aclTensor* projWeight = mhcBf16(*call, {1, h}, 0.25f);
  aclTensor* normWeight = mhcBf16(*call, {h}, 1.0f);
  aclTensor* gradHiddenStates = mhcBf16(*call, {t, h}, 0.0f);
  aclTensor* invNorm = mhcFloat(*call, {t, n + 1}, 1.0f);
  aclTensor* probs = mhcFloat(*call, {t, n + 1}, 0.25f);
  aclTensor* gradPartialBlock = shaped(*call, ACL_BF16, sizeof(uint16_t), {t, h}, true);
  aclTensor* gradBlockRes = shaped(*call, ACL_BF16, sizeof(uint16_t), {t, n, h}, true);
  aclTensor* gradProjWeight = shaped(*call, ACL_BF16, sizeof(uint16_t), {1, h}, true);
  aclTensor* gradNormWeight = shaped(*call, ACL_BF16, sizeof(uint16_t), {h}, true);
  call->firstPhase = [=](uint64_t* size, aclOpExecutor** executor) {
    return aclnnBlockAttentionResidualsGradGetWorkspaceSize(
        partialBlock, blockRes, projWeight, normWeight, gradHiddenStates, invNorm, probs, -1, gradPartialBlock,
        gradBlockRes, gradProjWeight, gradNormWeight, size, executor);
  };
  call->secondPhase = aclnnBlockAttentionResidualsGrad;
  return call;
}

}  // namespace gradkit_test
