// BlockAttentionResiduals and its gradient: hand-worked tokens, the SIMD kernels against the scalar ones on every FMA
// target this CPU runs (bit for bit: they keep one order of operations) for FLOAT / FLOAT16 / BFLOAT16 and H with and
// without a tail of 16, the fp64 golden (written from upstream's formulas) with the tolerances measured below, and the
// public API: the same bits for 1, 2, 3 and 8 threads, strided tensors equal to dense ones, N = 0 and T = 0 in the
// gradient, and needBackward false leaving invNorm and probs untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "hwy/targets.h"
#include "ops/block_residuals_test_util.h"

namespace gradkit::test::block_residuals {
namespace {

const char* dtypeText(aclDataType dtype) {
  return dtype == ACL_FLOAT ? "FLOAT" : dtype == ACL_FLOAT16 ? "FLOAT16" : "BFLOAT16";
}

std::string where(const Sizes& s) {
  return std::string(dtypeText(s.dtype)) + " T " + std::to_string(s.tokens) + " N " + std::to_string(s.blocks) + " H " +
         std::to_string(s.hidden);
}

TEST(BlockResidualsValues, HandWorkedToken) {
  // One token, N = 1, H = 2: block v0 = (2, 2), partial v1 = (1, -1); eps 2^-30 vanishes against ss / H, so
  // invNorm = (1 / sqrt(4), 1 / sqrt(1)) = (0.5, 1) exactly. w = normWeight * projWeight = (0.5, 0.25):
  // scores (0.5 * 1.5, 1 * 0.25) = (0.75, 0.25), probs (sigmoid(0.5), sigmoid(-0.5)).
  for (const auto* kernels : {&kernels::kBlockResidualsScalarKernels, &kernels::kBlockResidualsSimdKernels}) {
    Data d({1, 1, 2, ACL_FLOAT, 0x1p-30f});
    d.blockRes.set(0, 2.0f), d.blockRes.set(1, 2.0f);
    d.partialBlock.set(0, 1.0f), d.partialBlock.set(1, -1.0f);
    d.normWeight.set(0, 1.0f), d.normWeight.set(1, 1.0f);
    d.projWeight.set(0, 0.5f), d.projWeight.set(1, 0.25f);
    d.gradHidden.set(0, 1.0f), d.gradHidden.set(1, 0.0f);
    d.runKernels(*kernels);
    const double p0 = 1.0 / (1.0 + std::exp(-0.5)), p1 = 1.0 - p0, q = p0 * p1;
    EXPECT_EQ(d.invNorm.get(0), 0.5f);
    EXPECT_EQ(d.invNorm.get(1), 1.0f);
    EXPECT_NEAR(d.probs.get(0), p0, 1e-7);
    EXPECT_NEAR(d.probs.get(1), p1, 1e-7);
    EXPECT_NEAR(d.hidden.get(0), 2 * p0 + p1, 2e-7);  // p0 v0 + p1 v1
    EXPECT_NEAR(d.hidden.get(1), 2 * p0 - p1, 2e-7);
    // g = (1, 0): d = (2, 1), e = 1 + p0, gs = (q, -q); a = gs invNorm = (q / 2, -q); c = gs dot invNorm^3 / H with
    // dot = (1.5, 0.25): (q 1.5 / 16, -q 0.25 / 2). gradV = g p + a w - c v, s = a0 v0 + a1 v1 = (0, 2 q).
    EXPECT_NEAR(d.gradBlockRes.get(0), p0 + q / 16, 2e-7);
    EXPECT_NEAR(d.gradBlockRes.get(1), -q / 16, 2e-7);
    EXPECT_NEAR(d.gradPartialBlock.get(0), p1 - 0.375 * q, 2e-7);
    EXPECT_NEAR(d.gradPartialBlock.get(1), -0.375 * q, 2e-7);
    EXPECT_NEAR(d.weightSum[0], 0.0, 1e-7);
    EXPECT_NEAR(d.weightSum[1], 2 * q, 2e-7);
    kernels::blockResidualsWeightGrads(ACL_FLOAT, d.weightSum.data(), d.projWeight.data(), d.normWeight.data(), 2,
                                       d.gradProjWeight.data(), d.gradNormWeight.data());
    EXPECT_NEAR(d.gradNormWeight.get(1), 0.5 * q, 2e-7);  // s * projWeight
    EXPECT_NEAR(d.gradProjWeight.get(1), 2 * q, 2e-7);    // s * normWeight
  }
}

TEST(BlockResidualsValues, EqualScoresAverageExactly) {
  // normWeight 0 makes every score 0: probs 1 / (N + 1) = 1/4 exactly, hidden the plain mean (exact in BF16 here).
  Data d({3, 3, 20, ACL_BF16});
  for (int64_t h = 0; h < 20; ++h) d.normWeight.set(h, 0.0f);
  for (int64_t i = 0; i < d.blockRes.size(); ++i) d.blockRes.set(i, static_cast<float>(i % 5));
  for (int64_t i = 0; i < d.partialBlock.size(); ++i) d.partialBlock.set(i, 4.0f);
  d.runKernels(kernels::kBlockResidualsSimdKernels);
  for (int64_t i = 0; i < d.probs.size(); ++i) ASSERT_EQ(d.probs.get(i), 0.25f) << i;
  for (int64_t t = 0; t < 3; ++t) {
    for (int64_t h = 0; h < 20; ++h) {
      float sum = 4.0f;
      for (int64_t i = 0; i < 3; ++i) sum += static_cast<float>(((t * 3 + i) * 20 + h) % 5);
      ASSERT_EQ(d.hidden.get(t * 20 + h), sum / 4) << t << " " << h;
    }
  }
}

TEST(BlockResidualsValues, SimdMatchesScalarOnEveryTarget) {
  // H 64 / 256 (whole chunks), 1, 37, 100, 1000 (a tail of 16; AVX2's second half empty or partial); N up to the
  // gradient's 128 and the forward's 100; the gradient with N = 0.
  const std::vector<Sizes> cases = {{5, 4, 64},   {3, 1, 37},   {4, 7, 100},  {2, 3, 1},
                                    {3, 2, 1000}, {2, 100, 24}, {2, 128, 19}, {6, 0, 45}};
  for (aclDataType dtype : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
    for (Sizes s : cases) {
      s.dtype = dtype;
      Data scalar(s);
      if (s.blocks > 0 && s.blocks <= 100) {
        scalar.runKernels(kernels::kBlockResidualsScalarKernels);
      } else {  // the gradient alone (the forward's N is 1..100): plausible saved tensors from N + 1 equal scores
        for (int64_t i = 0; i < scalar.probs.size(); ++i) scalar.probs.set(i, 1.0f / static_cast<float>(s.blocks + 1));
        for (int64_t i = 0; i < scalar.invNorm.size(); ++i) scalar.invNorm.set(i, 0.75f);
        scalar.hidden = Buffer(s.dtype, 0);
        kernels::kBlockResidualsScalarKernels.backward(scalar.backward(), 0, s.tokens, scalar.weightSum.data());
      }
      forEachFmaTarget([&](int64_t target) {
        Data simd(s);
        simd.invNorm = scalar.invNorm;
        simd.probs = scalar.probs;
        if (s.blocks > 0 && s.blocks <= 100) {
          kernels::kBlockResidualsSimdKernels.forward(simd.forward(), 0, s.tokens);
          EXPECT_EQ(simd.hidden, scalar.hidden) << hwy::TargetName(target) << " " << where(s);
          EXPECT_EQ(simd.invNorm, scalar.invNorm) << hwy::TargetName(target) << " " << where(s);
          EXPECT_EQ(simd.probs, scalar.probs) << hwy::TargetName(target) << " " << where(s);
        }
        kernels::kBlockResidualsSimdKernels.backward(simd.backward(), 0, s.tokens, simd.weightSum.data());
        EXPECT_EQ(simd.gradPartialBlock, scalar.gradPartialBlock) << hwy::TargetName(target) << " " << where(s);
        EXPECT_EQ(simd.gradBlockRes, scalar.gradBlockRes) << hwy::TargetName(target) << " " << where(s);
        for (int64_t h = 0; h < s.hidden; ++h) {
          ASSERT_EQ(std::memcmp(&simd.weightSum[h], &scalar.weightSum[h], 4), 0)
              << hwy::TargetName(target) << " " << where(s) << " h " << h;
        }
      });
    }
  }
}

/**
 * Errors against the fp64 golden (the gradient's golden fed the kernels' own invNorm and probs), measured on this
 * file's four shapes with seed 5 (worst of the four), and the limits checked:
 *   dtype      hidden (max-norm rel)    invNorm, probs (max rel)   gradV (normwise)       weight grads (normwise)
 *   FLOAT      2.4e-7   limit 1e-6      9.8e-7 (all) limit 3e-6    1.1e-7   limit 5e-7    2.7e-7   limit 1e-6
 *   FLOAT16    2.9e-4   limit 6e-4      (fp32 outputs)             2.1e-4   limit 6e-4    2.6e-4   limit 6e-4
 *   BFLOAT16   2.3e-3   limit 4.5e-3                               1.7e-3   limit 4.5e-3  1.9e-3   limit 4.5e-3
 * The 16-bit errors are the final rounding (half an ulp: up to 2^-11 of FLOAT16's, 2^-8 of BFLOAT16's largest value);
 * invNorm and probs are fp32 for every dtype (a few fp32 ulps: the sums over H, the exp, the division).
 */
struct Limits {
  double hidden, saved, gradV, weights;
};

Limits limitsOf(aclDataType dtype) {
  switch (dtype) {
    case ACL_FLOAT:
      return {1e-6, 3e-6, 5e-7, 1e-6};
    case ACL_FLOAT16:
      return {6e-4, 3e-6, 6e-4, 6e-4};
    default:
      return {4.5e-3, 3e-6, 4.5e-3, 4.5e-3};
  }
}

TEST(BlockResidualsValues, MatchFp64Golden) {
  for (aclDataType dtype : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
    for (Sizes s : {Sizes{40, 4, 256}, Sizes{33, 1, 37}, Sizes{17, 9, 1000}, Sizes{70, 2, 64}}) {
      s.dtype = dtype;
      Data d(s);
      ASSERT_EQ(runForwardApi(d), ACLNN_SUCCESS) << aclGetRecentErrMsg();
      ASSERT_EQ(runGradApi(d), ACLNN_SUCCESS) << aclGetRecentErrMsg();
      const golden::BlockResidualOutputs<double> forward = d.goldenForward();
      const golden::BlockResidualGradients<double> grad = d.goldenGrad();
      const double hiddenError = maxNormError(d.hidden.widened(), forward.hidden);
      const double savedError = std::max(maxRelativeError(d.invNorm.widened(), forward.invNorm, 0.0),
                                         maxRelativeError(d.probs.widened(), forward.probs, 0x1p-20));
      const double gradVError = std::max(normwiseError(d.gradPartialBlock.widened(), grad.partialBlock),
                                         normwiseError(d.gradBlockRes.widened(), grad.blockRes));
      const double weightError = std::max(normwiseError(d.gradProjWeight.widened(), grad.projWeight),
                                          normwiseError(d.gradNormWeight.widened(), grad.normWeight));
      std::printf(
          "BlockAttentionResiduals vs fp64 golden, %s: hidden %.2e, invNorm/probs %.2e, gradV %.2e, "
          "weight grads %.2e\n",
          where(s).c_str(), hiddenError, savedError, gradVError, weightError);
      const Limits limits = limitsOf(dtype);
      EXPECT_LE(hiddenError, limits.hidden) << where(s);
      EXPECT_LE(savedError, limits.saved) << where(s);
      EXPECT_LE(gradVError, limits.gradV) << where(s);
      EXPECT_LE(weightError, limits.weights) << where(s);
    }
  }
}

TEST(BlockResidualsValues, ApiBitsForAnyThreadCount) {
  // T = 2100: 66 chunks of 32 tokens, so the weight sums run in two groups of kBlockResidualsGradGroup chunks.
  for (aclDataType dtype : {ACL_FLOAT, ACL_BF16}) {
    const Sizes s{2100, 3, 40, dtype};
    Data scalar(s);
    kernels::kBlockResidualsScalarKernels.forward(scalar.forward(), 0, s.tokens);  // per token: no partition
    const int saved = threadCount();
    Data reference(s);
    for (int threads : {1, 2, 3, 8}) {
      setThreadCount(threads);
      Data api(s);
      ASSERT_EQ(runForwardApi(api), ACLNN_SUCCESS) << aclGetRecentErrMsg();
      ASSERT_EQ(runGradApi(api), ACLNN_SUCCESS) << aclGetRecentErrMsg();
      EXPECT_EQ(api.hidden, scalar.hidden) << threads << " threads";
      EXPECT_EQ(api.invNorm, scalar.invNorm) << threads << " threads";
      EXPECT_EQ(api.probs, scalar.probs) << threads << " threads";
      if (threads == 1) {
        reference = api;
        continue;
      }
      EXPECT_EQ(api.gradPartialBlock, reference.gradPartialBlock) << threads << " threads";
      EXPECT_EQ(api.gradBlockRes, reference.gradBlockRes) << threads << " threads";
      EXPECT_EQ(api.gradProjWeight, reference.gradProjWeight) << threads << " threads";
      EXPECT_EQ(api.gradNormWeight, reference.gradNormWeight) << threads << " threads";
    }
    setThreadCount(saved);
  }
}

TEST(BlockResidualsValues, StridedTensorsEqualDense) {
  // Every input and output a view with all strides doubled (staged through the workspace); projWeight [1, H] too.
  for (aclDataType dtype : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
    const Sizes s{37, 3, 50, dtype};
    Data dense(s), strided(s);
    ASSERT_EQ(runForwardApi(dense), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    ASSERT_EQ(runForwardApi(strided, true, true, true), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    ASSERT_EQ(runGradApi(dense), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    ASSERT_EQ(runGradApi(strided, true), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    EXPECT_EQ(strided.hidden, dense.hidden) << dtypeText(dtype);
    EXPECT_EQ(strided.invNorm, dense.invNorm) << dtypeText(dtype);
    EXPECT_EQ(strided.probs, dense.probs) << dtypeText(dtype);
    EXPECT_EQ(strided.gradPartialBlock, dense.gradPartialBlock) << dtypeText(dtype);
    EXPECT_EQ(strided.gradBlockRes, dense.gradBlockRes) << dtypeText(dtype);
    EXPECT_EQ(strided.gradProjWeight, dense.gradProjWeight) << dtypeText(dtype);
    EXPECT_EQ(strided.gradNormWeight, dense.gradNormWeight) << dtypeText(dtype);
  }
}

TEST(BlockResidualsValues, GradWithoutBlocksPassesTheGradientThrough) {
  // N = 0: one value per token, probs 1, so gs = 0: gradPartialBlock = gradHiddenStates bit for bit, the weight
  // gradients 0; and the golden agrees.
  for (aclDataType dtype : {ACL_FLOAT, ACL_BF16}) {
    Data d({45, 0, 70, dtype});
    for (int64_t t = 0; t < 45; ++t) d.probs.set(t, 1.0f), d.invNorm.set(t, 0.5f);
    ASSERT_EQ(runGradApi(d), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    EXPECT_EQ(d.gradPartialBlock, d.gradHidden);
    for (int64_t h = 0; h < 70; ++h) {
      ASSERT_EQ(d.gradProjWeight.get(h), 0.0f) << h;
      ASSERT_EQ(d.gradNormWeight.get(h), 0.0f) << h;
    }
    const golden::BlockResidualGradients<double> grad = d.goldenGrad();
    EXPECT_EQ(normwiseError(d.gradPartialBlock.widened(), grad.partialBlock), 0.0);
  }
}

TEST(BlockResidualsValues, GradOfNoTokensZeroFillsTheWeightGradients) {
  for (aclDataType dtype : {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}) {
    Data d({0, 3, 24, dtype});  // outputs start as 0xFF bytes
    ASSERT_EQ(runGradApi(d), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    EXPECT_EQ(d.gradProjWeight, Buffer(dtype, 24, 0)) << dtypeText(dtype);
    EXPECT_EQ(d.gradNormWeight, Buffer(dtype, 24, 0)) << dtypeText(dtype);
    Data strided({0, 2, 17, dtype});  // staged outputs are zero-filled too
    ASSERT_EQ(runGradApi(strided, true), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    EXPECT_EQ(strided.gradNormWeight, Buffer(dtype, 17, 0)) << dtypeText(dtype);
  }
  Data noHidden({5, 2, 0, ACL_BF16});  // H = 0: every output empty, nothing to compute
  EXPECT_EQ(runGradApi(noHidden), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  Data noTokens({0, 2, 8, ACL_BF16});  // the forward's T = 0: success without work
  EXPECT_EQ(runForwardApi(noTokens), ACLNN_SUCCESS) << aclGetRecentErrMsg();
}

TEST(BlockResidualsValues, WithoutNeedBackwardInvNormAndProbsAreUntouched) {
  Data d({9, 2, 33, ACL_FLOAT16}), saving({9, 2, 33, ACL_FLOAT16});
  ASSERT_EQ(runForwardApi(d, false, /*needBackward=*/false), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  ASSERT_EQ(runForwardApi(saving), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  EXPECT_EQ(d.invNorm, Buffer(ACL_FLOAT, 9 * 3, 0xFF));
  EXPECT_EQ(d.probs, Buffer(ACL_FLOAT, 9 * 3, 0xFF));
  EXPECT_EQ(d.hidden, saving.hidden);
  EXPECT_NE(saving.probs, d.probs);
}

}  // namespace
}  // namespace gradkit::test::block_residuals
