// MhcPreSinkhorn and MhcPreSinkhornBackward through the public API: every output and saved step against the fp64
// golden (written from upstream's formulas; HF32 matmul operands as the NPU), the fused forward equal bit for bit to
// the unfused MhcPreV2 (opImplMode 1) + MhcSinkhorn it is made of, the backward against the golden backward of the
// same saved tensors, needBackward false leaving the saved tensors alone, and the same bits for 1, 2, 3 and 8
// threads with strided tensors equal to dense ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <random>
#include <vector>

#include "aclnnop/aclnn_mhc_pre_sinkhorn.h"
#include "aclnnop/aclnn_mhc_pre_sinkhorn_backward.h"
#include "aclnnop/aclnn_mhc_pre_v2.h"
#include "aclnnop/aclnn_mhc_sinkhorn.h"
#include "core/parallel.h"
#include "golden/mhc_pre_sinkhorn.h"
#include "gradkit/float_convert.h"
#include "ops/mhc_test_util.h"
#include "ops/op_test_util.h"

namespace gradkit::test {
namespace {

using mhc::ScopedSoc;
using mhc::TensorPool;

constexpr int64_t kN = 4, kF = 24, kIters = 20;

float fromBits(aclDataType dtype, uint16_t bits) {
  return dtype == ACL_FLOAT16 ? halfToFloat(bits) : bf16ToFloat(bits);
}
uint16_t toBits(aclDataType dtype, float v) { return dtype == ACL_FLOAT16 ? floatToHalf(v) : floatToBf16(v); }

struct Sizes {
  std::vector<int64_t> lead;  // [B, S] or [T]
  int64_t c = 128;
  aclDataType dtype = ACL_BF16;
  int64_t tokens() const { return product(lead); }
};

/** Inputs of one problem and room for every output; the data of a call (tensors over these buffers). */
struct Data {
  Sizes s;
  std::vector<uint16_t> x, gradHin, hin, gradX;
  std::vector<float> phi, alpha, bias, gradHPost, gradHRes;
  std::vector<float> hPost, hRes, hPre, hcBeforeNorm, invRms, sumOut, normOut, gradPhi, gradAlpha, gradBias;

  explicit Data(const Sizes& sizes, uint32_t seed = 5) : s(sizes) {
    const int64_t t = s.tokens(), k = kN * s.c;
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const auto bits = [&](int64_t count, float scale) {
      std::vector<uint16_t> v(static_cast<size_t>(count));
      for (uint16_t& b : v) b = toBits(s.dtype, scale * u(rng));
      return v;
    };
    const auto floats = [&](int64_t count, float scale) {
      std::vector<float> v(static_cast<size_t>(count));
      for (float& e : v) e = scale * u(rng);
      return v;
    };
    x = bits(t * k, 2.0f);
    gradHin = bits(t * s.c, 1.0f);
    phi = floats(kF * k, 1.0f / std::sqrt(static_cast<float>(k)));  // upstream's recommended range
    alpha = floats(3, 1.0f);
    bias = floats(kF, 0.5f);
    gradHPost = floats(t * kN, 1.0f);
    gradHRes = floats(t * kN * kN, 1.0f);
    hin.assign(static_cast<size_t>(t * s.c), 0);
    gradX.assign(x.size(), 0);
    hPost.assign(static_cast<size_t>(t * kN), -7.0f);
    hRes.assign(static_cast<size_t>(t * kN * kN), -7.0f);
    hPre.assign(hPost.size(), -7.0f);
    hcBeforeNorm.assign(static_cast<size_t>(t * kF), -7.0f);
    invRms.assign(static_cast<size_t>(t), -7.0f);
    sumOut.assign(static_cast<size_t>(2 * kIters * t * kN), -7.0f);
    normOut.assign(static_cast<size_t>(2 * kIters * t * kN * kN), -7.0f);
    gradPhi.assign(phi.size(), -7.0f);
    gradAlpha.assign(3, -7.0f);
    gradBias.assign(kF, -7.0f);
  }

  std::vector<int64_t> shape(std::vector<int64_t> tail, int64_t steps = 0) const {
    std::vector<int64_t> out;
    if (steps > 0) out.push_back(steps);
    out.insert(out.end(), s.lead.begin(), s.lead.end());
    out.insert(out.end(), tail.begin(), tail.end());
    return out;
  }

  /**
   * The tensors of one call over this problem's buffers, dense, or (strided) views with every stride doubled over
   * wide copies: inputs copied in, outputs copied back by finish().
   */
  class Tensors {
   public:
    explicit Tensors(bool strided) : strided_(strided) {}
    template <class T>
    aclTensor* operator()(std::vector<T>& data, aclDataType dtype, const std::vector<int64_t>& shape) {
      if (!strided_) return pool_.view(data.data(), dtype, shape);
      std::vector<int64_t> strides = rowMajorStrides(shape);
      for (int64_t& stride : strides) stride *= 2;
      auto& wide = wides_.emplace_back(2 * data.size() * sizeof(T), static_cast<unsigned char>(0x5a));
      for (size_t e = 0; e < data.size(); ++e) std::memcpy(&wide[2 * e * sizeof(T)], &data[e], sizeof(T));
      backs_.push_back([&data, &wide] {
        for (size_t e = 0; e < data.size(); ++e) std::memcpy(&data[e], &wide[2 * e * sizeof(T)], sizeof(T));
      });
      return pool_.view(wide.data(), dtype, shape, strides);
    }
    void finish() {
      for (auto& back : backs_) back();
    }

   private:
    bool strided_;
    TensorPool pool_;
    std::deque<std::vector<unsigned char>> wides_;
    std::vector<std::function<void()>> backs_;
  };

  void forward(bool needBackward = true, bool strided = false) {
    Tensors t(strided);
    const aclDataType f32 = ACL_FLOAT;
    aclTensor* tx = t(x, s.dtype, shape({kN, s.c}));
    aclTensor* tphi = t(phi, f32, {kF, kN * s.c});
    aclTensor* talpha = t(alpha, f32, {3});
    aclTensor* tbias = t(bias, f32, {kF});
    aclTensor* thin = t(hin, s.dtype, shape({s.c}));
    aclTensor* thPost = t(hPost, f32, shape({kN}));
    aclTensor* thRes = t(hRes, f32, shape({kN * kN}));
    aclTensor* thPre = t(hPre, f32, shape({kN}));
    aclTensor* tmix = t(hcBeforeNorm, f32, shape({kF}));
    aclTensor* tinv = t(invRms, f32, shape({1}));
    aclTensor* tsum = t(sumOut, f32, shape({kN}, 2 * kIters));
    aclTensor* tnorm = t(normOut, f32, shape({kN, kN}, 2 * kIters));
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    ASSERT_EQ(aclnnMhcPreSinkhornGetWorkspaceSize(tx, tphi, talpha, tbias, kN, kIters, 1e-6, 1e-6, needBackward, thin,
                                                  thPost, thRes, thPre, tmix, tinv, tsum, tnorm, &size, &executor),
              0)
        << aclGetRecentErrMsg();
    std::vector<unsigned char> workspace(size);
    ASSERT_EQ(aclnnMhcPreSinkhorn(workspace.data(), size, executor, nullptr), 0) << aclGetRecentErrMsg();
    ASSERT_EQ(aclrtSynchronizeStream(nullptr), 0);
    t.finish();
  }

  void backward(bool strided = false) {
    Tensors t(strided);
    const aclDataType f32 = ACL_FLOAT;
    aclTensor* tg = t(gradHin, s.dtype, shape({s.c}));
    aclTensor* tgPost = t(gradHPost, f32, shape({kN}));
    aclTensor* tgRes = t(gradHRes, f32, shape({kN, kN}));
    aclTensor* tx = t(x, s.dtype, shape({kN, s.c}));
    aclTensor* tphi = t(phi, f32, {kF, kN * s.c});
    aclTensor* talpha = t(alpha, f32, {3});
    aclTensor* tbias = t(bias, f32, {kF});
    aclTensor* thPre = t(hPre, f32, shape({kN}));
    aclTensor* tmix = t(hcBeforeNorm, f32, shape({kF}));
    aclTensor* tinv = t(invRms, f32, shape({1}));
    aclTensor* tsum = t(sumOut, f32, shape({kN}, 2 * kIters));
    aclTensor* tnorm = t(normOut, f32, shape({kN, kN}, 2 * kIters));
    aclTensor* tgx = t(gradX, s.dtype, shape({kN, s.c}));
    aclTensor* tgphi = t(gradPhi, f32, {kF, kN * s.c});
    aclTensor* tgalpha = t(gradAlpha, f32, {3});
    aclTensor* tgbias = t(gradBias, f32, {kF});
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    ASSERT_EQ(
        aclnnMhcPreSinkhornBackwardGetWorkspaceSize(tg, tgPost, tgRes, tx, tphi, talpha, tbias, thPre, tmix, tinv, tsum,
                                                    tnorm, 1e-6, tgx, tgphi, tgalpha, tgbias, &size, &executor),
        0)
        << aclGetRecentErrMsg();
    std::vector<unsigned char> workspace(size);
    ASSERT_EQ(aclnnMhcPreSinkhornBackward(workspace.data(), size, executor, nullptr), 0) << aclGetRecentErrMsg();
    ASSERT_EQ(aclrtSynchronizeStream(nullptr), 0);
    t.finish();
  }

  std::vector<double> wide(const std::vector<uint16_t>& bits) const {
    std::vector<double> out(bits.size());
    for (size_t i = 0; i < bits.size(); ++i) out[i] = fromBits(s.dtype, bits[i]);
    return out;
  }
  golden::MhcSizes sizes() const { return {s.tokens(), kN, s.c, kF}; }

  golden::MhcPreSinkhornOutputs<double> golden() const {
    const std::vector<double> gx = wide(x), gphi(phi.begin(), phi.end()), galpha(alpha.begin(), alpha.end()),
                              gbias(bias.begin(), bias.end());
    golden::MhcPreInputs<double> in;
    in.sizes = sizes();
    in.x = gx.data();
    in.phi = gphi.data();
    in.alpha = galpha.data();
    in.bias = gbias.data();
    in.normEps = 1e-6;
    in.hcEps = 1e-6;
    in.hf32 = true;
    return golden::mhcPreSinkhorn(in, kIters);
  }
};

/** max |got - want| / max(1, |want|) over the elements. */
template <class Got>
double worstError(const std::vector<Got>& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(got[i]) - want[i]) / std::max(1.0, std::fabs(want[i])));
  }
  return worst;
}

void expectForwardMatchesGolden(Data& data) {
  data.forward();
  const auto want = data.golden();
  EXPECT_LT(worstError(data.wide(data.hin), want.pre.hIn), 1.0 / 128) << "hin";  // one 16-bit rounding
  EXPECT_LT(worstError(data.hPost, want.pre.hPost), 2e-6) << "hPost";
  EXPECT_LT(worstError(data.hPre, want.pre.hPre), 2e-6) << "hPre";
  EXPECT_LT(worstError(data.invRms, want.pre.invRms), 1e-5) << "invRms";  // fp32 sums of K squares
  EXPECT_LT(worstError(data.hcBeforeNorm, want.pre.hMix), 2e-5) << "hcBeforeNorm";
  EXPECT_LT(worstError(data.hRes, want.hRes), 2e-5) << "hRes";
  EXPECT_LT(worstError(data.sumOut, want.sum), 2e-5) << "sumOut";
  EXPECT_LT(worstError(data.normOut, want.norm), 2e-5) << "normOut";
  std::printf("forward worst relative errors: hcBeforeNorm %.1e hRes %.1e normOut %.1e sumOut %.1e\n",
              worstError(data.hcBeforeNorm, want.pre.hMix), worstError(data.hRes, want.hRes),
              worstError(data.normOut, want.norm), worstError(data.sumOut, want.sum));
}

TEST(MhcPreSinkhornValues, ForwardMatchesTheGoldenInTheA2Profile) {
  const ScopedSoc soc("Ascend910B");
  for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
    Data data({{2, 37}, 256, dtype});
    expectForwardMatchesGolden(data);
  }
}

TEST(MhcPreSinkhornValues, ForwardMatchesTheGoldenInTheAscend950ProfileWithTnd) {
  const ScopedSoc soc("Ascend950");
  Data data({{5}, 4096, ACL_BF16});
  expectForwardMatchesGolden(data);
}

/** The golden backward of the saved tensors `data` holds (as gradkit's forward wrote them). */
golden::MhcPreBackwardOutputs<double> goldenBackward(const Data& data, bool hf32) {
  const auto d = [](const auto& v) { return std::vector<double>(v.begin(), v.end()); };
  const std::vector<double> x = data.wide(data.x), g = data.wide(data.gradHin), phi = d(data.phi),
                            alpha = d(data.alpha), bias = d(data.bias), gPost = d(data.gradHPost),
                            gRes = d(data.gradHRes), hPre = d(data.hPre), mix = d(data.hcBeforeNorm),
                            inv = d(data.invRms), norm = d(data.normOut), sum = d(data.sumOut);
  golden::MhcPreSinkhornBackwardInputs<double> in;
  in.sizes = data.sizes();
  in.iters = kIters;
  in.x = x.data();
  in.phi = phi.data();
  in.alpha = alpha.data();
  in.bias = bias.data();
  in.gradHIn = g.data();
  in.gradHPost = gPost.data();
  in.gradHRes = gRes.data();
  in.hPre = hPre.data();
  in.hMix = mix.data();
  in.invRms = inv.data();
  in.norm = norm.data();
  in.sum = sum.data();
  in.hcEps = 1e-6;
  in.hf32 = hf32;
  return golden::mhcPreSinkhornBackward(in);
}

void expectBackwardMatchesGolden(Data& data, bool hf32) {
  data.forward();
  data.backward();
  const auto want = goldenBackward(data, hf32);
  std::vector<double> gradX = data.wide(data.gradX);
  EXPECT_LT(worstError(gradX, want.gradX), 1.0 / 128) << "gradX";  // one 16-bit rounding
  std::printf("backward (hf32 %d) worst relative errors: gradX %.1e gradPhi %.1e gradAlpha %.1e gradBias %.1e\n", hf32,
              worstError(gradX, want.gradX), worstError(data.gradPhi, want.gradPhi),
              worstError(data.gradAlpha, want.gradAlpha), worstError(data.gradBias, want.gradBias));
  // HF32 operands: a dm that fp32 and fp64 round to neighbouring HF32 values (11 bits) differs by 2^-11 of itself.
  const double matmul = hf32 ? 2e-3 : 1e-4;
  EXPECT_LT(worstError(data.gradPhi, want.gradPhi), matmul) << "gradPhi";
  EXPECT_LT(worstError(data.gradAlpha, want.gradAlpha), 1e-4) << "gradAlpha";
  EXPECT_LT(worstError(data.gradBias, want.gradBias), 1e-4) << "gradBias";
}

TEST(MhcPreSinkhornValues, BackwardMatchesTheGoldenInTheAscend950Profile) {
  const ScopedSoc soc("Ascend950");
  Data data({{70}, 4096, ACL_BF16});
  expectBackwardMatchesGolden(data, false);
}

TEST(MhcPreSinkhornValues, BackwardMatchesTheGoldenWithHf32InTheA2Profile) {
  const ScopedSoc soc("Ascend910B");
  for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
    Data data({{3, 50}, 128, dtype});
    expectBackwardMatchesGolden(data, true);
  }
}

TEST(MhcPreSinkhornValues, FusedForwardEqualsMhcPreV2ThenMhcSinkhorn) {
  // The fused forward is MhcPre with HF32 operands followed by the Sinkhorn projection: the same bits as the two
  // unfused entry points (Ascend950 profile, where both exist), saved steps 1.. equal to MhcSinkhorn's in their layout.
  const ScopedSoc soc("Ascend950");
  Data data({{2, 33}, 4096, ACL_BF16});
  data.forward();
  const int64_t t = data.s.tokens();
  std::vector<uint16_t> hIn(data.hin.size());
  std::vector<float> hPost(data.hPost.size()), logits(data.hRes.size()), hRes(data.hRes.size());
  TensorPool pool;
  aclTensor* x = pool.view(data.x.data(), ACL_BF16, {t, kN, data.s.c});
  aclTensor* phi = pool.view(data.phi.data(), ACL_FLOAT, {kF, kN * data.s.c});
  aclTensor* alpha = pool.view(data.alpha.data(), ACL_FLOAT, {3});
  aclTensor* bias = pool.view(data.bias.data(), ACL_FLOAT, {kF});
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  ASSERT_EQ(aclnnMhcPreV2GetWorkspaceSize(
                x, phi, alpha, bias, nullptr, 1e-6, 1e-6, 1, pool.view(hIn.data(), ACL_BF16, {t, data.s.c}),
                pool.view(hPost.data(), ACL_FLOAT, {t, kN}), pool.view(logits.data(), ACL_FLOAT, {t, kN, kN}), nullptr,
                nullptr, nullptr, &size, &executor),
            0)
      << aclGetRecentErrMsg();
  std::vector<unsigned char> workspace(size);
  ASSERT_EQ(aclnnMhcPreV2(workspace.data(), size, executor, nullptr), 0);
  ASSERT_EQ(aclnnMhcSinkhornGetWorkspaceSize(pool.view(logits.data(), ACL_FLOAT, {t, kN, kN}), 1e-6f, kIters,
                                             pool.view(hRes.data(), ACL_FLOAT, {t, kN, kN}), nullptr, nullptr, &size,
                                             &executor),
            0)
      << aclGetRecentErrMsg();
  workspace.assign(size, 0);
  ASSERT_EQ(aclnnMhcSinkhorn(workspace.data(), size, executor, nullptr), 0);
  ASSERT_EQ(aclrtSynchronizeStream(nullptr), 0);
  EXPECT_EQ(hIn, data.hin);
  EXPECT_EQ(0, std::memcmp(hPost.data(), data.hPost.data(), hPost.size() * 4));
  EXPECT_EQ(0, std::memcmp(hRes.data(), data.hRes.data(), hRes.size() * 4));
}

TEST(MhcPreSinkhornValues, WithoutNeedBackwardTheSavedTensorsStayUntouched) {
  const ScopedSoc soc("Ascend910B");
  Data saving({{2, 9}, 128, ACL_BF16}), plain({{2, 9}, 128, ACL_BF16});
  saving.forward(true);
  plain.forward(false);
  EXPECT_EQ(plain.hin, saving.hin);
  EXPECT_EQ(0, std::memcmp(plain.hRes.data(), saving.hRes.data(), plain.hRes.size() * 4));
  EXPECT_EQ(0, std::memcmp(plain.hPost.data(), saving.hPost.data(), plain.hPost.size() * 4));
  for (const auto* saved : {&plain.hPre, &plain.hcBeforeNorm, &plain.invRms, &plain.sumOut, &plain.normOut}) {
    for (float v : *saved) ASSERT_EQ(v, -7.0f);
  }
}

TEST(MhcPreSinkhornValues, SameBitsForAnyThreadCountAndStridedTensors) {
  const ScopedSoc soc("Ascend910B");
  const Sizes sizes{{3, 41}, 384, ACL_FLOAT16};
  Data reference(sizes);
  setThreadCount(1);
  reference.forward();
  reference.backward();
  for (int threads : {2, 3, 8}) {
    for (bool strided : {false, true}) {
      Data data(sizes);
      setThreadCount(threads);
      data.forward(true, strided);
      data.backward(strided);
      const auto same = [](const auto& a, const auto& b) {
        return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0;
      };
      EXPECT_TRUE(same(data.hin, reference.hin)) << threads << (strided ? " strided" : "");
      EXPECT_TRUE(same(data.hRes, reference.hRes)) << threads;
      EXPECT_TRUE(same(data.normOut, reference.normOut)) << threads;
      EXPECT_TRUE(same(data.sumOut, reference.sumOut)) << threads;
      EXPECT_TRUE(same(data.hcBeforeNorm, reference.hcBeforeNorm)) << threads;
      EXPECT_TRUE(same(data.gradX, reference.gradX)) << threads;
      EXPECT_TRUE(same(data.gradPhi, reference.gradPhi)) << threads;
      EXPECT_TRUE(same(data.gradAlpha, reference.gradAlpha)) << threads;
      EXPECT_TRUE(same(data.gradBias, reference.gradBias)) << threads;
    }
  }
  setThreadCount(0);
}

}  // namespace
}  // namespace gradkit::test
