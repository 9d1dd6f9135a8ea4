// The FP8 flash attention golden (golden/flash_attention_fp8.h), spec fag.md 5.9: the block quantisation helpers
// (scale = FP8_MAX / max|block|, tail blocks, all-zero blocks, the [B][N][ceil(S/128)] scale order), small backward
// answers worked out by hand (every step of the chain exact in fp8), the dS epsilon rule, and the whole chain against
// the fp64 golden on the de-quantised inputs (loose: the chain's only errors are the fp8 casts of P_d and dS).
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "golden/flash_attention.h"
#include "golden/flash_attention_fp8.h"

namespace {

using gradkit::golden::FlashAttentionFp8GradInputs;
using gradkit::golden::FlashAttentionFp8Inputs;
using gradkit::golden::FlashAttentionProblem;
using gradkit::golden::Fp8Format;
using gradkit::golden::Fp8Quantized;

TEST(FlashAttentionFp8Golden, FormatsAndRounding) {
  EXPECT_EQ(gradkit::golden::fp8Max(Fp8Format::E5M2), 57344.0f);
  EXPECT_EQ(gradkit::golden::fp8Max(Fp8Format::E4M3FN), 448.0f);
  EXPECT_EQ(gradkit::golden::fp8Round(Fp8Format::E4M3FN, 1.0625f), 1.0f);  // RNE tie
  EXPECT_TRUE(std::isnan(gradkit::golden::fp8Round(Fp8Format::E4M3FN, 500.0f)));
  EXPECT_TRUE(std::isinf(gradkit::golden::fp8Round(Fp8Format::E5M2, 70000.0f)));
  // A double just above a float tie rounds up once (no double rounding through float).
  const double justAbove = 1.0625 + std::ldexp(1.0, -40);
  EXPECT_EQ(gradkit::golden::fp8RoundDouble(Fp8Format::E4M3FN, justAbove), 1.125);
  EXPECT_EQ(gradkit::golden::fp8RoundDouble(Fp8Format::E4M3FN, 1.0625), 1.0);
  for (int code = 0; code < 256; ++code) {
    const auto bits = static_cast<uint8_t>(code);
    for (const Fp8Format f : {Fp8Format::E5M2, Fp8Format::E4M3FN}) {
      const float v = gradkit::golden::fp8Decode(f, bits);
      if (std::isnan(v)) continue;
      EXPECT_EQ(gradkit::golden::fp8Encode(f, v), bits) << code;
    }
  }
}

TEST(FlashAttentionFp8Golden, RowBlockScalesTailAndZeroBlocks) {
  // 130 rows x 3 columns: block 0 = rows 0..127, block 1 = rows 128..129 (the tail). Rows 64..127 zero; the tail
  // block all zero.
  const int64_t rows = 130, cols = 3;
  std::vector<float> x(static_cast<size_t>(rows * cols), 0.0f);
  for (int64_t r = 0; r < 64; ++r)
    for (int64_t c = 0; c < cols; ++c) x[r * cols + c] = 0.01f * static_cast<float>((r * 7 + c) % 23) - 0.1f;
  x[5 * cols + 1] = -3.0f;  // the block max |x|
  for (const Fp8Format f : {Fp8Format::E5M2, Fp8Format::E4M3FN}) {
    const Fp8Quantized q = gradkit::golden::fp8QuantizeRowBlocks(f, x.data(), rows, cols);
    ASSERT_EQ(q.dScale.size(), 2u);
    const float scale = gradkit::golden::fp8Max(f) / 3.0f;
    EXPECT_EQ(q.dScale[0], 1.0f / scale);
    EXPECT_EQ(q.dScale[1], 1.0f);  // all-zero tail block: scale 1 (upstream would divide by 0)
    EXPECT_EQ(q.values[5 * cols + 1], -gradkit::golden::fp8Max(f));  // the max lands exactly on FP8_MAX
    for (int64_t e = 0; e < rows * cols; ++e) {
      const float want = gradkit::golden::fp8Round(f, x[e] * scale);
      if (e >= 128 * cols) {
        EXPECT_EQ(q.codes[e], 0) << e;
      }
      EXPECT_EQ(q.values[e], want) << e;
      EXPECT_EQ(gradkit::golden::fp8Decode(f, q.codes[e]), q.values[e]);
      EXPECT_FALSE(std::isnan(q.values[e]));
      EXPECT_LE(std::fabs(q.values[e]), gradkit::golden::fp8Max(f));
    }
  }
  // A block of 1 row and the 128-row boundary: 129 rows -> blocks of 128 and 1, each its own max.
  std::vector<float> y(129, 1.0f);
  y[128] = 0.5f;
  const Fp8Quantized q = gradkit::golden::fp8QuantizeRowBlocks(Fp8Format::E4M3FN, y.data(), 129, 1);
  ASSERT_EQ(q.dScale.size(), 2u);
  EXPECT_EQ(q.dScale[0], 1.0f / 448.0f);
  EXPECT_EQ(q.dScale[1], 0.5f / 448.0f);
  EXPECT_EQ(q.values[0], 448.0f);
  EXPECT_EQ(q.values[128], 448.0f);
}

FlashAttentionProblem problemOf(int64_t batch, int64_t n1, int64_t n2, int64_t s1, int64_t s2, int64_t d) {
  FlashAttentionProblem p;
  p.batch = batch;
  p.n1 = n1;
  p.n2 = n2;
  p.d = d;
  p.dv = d;
  p.s1.assign(static_cast<size_t>(batch), s1);
  p.s2.assign(static_cast<size_t>(batch), s2);
  p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  return p;
}

TEST(FlashAttentionFp8Golden, SideScalesFollowTheOpTensorOrder) {
  const FlashAttentionProblem p = problemOf(2, 2, 1, 129, 125, 4);
  std::vector<float> q(static_cast<size_t>(p.qRows() * p.d));
  for (size_t e = 0; e < q.size(); ++e) q[e] = static_cast<float>(e % 11) + 1.0f;
  // Make each (b, n1, block) max distinct: row 0 of every slab and row 128 (the 1-row tail) get their own value.
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t n = 0; n < 2; ++n) {
      q[p.qRow(b, n, 0) * p.d] = 100.0f + 10.0f * static_cast<float>(b * 2 + n);
      for (int64_t c = 0; c < p.d; ++c) q[p.qRow(b, n, 128) * p.d + c] = 0.25f * static_cast<float>(b * 2 + n + 1);
    }
  }
  const Fp8Quantized side = gradkit::golden::fp8QuantizeQuerySide(p, Fp8Format::E5M2, q.data(), p.d);
  ASSERT_EQ(side.dScale.size(), 8u);  // [B = 2][N1 = 2][ceil(129 / 128) = 2]
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t n = 0; n < 2; ++n) {
      const float top = 100.0f + 10.0f * static_cast<float>(b * 2 + n);
      const float tail = 0.25f * static_cast<float>(b * 2 + n + 1);
      EXPECT_EQ(side.dScale[(b * 2 + n) * 2], 1.0f / (57344.0f / top));
      EXPECT_EQ(side.dScale[(b * 2 + n) * 2 + 1], 1.0f / (57344.0f / tail));
    }
  }
  std::vector<float> k(static_cast<size_t>(p.kvRows() * p.d), 2.0f);
  const Fp8Quantized key = gradkit::golden::fp8QuantizeKeySide(p, Fp8Format::E4M3FN, k.data(), p.d);
  ASSERT_EQ(key.dScale.size(), 2u);  // [B = 2][N2 = 1][1]
  EXPECT_EQ(key.dScale[0], 1.0f / 224.0f);
  EXPECT_EQ(key.values[0], 448.0f);
  EXPECT_EQ(gradkit::golden::fp8Blocks({129, 0, 3}), 2);
}

// B = N = 1, S1 = S2 = 2, D = 1, k = 0: scores are 0, P = 1/2 everywhere. With dy = [1, 2], v = [1, 3] and
// attentionIn = P v = [2, 2]: Drow = [2, 4], dp = [[1, 3], [2, 6]], dS = (dp - Drow) / 2 = [[-0.5, 0.5], [-1, 1]],
// exact in fp8 after the block scale FP8_MAX / 1. dv_j = sum_i P_j dy_i = 1.5, dk_j = sum_i dS_ij q_i, dq = dS k = 0.
// The de-quant scales of dy / v / q are powers of two, so every value of the chain stays exact.
TEST(FlashAttentionFp8Golden, SmallBackwardByHand) {
  for (const Fp8Format f : {Fp8Format::E5M2, Fp8Format::E4M3FN}) {
    FlashAttentionProblem p = problemOf(1, 1, 1, 2, 2, 1);
    p.scale = 1.0f;
    const std::vector<float> q8 = {4.0f, 8.0f}, k8 = {0.0f, 0.0f}, v8 = {2.0f, 6.0f}, dy8 = {4.0f, 8.0f};
    const std::vector<float> dsQ = {0.25f}, dsK = {1.0f}, dsV = {0.5f}, dsDy = {0.25f};  // q = [1, 2], v = [1, 3]
    const std::vector<double> attentionIn = {2.0, 2.0}, m = {0.0, 0.0}, l = {2.0, 2.0};
    FlashAttentionFp8GradInputs in;
    in.tensors = {f, q8.data(), k8.data(), v8.data(), dsQ.data(), dsK.data(), dsV.data()};
    in.dy = dy8.data();
    in.dScaleDy = dsDy.data();
    in.attentionIn = attentionIn.data();
    in.softmaxMax = m.data();
    in.softmaxSum = l.data();
    const auto g = gradkit::golden::flashAttentionFp8Backward(p, in);
    EXPECT_EQ(g.dv, (std::vector<double>{1.5, 1.5}));
    // dk_j = sum_i dS_ij q_i with q = [1, 2]: [-0.5 - 2, 0.5 + 2].
    ASSERT_EQ(g.dk.size(), 2u);
    EXPECT_NEAR(g.dk[0], -2.5, 1e-12);  // 1 / FP8_MAX is not exact in double
    EXPECT_NEAR(g.dk[1], 2.5, 1e-12);
    EXPECT_EQ(g.dq, (std::vector<double>{0.0, 0.0}));
    EXPECT_TRUE(g.dqRope.empty());
    // The forward of the same inputs: P = 1/2, out = P v = [2, 2], m = 0, l = 2.
    const auto fwd = gradkit::golden::flashAttentionFp8Forward(p, in.tensors);
    EXPECT_EQ(fwd.out, (std::vector<double>{2.0, 2.0}));
    EXPECT_EQ(fwd.softmaxMax, (std::vector<double>{0.0, 0.0}));
    EXPECT_EQ(fwd.softmaxSum, (std::vector<double>{2.0, 2.0}));
  }
}

// dy = 0: every dS block has max 0 < 1e-8, so its scale and de-quant scale are 0 and it contributes exactly 0 (no
// NaN from 0 * inf); dv = 0 as well. A fully masked row (mode 0 mask) gives P = 0 and nothing else.
TEST(FlashAttentionFp8Golden, ZeroDsBlocksAndMaskedRows) {
  FlashAttentionProblem p = problemOf(1, 1, 1, 3, 130, 2);
  const std::vector<float> q8(6, 1.0f), k8(260, 0.5f), v8(260, 1.0f), dy8(6, 0.0f);
  const std::vector<float> dsQ = {1.0f}, dsK = {1.0f, 1.0f}, dsV = {1.0f, 1.0f}, dsDy = {1.0f};
  const std::vector<double> attentionIn(6, 1.0), m(3, 1.0 * p.scale), l(3, 130.0);
  FlashAttentionFp8GradInputs in;
  in.tensors = {Fp8Format::E4M3FN, q8.data(), k8.data(), v8.data(), dsQ.data(), dsK.data(), dsV.data()};
  in.dy = dy8.data();
  in.dScaleDy = dsDy.data();
  in.attentionIn = attentionIn.data();
  in.softmaxMax = m.data();
  in.softmaxSum = l.data();
  auto g = gradkit::golden::flashAttentionFp8Backward(p, in);
  for (const double v : g.dq) EXPECT_EQ(v, 0.0);
  for (const double v : g.dk) EXPECT_EQ(v, 0.0);
  for (const double v : g.dv) EXPECT_EQ(v, 0.0);
  // Row 1 fully masked: its P is 0, so with dy = 1 only rows 0 and 2 feed dv.
  p.hasMask = true;
  p.sparseMode = 1;
  p.attenMask = [](int64_t, int64_t, int64_t row, int64_t) { return row == 1; };
  const std::vector<float> dyOnes(6, 1.0f);
  in.dy = dyOnes.data();
  g = gradkit::golden::flashAttentionFp8Backward(p, in);
  // P = exp(s - m) / l with s = q.k * scale = m: P = 1/130 each, rounded to fp8 (e4m3fn: 0.0078125 = 2^-7).
  const double pd8 = gradkit::golden::fp8RoundDouble(Fp8Format::E4M3FN, 1.0 / 130.0);
  EXPECT_EQ(pd8, 0.0078125);
  for (const double v : g.dv) EXPECT_EQ(v, 2 * pd8);
}

struct RandomCase {
  FlashAttentionProblem p;
  std::vector<float> q, k, v, dy;  // float inputs, canonical order
};

RandomCase randomCase(int64_t s1, int64_t s2, unsigned seed) {
  RandomCase c;
  c.p = problemOf(2, 2, 1, s1, s2, 16);
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto fill = [&](std::vector<float>& x, int64_t n) {
    x.resize(static_cast<size_t>(n));
    for (float& e : x) e = normal(rng);
  };
  fill(c.q, c.p.qRows() * c.p.d);
  fill(c.k, c.p.kvRows() * c.p.d);
  fill(c.v, c.p.kvRows() * c.p.dv);
  fill(c.dy, c.p.qRows() * c.p.dv);
  return c;
}

/** De-quantised values of a side tensor: value * dScale[block of its row]. */
std::vector<double> dequantize(const FlashAttentionProblem& p, const Fp8Quantized& x, int64_t dim, bool query) {
  std::vector<double> out(x.values.size());
  const int64_t heads = query ? p.n1 : p.n2;
  const std::vector<int64_t>& rows = query ? p.s1 : p.s2;
  const int64_t blocks = gradkit::golden::fp8Blocks(rows);
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t n = 0; n < heads; ++n)
      for (int64_t i = 0; i < rows[static_cast<size_t>(b)]; ++i) {
        const int64_t row = query ? p.qRow(b, n, i) : p.kvRow(b, n, i);
        const double scale = x.dScale[static_cast<size_t>((b * heads + n) * blocks + i / 128)];
        for (int64_t c = 0; c < dim; ++c) out[row * dim + c] = x.values[row * dim + c] * scale;
      }
  return out;
}

double relativeL2(const std::vector<double>& got, const std::vector<double>& want) {
  double num = 0, den = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    num += (got[i] - want[i]) * (got[i] - want[i]);
    den += want[i] * want[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

// The whole chain against the fp64 golden on the de-quantised inputs (same statistics and attentionIn): what is left
// is the fp8 rounding of P_d and dS, a few percent (e4m3fn: 3 mantissa bits, e5m2: 2). S1 = 129 and S2 = 130 have
// tail blocks of one and two rows on each side.
TEST(FlashAttentionFp8Golden, ChainCloseToTheFp64GoldenOnDequantisedInputs) {
  for (const Fp8Format f : {Fp8Format::E4M3FN, Fp8Format::E5M2}) {
    const RandomCase c = randomCase(129, 130, 7);
    const FlashAttentionProblem& p = c.p;
    const Fp8Quantized q = gradkit::golden::fp8QuantizeQuerySide(p, f, c.q.data(), p.d);
    const Fp8Quantized k = gradkit::golden::fp8QuantizeKeySide(p, f, c.k.data(), p.d);
    const Fp8Quantized v = gradkit::golden::fp8QuantizeKeySide(p, f, c.v.data(), p.dv);
    const Fp8Quantized dy = gradkit::golden::fp8QuantizeQuerySide(p, f, c.dy.data(), p.dv);
    FlashAttentionFp8GradInputs in;
    in.tensors = {
        f, q.values.data(), k.values.data(), v.values.data(), q.dScale.data(), k.dScale.data(), v.dScale.data()};
    const auto fwd = gradkit::golden::flashAttentionFp8Forward(p, in.tensors);
    in.dy = dy.values.data();
    in.dScaleDy = dy.dScale.data();
    in.attentionIn = fwd.out.data();
    in.softmaxMax = fwd.softmaxMax.data();
    in.softmaxSum = fwd.softmaxSum.data();
    const auto g = gradkit::golden::flashAttentionFp8Backward(p, in);

    const std::vector<double> qd = dequantize(p, q, p.d, true), kd = dequantize(p, k, p.d, false);
    const std::vector<double> vd = dequantize(p, v, p.dv, false), dyd = dequantize(p, dy, p.dv, true);
    gradkit::golden::FlashAttentionGradInputs<double> ref;
    ref.tensors.q = qd.data();
    ref.tensors.k = kd.data();
    ref.tensors.v = vd.data();
    const auto refFwd = gradkit::golden::flashAttentionForward(p, ref.tensors);
    // The statistics see no fp8 cast (only P_d does): equal up to the summation order.
    for (size_t r = 0; r < fwd.softmaxMax.size(); ++r) {
      EXPECT_NEAR(fwd.softmaxMax[r], refFwd.softmaxMax[r], 1e-12);
      EXPECT_NEAR(fwd.softmaxSum[r], refFwd.softmaxSum[r], 1e-12 * refFwd.softmaxSum[r]);
    }
    const double tol = f == Fp8Format::E4M3FN ? 0.08 : 0.15;
    EXPECT_LT(relativeL2(fwd.out, refFwd.out), tol);
    ref.dy = dyd.data();
    ref.attentionIn = fwd.out.data();
    ref.softmaxMax = fwd.softmaxMax.data();
    ref.softmaxSum = fwd.softmaxSum.data();
    const auto want = gradkit::golden::flashAttentionBackward(p, ref);
    const double eDq = relativeL2(g.dq, want.dq), eDk = relativeL2(g.dk, want.dk), eDv = relativeL2(g.dv, want.dv);
    std::printf("fp8 golden vs fp64 golden (%s): out %.4f dq %.4f dk %.4f dv %.4f\n",
                f == Fp8Format::E4M3FN ? "e4m3fn" : "e5m2", relativeL2(fwd.out, refFwd.out), eDq, eDk, eDv);
    EXPECT_LT(eDq, tol);
    EXPECT_LT(eDk, tol);
    EXPECT_LT(eDv, tol);
    EXPECT_GT(eDv, 1e-4);  // the fp8 casts of P_d did happen
  }
}

}  // namespace
