// The mHC golden (golden/mhc_pre.h) proven independently of any kernel: its fp64 backward against central finite
// differences of its fp64 forward (all five gradients, N = 4, 6, 8, with and without gamma, the N! form), hand-computed
// forward and backward values (alpha of 3 and 2), the float instantiation against the double one, the size of the
// HF32 effect, and golden::roundToHf32 against known values and the library's own core/hf32.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include "core/hf32.h"
#include "golden/mhc_pre.h"

namespace {

using gradkit::golden::MhcPreBackwardInputs;
using gradkit::golden::MhcPreBackwardOutputs;
using gradkit::golden::MhcPreInputs;
using gradkit::golden::MhcPreOutputs;
using gradkit::golden::MhcSizes;

// ---------------------------------------------------------------------------------------------------------------
// A problem: the forward's inputs plus the upstream gradients of its three outputs. Values are fp32-representable so
// that the float and double instantiations see the same inputs.
struct Problem {
  MhcSizes sizes;
  int alphaLength = 3;
  std::vector<double> x, phi, alpha, bias, gamma;  // gamma empty: none
  double normEps = 1e-2;
  double hcEps = 1e-6;
  std::vector<double> gradHIn, gradHPost, gradHRes;
  int64_t residual() const { return sizes.fusion - 2 * sizes.streams; }
};

std::vector<double> randomValues(std::mt19937& rng, int64_t count, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> out(static_cast<size_t>(count));
  for (double& v : out) v = static_cast<float>(dist(rng));
  return out;
}

Problem randomProblem(int64_t tokens, int64_t streams, int64_t hidden, int64_t residual, bool withGamma,
                      uint32_t seed) {
  std::mt19937 rng(seed);
  Problem p;
  p.sizes = {tokens, streams, hidden, 2 * streams + residual};
  const int64_t K = p.sizes.width(), F = p.sizes.fusion;
  p.x = randomValues(rng, tokens * K, -1, 1);
  // phi scaled by 1/sqrt(K) keeps the pre-activations O(1), away from the sigmoid's flat tails.
  const double scale = 1 / std::sqrt(static_cast<double>(K));
  p.phi = randomValues(rng, F * K, -2 * scale, 2 * scale);
  p.alpha = randomValues(rng, 3, 0.5, 1.5);
  p.bias = randomValues(rng, F, -0.5, 0.5);
  if (withGamma) p.gamma = randomValues(rng, K, 0.5, 1.5);
  p.gradHIn = randomValues(rng, tokens * hidden, -1, 1);
  p.gradHPost = randomValues(rng, tokens * streams, -1, 1);
  p.gradHRes = randomValues(rng, tokens * residual, -1, 1);
  return p;
}

template <class Real>
std::vector<Real> cast(const std::vector<double>& v) {
  return std::vector<Real>(v.begin(), v.end());
}

// The problem's tensors in the arithmetic type Real, kept alive for the input structs that point into them.
template <class Real>
struct Typed {
  std::vector<Real> x, phi, alpha, bias, gamma, gradHIn, gradHPost, gradHRes;
  Real normEps, hcEps;
  explicit Typed(const Problem& p)
      : x(cast<Real>(p.x)),
        phi(cast<Real>(p.phi)),
        alpha(cast<Real>(p.alpha)),
        bias(cast<Real>(p.bias)),
        gamma(cast<Real>(p.gamma)),
        gradHIn(cast<Real>(p.gradHIn)),
        gradHPost(cast<Real>(p.gradHPost)),
        gradHRes(cast<Real>(p.gradHRes)),
        normEps(static_cast<Real>(p.normEps)),
        hcEps(static_cast<Real>(p.hcEps)) {}
};

template <class Real>
MhcPreInputs<Real> forwardInputs(const Problem& p, const Typed<Real>& v, bool hf32 = false) {
  MhcPreInputs<Real> in;
  in.sizes = p.sizes;
  in.x = v.x.data();
  in.phi = v.phi.data();
  in.alpha = v.alpha.data();
  in.alphaLength = p.alphaLength;
  in.bias = v.bias.data();
  in.gamma = v.gamma.empty() ? nullptr : v.gamma.data();
  in.normEps = v.normEps;
  in.hcEps = v.hcEps;
  in.hf32 = hf32;
  return in;
}

template <class Real>
MhcPreBackwardInputs<Real> backwardInputs(const Problem& p, const Typed<Real>& v, const MhcPreOutputs<Real>& fwd,
                                          bool hf32 = false) {
  MhcPreBackwardInputs<Real> in;
  in.sizes = p.sizes;
  in.x = v.x.data();
  in.phi = v.phi.data();
  in.alpha = v.alpha.data();
  in.gradHIn = v.gradHIn.data();
  in.gradHPost = v.gradHPost.data();
  in.gradHRes = v.gradHRes.data();
  in.invRms = fwd.invRms.data();
  in.hMix = fwd.hMix.data();
  in.hPre = fwd.hPre.data();
  in.hPost = fwd.hPost.data();
  in.gamma = v.gamma.empty() ? nullptr : v.gamma.data();
  in.hcEps = v.hcEps;
  in.hf32 = hf32;
  return in;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0;
  for (size_t i = 0; i < a.size(); ++i) sum += a[i] * b[i];
  return sum;
}

// L = sum(gradHIn * hIn) + sum(gradHPost * hPost) + sum(gradHRes * hRes) of the fp64 forward: its gradient w.r.t.
// every input is exactly what the backward computes from those three upstream gradients.
double loss(const Problem& p) {
  const Typed<double> v(p);
  const MhcPreOutputs<double> out = gradkit::golden::mhcPre(forwardInputs(p, v));
  return dot(p.gradHIn, out.hIn) + dot(p.gradHPost, out.hPost) + dot(p.gradHRes, out.hRes);
}

double maxAbs(const std::vector<double>& v) {
  double m = 0;
  for (double e : v) m = std::max(m, std::abs(e));
  return m;
}

// Checks analytic[i] against the derivative of the loss w.r.t. (*parameter)[i], for every i, by the five-point
// central difference (8(L(+h) - L(-h)) - (L(+2h) - L(-2h))) / 12h. Its truncation error is h^4 L^(5) / 30 and its
// rounding error about 2 eps |L| / h; with h = 1e-3 both stay near 1e-12 for these O(1) problems, six orders of
// magnitude below the gradients. So a relative tolerance of 1e-7 (of the element, floored at 1e-3 of the largest
// element so that near-zero entries are judged on the gradient's own scale) is tight: a wrong term, factor or sign
// in any gradient is far outside it. The largest error seen is reported in `worst`.
void expectFiniteDifferences(Problem& p, std::vector<double>* parameter, const std::vector<double>& analytic,
                             const char* name, double* worst) {
  ASSERT_EQ(parameter->size(), analytic.size()) << name;
  constexpr double kStep = 1e-3;
  constexpr double kRelative = 1e-7;
  const double floor = 1e-3 * maxAbs(analytic);
  ASSERT_GT(floor, 0) << name << ": an all-zero gradient proves nothing";
  for (size_t i = 0; i < parameter->size(); ++i) {
    const double saved = (*parameter)[i];
    auto at = [&](double offset) {
      (*parameter)[i] = saved + offset;
      const double value = loss(p);
      (*parameter)[i] = saved;
      return value;
    };
    const double near = at(kStep) - at(-kStep);
    const double far = at(2 * kStep) - at(-2 * kStep);
    const double numeric = (8 * near - far) / (12 * kStep);
    const double scale = std::max(std::abs(analytic[i]), floor);
    const double error = std::abs(numeric - analytic[i]) / scale;
    *worst = std::max(*worst, error);
    ASSERT_LE(error, kRelative) << name << "[" << i << "]: analytic " << analytic[i] << ", numeric " << numeric;
  }
}

void checkAllGradients(int64_t tokens, int64_t streams, int64_t hidden, int64_t residual, bool withGamma,
                       uint32_t seed) {
  SCOPED_TRACE(testing::Message() << "T=" << tokens << " N=" << streams << " D=" << hidden << " R=" << residual
                                  << (withGamma ? " gamma" : " no gamma"));
  Problem p = randomProblem(tokens, streams, hidden, residual, withGamma, seed);
  const Typed<double> v(p);
  const MhcPreOutputs<double> fwd = gradkit::golden::mhcPre(forwardInputs(p, v));
  MhcPreBackwardInputs<double> bin = backwardInputs(p, v, fwd);
  const std::vector<double> zeros(p.x.size(), 0.0);
  bin.gradXPost = zeros.data();
  const MhcPreBackwardOutputs<double> grads = gradkit::golden::mhcPreBackward(bin);
  ASSERT_EQ(grads.gradGamma.size(), withGamma ? p.gamma.size() : 0u);

  double worst = 0;
  expectFiniteDifferences(p, &p.x, grads.gradX, "gradX", &worst);
  expectFiniteDifferences(p, &p.phi, grads.gradPhi, "gradPhi", &worst);
  expectFiniteDifferences(p, &p.alpha, grads.gradAlpha, "gradAlpha", &worst);
  expectFiniteDifferences(p, &p.bias, grads.gradBias, "gradBias", &worst);
  if (withGamma) expectFiniteDifferences(p, &p.gamma, grads.gradGamma, "gradGamma", &worst);
  testing::Test::RecordProperty("worst_relative_error", testing::PrintToString(worst));
}

TEST(MhcGolden, GradientsMatchFiniteDifferencesN4) {
  checkAllGradients(3, 4, 3, 16, true, 11);
  checkAllGradients(3, 4, 3, 16, false, 12);
}

TEST(MhcGolden, GradientsMatchFiniteDifferencesN6) {
  checkAllGradients(4, 6, 5, 36, true, 21);
  checkAllGradients(4, 6, 5, 36, false, 22);
}

TEST(MhcGolden, GradientsMatchFiniteDifferencesN8) {
  checkAllGradients(4, 8, 5, 64, true, 31);
  checkAllGradients(3, 8, 6, 64, false, 32);
}

TEST(MhcGolden, GradientsMatchFiniteDifferencesFactorialResidual) {
  checkAllGradients(4, 4, 4, 24, true, 41);  // F = 24 + 8 = 32
}

// gradXPost is added last and exactly: with it, gradX is the sum without it plus gradXPost, bit for bit; zeros and
// null agree; nothing else changes.
template <class Real>
void checkGradXPostAddedExactly() {
  const Problem p = randomProblem(3, 4, 5, 16, true, 51);
  const Typed<Real> v(p);
  const MhcPreOutputs<Real> fwd = gradkit::golden::mhcPre(forwardInputs(p, v));
  MhcPreBackwardInputs<Real> bin = backwardInputs(p, v, fwd);
  const MhcPreBackwardOutputs<Real> without = gradkit::golden::mhcPreBackward(bin);
  std::mt19937 rng(52);
  const std::vector<Real> post = cast<Real>(randomValues(rng, static_cast<int64_t>(p.x.size()), -3, 3));
  bin.gradXPost = post.data();
  const MhcPreBackwardOutputs<Real> with = gradkit::golden::mhcPreBackward(bin);
  const std::vector<Real> zeros(p.x.size(), Real(0));
  bin.gradXPost = zeros.data();
  const MhcPreBackwardOutputs<Real> withZeros = gradkit::golden::mhcPreBackward(bin);
  ASSERT_EQ(with.gradX.size(), post.size());
  for (size_t i = 0; i < post.size(); ++i) {
    const Real expected = without.gradX[i] + post[i];
    EXPECT_EQ(with.gradX[i], expected) << i;
    EXPECT_EQ(withZeros.gradX[i], without.gradX[i]) << i;
  }
  EXPECT_EQ(with.gradPhi, without.gradPhi);
  EXPECT_EQ(with.gradAlpha, without.gradAlpha);
  EXPECT_EQ(with.gradBias, without.gradBias);
  EXPECT_EQ(with.gradGamma, without.gradGamma);
}

TEST(MhcGolden, GradXPostIsAddedExactly) {
  checkGradXPostAddedExactly<double>();
  checkGradXPostAddedExactly<float>();
}

// ---------------------------------------------------------------------------------------------------------------
// Known values, worked out by hand: N = 1, D = 2 (K = 2), hcEps = 2^-10, normEps = 3.
//   token 0: x = [1, 1]: mean square 1, + 3 = 4, invRms = 1/2.
//   token 1: x = [1, 5]: mean square 13, + 3 = 16, invRms = 1/4.
//   gamma = [2, 0.5]: xg = [2, 0.5] and [2, 2.5].
//   phi rows: pre [1, 2], post [0.5, -4], res [3, 2] -> hMix = [3, -1, 7] and [7, -9, 11].
//   alpha = [2, 4, 0.5], bias = [-3, 2, 0.25]; w = hMix * invRms = [1.5, -0.5, 3.5] and [1.75, -2.25, 2.75].
//   z = w * alpha + bias: token 0 [0, 0, 2]; token 1 [0.5, -7, 1.625].
//   hPre = sigmoid(zPre) + 2^-10; hPost = 2 sigmoid(zPost) (+ 2^-10 for alpha of 2); hRes = zRes; hIn = hPre * x.
constexpr double kHcEps = 1.0 / 1024;

Problem handProblem(int alphaLength) {
  Problem p;
  p.alphaLength = alphaLength;
  p.sizes = {2, 1, 2, alphaLength == 3 ? 3 : 2};
  p.x = {1, 1, 1, 5};
  p.gamma = {2, 0.5};
  p.phi = {1, 2, 0.5, -4, 3, 2};
  p.alpha = {2, 4, 0.5};
  p.bias = {-3, 2, 0.25};
  if (alphaLength == 2) {
    p.phi.resize(4);
    p.alpha.resize(2);
    p.bias.resize(2);
  }
  p.normEps = 3;
  p.hcEps = kHcEps;
  return p;
}

double sigmoidOf(double z) { return 1 / (1 + std::exp(-z)); }

template <class Real>
void checkHandForward(int alphaLength) {
  SCOPED_TRACE(testing::Message() << "alpha of " << alphaLength);
  const Problem p = handProblem(alphaLength);
  const Typed<Real> v(p);
  const MhcPreOutputs<Real> out = gradkit::golden::mhcPre(forwardInputs(p, v));
  const double postEps = alphaLength == 3 ? 0 : kHcEps;
  EXPECT_EQ(out.invRms, (std::vector<Real>{0.5, 0.25}));
  if (alphaLength == 3) {
    EXPECT_EQ(out.hMix, (std::vector<Real>{3, -1, 7, 7, -9, 11}));
    EXPECT_EQ(out.hRes, (std::vector<Real>{2, 1.625}));
  } else {
    EXPECT_EQ(out.hMix, (std::vector<Real>{3, -1, 7, -9}));
    EXPECT_TRUE(out.hRes.empty());
  }
  // Token 0 is exact (sigmoid(0) = 1/2); token 1 goes through exp, so allow a few ulps of Real.
  const double ulps = 4 * std::numeric_limits<Real>::epsilon();
  const double hPre1 = sigmoidOf(0.5) + kHcEps;
  const double hPost1 = 2 * sigmoidOf(-7) + postEps;
  ASSERT_EQ(out.hPre.size(), 2u);
  EXPECT_EQ(out.hPre[0], Real(0.5 + kHcEps));
  EXPECT_NEAR(out.hPre[1], hPre1, ulps * hPre1);
  ASSERT_EQ(out.hPost.size(), 2u);
  EXPECT_EQ(out.hPost[0], Real(1 + postEps));
  EXPECT_NEAR(out.hPost[1], hPost1, ulps * hPost1);
  ASSERT_EQ(out.hIn.size(), 4u);
  EXPECT_EQ(out.hIn[0], Real(0.5 + kHcEps));
  EXPECT_EQ(out.hIn[1], Real(0.5 + kHcEps));
  EXPECT_NEAR(out.hIn[2], hPre1, ulps * hPre1);
  EXPECT_NEAR(out.hIn[3], 5 * hPre1, 5 * ulps * hPre1);
}

TEST(MhcGolden, ForwardKnownValues) {
  checkHandForward<double>(3);
  checkHandForward<double>(2);
  checkHandForward<float>(3);
  checkHandForward<float>(2);
}

// Backward on token 0 alone, with gradHIn = [1, 2], gradHPost = [3], gradHRes = [0.5]:
//   gPre = 1*1 + 2*1 = 3; s = hPre - hcEps = 1/2, s(1-s) = 1/4 -> dz0 = 0.75
//   dz1 = 3 * hPost (1 - hPost/2) = 3 * 1 * 0.5 = 1.5;  dz2 = 0.5         -> gradBias = [0.75, 1.5, 0.5]
//   gradAlpha = dz * w = [0.75*1.5, 1.5*-0.5, 0.5*3.5] = [1.125, -0.75, 1.75]
//   dw = dz * alpha = [1.5, 6, 0.25]; gR = dw . hMix = 4.5 - 6 + 1.75 = 0.25; dm = dw * invRms = [0.75, 3, 0.125]
//   gradPhi = dm^T xg (xg = [2, 0.5]) = [[1.5, 0.375], [6, 1.5], [0.25, 0.0625]]
//   dxg = dm . phi = [0.75 + 1.5 + 0.375, 1.5 - 12 + 0.25] = [2.625, -10.25]; gradGamma = x * dxg = dxg
//   gradX = gradHIn * hPre + x * (-gR invRms^3 / K) + gamma * dxg
//         = [0.5 + e, 1 + 2e] + [-1/64, -1/64] + [5.25, -5.125] = [5.734375 + e, -4.140625 + 2e], e = 2^-10
// Every value is a short dyadic, so float and double must both be exact.
template <class Real>
void checkHandBackward() {
  Problem p = handProblem(3);
  p.sizes.tokens = 1;
  p.x.resize(2);
  p.gradHIn = {1, 2};
  p.gradHPost = {3};
  p.gradHRes = {0.5};
  const Typed<Real> v(p);
  const MhcPreOutputs<Real> fwd = gradkit::golden::mhcPre(forwardInputs(p, v));
  const MhcPreBackwardOutputs<Real> g = gradkit::golden::mhcPreBackward(backwardInputs(p, v, fwd));
  EXPECT_EQ(g.gradBias, (std::vector<Real>{0.75, 1.5, 0.5}));
  EXPECT_EQ(g.gradAlpha, (std::vector<Real>{1.125, -0.75, 1.75}));
  EXPECT_EQ(g.gradPhi, (std::vector<Real>{1.5, 0.375, 6, 1.5, 0.25, 0.0625}));
  EXPECT_EQ(g.gradGamma, (std::vector<Real>{2.625, -10.25}));
  EXPECT_EQ(g.gradX, (std::vector<Real>{Real(5.734375 + kHcEps), Real(-4.140625 + 2 * kHcEps)}));
}

TEST(MhcGolden, BackwardKnownValues) {
  checkHandBackward<double>();
  checkHandBackward<float>();
}

TEST(MhcGolden, RejectsInconsistentSizes) {
  Problem p = handProblem(3);
  p.alphaLength = 2;  // F = 3 is not 2N
  const Typed<double> v(p);
  EXPECT_THROW(gradkit::golden::mhcPre(forwardInputs(p, v)), std::invalid_argument);
  Problem q = handProblem(2);
  q.alphaLength = 3;  // F = 2 leaves no residual rows
  const Typed<double> w(q);
  EXPECT_THROW(gradkit::golden::mhcPre(forwardInputs(q, w)), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------------------------
// The float instantiation is the naive fp32 computation: close to the double one (sums of at most K = 64 terms, so
// within ~1e-5 of each output's scale), and not the double one rounded (it really computes in fp32).
template <class Vector>
double maxDifference(const Vector& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < b.size(); ++i) m = std::max(m, std::abs(static_cast<double>(a[i]) - b[i]));
  return m;
}

template <class Vector>
int countNotRounded(const Vector& a, const std::vector<double>& b) {
  int count = 0;
  for (size_t i = 0; i < b.size(); ++i) count += a[i] != static_cast<float>(b[i]);
  return count;
}

TEST(MhcGolden, FloatAgreesWithDoubleWithinFp32Rounding) {
  const Problem p = randomProblem(6, 4, 16, 16, true, 61);
  const Typed<double> vd(p);
  const Typed<float> vf(p);
  const MhcPreOutputs<double> fd = gradkit::golden::mhcPre(forwardInputs(p, vd));
  const MhcPreOutputs<float> ff = gradkit::golden::mhcPre(forwardInputs(p, vf));
  const MhcPreBackwardOutputs<double> bd = gradkit::golden::mhcPreBackward(backwardInputs(p, vd, fd));
  const MhcPreBackwardOutputs<float> bf = gradkit::golden::mhcPreBackward(backwardInputs(p, vf, ff));
  constexpr double kRelative = 1e-5;  // about 2^-24 * 64 terms * cancellation head-room
  auto expectClose = [&](const auto& f, const std::vector<double>& d, const char* name) {
    ASSERT_EQ(f.size(), d.size()) << name;
    EXPECT_LE(maxDifference(f, d), kRelative * maxAbs(d)) << name;
  };
  expectClose(ff.hIn, fd.hIn, "hIn");
  expectClose(ff.hPost, fd.hPost, "hPost");
  expectClose(ff.hRes, fd.hRes, "hRes");
  expectClose(ff.invRms, fd.invRms, "invRms");
  expectClose(ff.hMix, fd.hMix, "hMix");
  expectClose(ff.hPre, fd.hPre, "hPre");
  expectClose(bf.gradX, bd.gradX, "gradX");
  expectClose(bf.gradPhi, bd.gradPhi, "gradPhi");
  expectClose(bf.gradAlpha, bd.gradAlpha, "gradAlpha");
  expectClose(bf.gradBias, bd.gradBias, "gradBias");
  expectClose(bf.gradGamma, bd.gradGamma, "gradGamma");
}

// Without gamma the matmul operands are the same floats in both instantiations and every product is exact in double,
// so the double hMix rounded once is the correctly rounded sum; the float one, summed in fp32, differs somewhere.
TEST(MhcGolden, FloatInstantiationSumsInFp32) {
  const Problem p = randomProblem(6, 4, 16, 16, false, 62);
  const Typed<double> vd(p);
  const Typed<float> vf(p);
  const MhcPreOutputs<double> fd = gradkit::golden::mhcPre(forwardInputs(p, vd));
  const MhcPreOutputs<float> ff = gradkit::golden::mhcPre(forwardInputs(p, vf));
  EXPECT_GT(countNotRounded(ff.hMix, fd.hMix), 0);
  EXPECT_LE(maxDifference(ff.hMix, fd.hMix), 1e-5 * maxAbs(fd.hMix));
}

// ---------------------------------------------------------------------------------------------------------------
// HF32: each operand moves by at most 2^-12 of itself (plus the fp32 narrowing, 2^-24), so each product by at most
// 2^-11 (1 + 2^-10) of itself. Forward: |hMix_hf32 - hMix| <= that bound times sum_k |xg_k phi_fk|, and the largest
// change is well above fp32 noise (> 2^-18 of that sum). Only the matmul changes: invRms is identical.
constexpr double kHf32ProductBound = 1.0 / 2048 * (1 + 1.0 / 1024);

TEST(MhcGolden, Hf32ForwardChangesHMixByTheExpectedMagnitude) {
  const Problem p = randomProblem(3, 4, 8, 16, true, 71);
  const Typed<double> v(p);
  const MhcPreOutputs<double> plain = gradkit::golden::mhcPre(forwardInputs(p, v));
  const MhcPreOutputs<double> hf = gradkit::golden::mhcPre(forwardInputs(p, v, true));
  EXPECT_EQ(hf.invRms, plain.invRms);
  const int64_t T = p.sizes.tokens, F = p.sizes.fusion, K = p.sizes.width();
  double largest = 0;
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t f = 0; f < F; ++f) {
      double magnitude = 0;
      for (int64_t k = 0; k < K; ++k) magnitude += std::abs(p.x[t * K + k] * p.gamma[k] * p.phi[f * K + k]);
      const double change = std::abs(hf.hMix[t * F + f] - plain.hMix[t * F + f]);
      EXPECT_LE(change, kHf32ProductBound * magnitude + 1e-15 * magnitude) << t << "," << f;
      largest = std::max(largest, change / magnitude);
    }
  }
  EXPECT_GT(largest, std::ldexp(1.0, -18));
}

// Backward on one token, where gradPhi = dm^T xg is one product per element: HF32 moves each element by at most
// 2^-11 (1 + 2^-10) of itself, and by more than 2^-13 somewhere. gradX and gradGamma change only through
// dxg = dm . phi, bounded the same way per term; gradBias and gradAlpha do not change at all.
TEST(MhcGolden, Hf32BackwardChangesTheMatmulsByTheExpectedMagnitude) {
  const Problem p = randomProblem(1, 4, 8, 16, true, 81);
  const Typed<double> v(p);
  const MhcPreOutputs<double> fwd = gradkit::golden::mhcPre(forwardInputs(p, v));
  const MhcPreBackwardOutputs<double> plain = gradkit::golden::mhcPreBackward(backwardInputs(p, v, fwd));
  const MhcPreBackwardOutputs<double> hf = gradkit::golden::mhcPreBackward(backwardInputs(p, v, fwd, true));
  EXPECT_EQ(hf.gradBias, plain.gradBias);
  EXPECT_EQ(hf.gradAlpha, plain.gradAlpha);
  const int64_t N = p.sizes.streams, F = p.sizes.fusion, K = p.sizes.width();
  double largest = 0;
  for (size_t i = 0; i < plain.gradPhi.size(); ++i) {
    const double change = std::abs(hf.gradPhi[i] - plain.gradPhi[i]);
    EXPECT_LE(change, kHf32ProductBound * std::abs(plain.gradPhi[i])) << i;
    largest = std::max(largest, change / std::abs(plain.gradPhi[i]));
  }
  EXPECT_GT(largest, std::ldexp(1.0, -13));
  // dm from the one token's dz (= gradBias): dz * alpha of its block * invRms.
  std::vector<double> dm(static_cast<size_t>(F));
  for (int64_t f = 0; f < F; ++f) dm[f] = plain.gradBias[f] * p.alpha[f < N ? 0 : f < 2 * N ? 1 : 2] * fwd.invRms[0];
  for (int64_t k = 0; k < K; ++k) {
    double magnitude = 0;
    for (int64_t f = 0; f < F; ++f) magnitude += std::abs(dm[f] * p.phi[f * K + k]);
    const double bound = (kHf32ProductBound + 1e-14) * magnitude;
    EXPECT_LE(std::abs(hf.gradX[k] - plain.gradX[k]), p.gamma[k] * bound + 1e-14 * std::abs(plain.gradX[k])) << k;
    EXPECT_LE(std::abs(hf.gradGamma[k] - plain.gradGamma[k]), std::abs(p.x[k]) * bound) << k;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// roundToHf32: 11 explicit mantissa bits, ties away from zero.
float fromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint32_t toBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

TEST(MhcGolden, RoundToHf32KnownValues) {
  using gradkit::golden::roundToHf32;
  const float one = 1.0f;
  EXPECT_EQ(roundToHf32(one), one);
  EXPECT_EQ(roundToHf32(1 + std::ldexp(1.0f, -12)), 1 + std::ldexp(1.0f, -11));  // tie, away from zero
  EXPECT_EQ(roundToHf32(1 + std::ldexp(1.0f, -13)), one);                        // below the half
  EXPECT_EQ(roundToHf32(1 + std::ldexp(1.0f, -12) - std::ldexp(1.0f, -23)), one);
  EXPECT_EQ(roundToHf32(1 + 3 * std::ldexp(1.0f, -12)), 1 + std::ldexp(1.0f, -10));  // tie from an odd last bit: up
  EXPECT_EQ(roundToHf32(-(1 + std::ldexp(1.0f, -12))), -(1 + std::ldexp(1.0f, -11)));
  EXPECT_EQ(roundToHf32(-(1 + std::ldexp(1.0f, -13))), -one);
  EXPECT_EQ(roundToHf32(2 - std::ldexp(1.0f, -23)), 2.0f);                       // carry into the exponent
  EXPECT_EQ(roundToHf32(1 + std::ldexp(1.0f, -11)), 1 + std::ldexp(1.0f, -11));  // already HF32
  EXPECT_EQ(roundToHf32(FLT_MAX), std::numeric_limits<float>::infinity());
  EXPECT_EQ(roundToHf32(-FLT_MAX), -std::numeric_limits<float>::infinity());
  EXPECT_EQ(roundToHf32(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(roundToHf32(-std::numeric_limits<float>::infinity()), -std::numeric_limits<float>::infinity());
  const float nan = fromBits(0x7FC01234u);  // a payload that rounding would disturb
  EXPECT_EQ(toBits(roundToHf32(nan)), 0x7FC01234u);
  EXPECT_EQ(toBits(roundToHf32(-0.0f)), 0x80000000u);
  EXPECT_EQ(toBits(roundToHf32(fromBits(0x7FFu))), 0u);       // subnormal below the half: +0
  EXPECT_EQ(toBits(roundToHf32(fromBits(0x800u))), 0x1000u);  // subnormal tie: away
  EXPECT_EQ(toBits(roundToHf32(fromBits(0x80000800u))), 0x80001000u);
  EXPECT_EQ(toBits(roundToHf32(fromBits(0x007FF800u))), 0x00800000u);  // largest subnormals round to FLT_MIN
}

TEST(MhcGolden, RoundToHf32MatchesTheLibrary) {
  int64_t checked = 0;
  auto same = [&](uint32_t bits) {
    const float value = fromBits(bits);
    ASSERT_EQ(toBits(gradkit::golden::roundToHf32(value)), toBits(gradkit::roundToHf32(value))) << std::hex << bits;
    ++checked;
  };
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFu; bits += 4099) same(static_cast<uint32_t>(bits));
  // Every low-13-bit pattern (all rounding cases) at both signs of zero, a normal, FLT_MAX and Inf/NaN exponents.
  for (uint32_t high : {0x00000000u, 0x3F800000u, 0x7F7FE000u, 0x7F800000u}) {
    for (uint32_t sign : {0u, 0x80000000u}) {
      for (uint32_t low = 0; low < 0x2000u; ++low) same(sign | high | low);
    }
  }
  EXPECT_GT(checked, 1000000);
}

}  // namespace
