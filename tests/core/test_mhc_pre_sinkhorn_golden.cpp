// The fp64 MhcPreSinkhorn golden checked on its own: the saved step 0 convention (softmax + eps and its row sums +
// eps) and its backward against fourth-order central finite differences of its forward for x, phi, alpha and bias.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "golden/mhc_pre_sinkhorn.h"

namespace gradkit::test {
namespace {

struct Problem {
  golden::MhcSizes sizes{3, 4, 4, 24};
  int64_t iters = 3;
  std::vector<double> x, phi, alpha, bias, gHIn, gHPost, gHRes;
  double normEps = 1e-6, hcEps = 1e-3;

  explicit Problem(int64_t itersToRun) : iters(itersToRun) {
    std::mt19937 rng(static_cast<uint32_t>(7 + itersToRun));
    std::uniform_real_distribution<double> u(-1, 1);
    const auto fill = [&](std::vector<double>& v, int64_t count, double scale) {
      v.resize(static_cast<size_t>(count));
      for (double& e : v) e = scale * u(rng);
    };
    const int64_t t = sizes.tokens, k = sizes.width(), f = sizes.fusion, n = sizes.streams;
    fill(x, t * k, 1.0);
    fill(phi, f * k, 0.5);
    fill(alpha, 3, 1.0);
    fill(bias, f, 0.3);
    fill(gHIn, t * sizes.hidden, 1.0);
    fill(gHPost, t * n, 1.0);
    fill(gHRes, t * n * n, 1.0);
  }

  golden::MhcPreInputs<double> inputs() const {
    golden::MhcPreInputs<double> in;
    in.sizes = sizes;
    in.x = x.data();
    in.phi = phi.data();
    in.alpha = alpha.data();
    in.bias = bias.data();
    in.normEps = normEps;
    in.hcEps = hcEps;
    return in;  // hf32 off: rounding is not differentiable
  }

  double loss() const {
    const auto out = golden::mhcPreSinkhorn(inputs(), iters);
    double total = 0;
    for (size_t i = 0; i < gHIn.size(); ++i) total += gHIn[i] * out.pre.hIn[i];
    for (size_t i = 0; i < gHPost.size(); ++i) total += gHPost[i] * out.pre.hPost[i];
    for (size_t i = 0; i < gHRes.size(); ++i) total += gHRes[i] * out.hRes[i];
    return total;
  }
};

TEST(MhcPreSinkhornGolden, StepZeroHoldsTheSoftmaxAndItsSumsWithEps) {
  const Problem p(2);
  const auto out = golden::mhcPreSinkhorn(p.inputs(), p.iters);
  const int64_t n = 4, tokens = 3;
  for (int64_t t = 0; t < tokens; ++t) {
    for (int64_t r = 0; r < n; ++r) {
      const double* logits = out.pre.hRes.data() + t * 16 + r * n;
      const double m = *std::max_element(logits, logits + n);
      double total = 0;
      for (int64_t c = 0; c < n; ++c) total += std::exp(logits[c] - m);
      EXPECT_NEAR(out.sum[t * n + r], total + p.hcEps, 1e-14);
      for (int64_t c = 0; c < n; ++c) {
        EXPECT_NEAR(out.norm[t * 16 + r * n + c], std::exp(logits[c] - m) / total + p.hcEps, 1e-15);
        // step 1 divides step 0 as saved by its column sums + eps
        double column = 0;
        for (int64_t j = 0; j < n; ++j) column += out.norm[t * 16 + j * n + c];
        EXPECT_NEAR(out.sum[(tokens + t) * n + c], column + p.hcEps, 1e-14);
        EXPECT_NEAR(out.norm[(tokens + t) * 16 + r * n + c], out.norm[t * 16 + r * n + c] / (column + p.hcEps), 1e-15);
      }
    }
  }
}

TEST(MhcPreSinkhornGolden, BackwardMatchesFiniteDifferences) {
  double worst = 0;
  for (int64_t iters : {1, 3, 20}) {
    Problem p(iters);
    const auto forward = golden::mhcPreSinkhorn(p.inputs(), p.iters);
    golden::MhcPreSinkhornBackwardInputs<double> in;
    in.sizes = p.sizes;
    in.iters = p.iters;
    in.x = p.x.data();
    in.phi = p.phi.data();
    in.alpha = p.alpha.data();
    in.bias = p.bias.data();
    in.gradHIn = p.gHIn.data();
    in.gradHPost = p.gHPost.data();
    in.gradHRes = p.gHRes.data();
    in.hPre = forward.pre.hPre.data();
    in.hMix = forward.pre.hMix.data();
    in.invRms = forward.pre.invRms.data();
    in.norm = forward.norm.data();
    in.sum = forward.sum.data();
    in.hcEps = p.hcEps;
    const auto grads = golden::mhcPreSinkhornBackward(in);
    const auto check = [&](std::vector<double>& values, const std::vector<double>& grad, const char* name) {
      const double h = 1e-4;
      for (size_t i = 0; i < values.size(); ++i) {
        const double saved = values[i];
        const auto at = [&](double offset) {
          values[i] = saved + offset;
          return p.loss();
        };
        const double fd = (8 * (at(h) - at(-h)) - (at(2 * h) - at(-2 * h))) / (12 * h);
        values[i] = saved;
        const double error = std::fabs(fd - grad[i]) / std::max(1.0, std::fabs(fd));
        worst = std::max(worst, error);
        EXPECT_LT(error, 1e-8) << name << " " << i << ", iters " << iters;
      }
    };
    check(p.x, grads.gradX, "x");
    check(p.phi, grads.gradPhi, "phi");
    check(p.alpha, grads.gradAlpha, "alpha");
    check(p.bias, grads.gradBias, "bias");
  }
  std::printf("MhcPreSinkhorn golden backward vs finite differences: worst relative error %.2e\n", worst);
}

}  // namespace
}  // namespace gradkit::test
