// The fp64 MhcSinkhorn golden checked on its own: a hand answer, the doubly stochastic limit, and its backward
// (upstream's recurrence over the saved steps) against fourth-order central finite differences of its forward.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "golden/mhc_sinkhorn.h"

namespace gradkit::test {
namespace {

TEST(MhcSinkhornGolden, OneIterationByHand) {
  // Rows softmax to (1, 1, 2, 4) / 8; one column step: (p + eps) / (4 (p + eps) + eps).
  const double eps = 0.25;
  std::vector<double> x(16);
  const double logits[4] = {0.0, 0.0, std::log(2.0), std::log(4.0)};
  for (int i = 0; i < 16; ++i) x[i] = logits[i % 4];
  const auto steps = golden::mhcSinkhorn(x.data(), 1, 4, 1, eps);
  const double p[4] = {0.125, 0.125, 0.25, 0.5};
  for (int i = 0; i < 16; ++i) {
    EXPECT_NEAR(steps.output[i], (p[i % 4] + eps) / (4 * (p[i % 4] + eps) + eps), 1e-15);
    EXPECT_NEAR(steps.norm[i], p[i % 4], 1e-15);  // step 0: the softmax, without eps
  }
  EXPECT_NEAR(steps.sum[4 + 3], 4 * (0.5 + eps) + eps, 1e-15);  // step 1, column 3
}

TEST(MhcSinkhornGolden, ConvergesToADoublyStochasticMatrix) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> u(-2, 2);
  std::vector<double> x(2 * 64);
  for (double& v : x) v = u(rng);
  const auto steps = golden::mhcSinkhorn(x.data(), 2, 8, 100, 0.0);
  for (int t = 0; t < 2; ++t) {
    for (int i = 0; i < 8; ++i) {
      double row = 0, column = 0;
      for (int j = 0; j < 8; ++j) {
        row += steps.output[t * 64 + i * 8 + j];
        column += steps.output[t * 64 + j * 8 + i];
      }
      EXPECT_NEAR(row, 1.0, 1e-9);
      EXPECT_NEAR(column, 1.0, 1e-12);
    }
  }
}

TEST(MhcSinkhornGolden, BackwardMatchesFiniteDifferences) {
  double worst = 0;
  for (int64_t n : {4, 6, 8}) {
    for (int64_t iters : {1, 3, 20}) {
      const int64_t tokens = 2, count = tokens * n * n;
      std::mt19937 rng(static_cast<uint32_t>(n * 100 + iters));
      std::uniform_real_distribution<double> u(-1.5, 1.5);
      std::vector<double> x(count), g(count);
      for (double& v : x) v = u(rng);
      for (double& v : g) v = u(rng);
      const double eps = 1e-3;
      const auto loss = [&](const std::vector<double>& at) {
        const auto out = golden::mhcSinkhorn(at.data(), tokens, n, iters, eps).output;
        double total = 0;
        for (int64_t i = 0; i < count; ++i) total += g[i] * out[i];
        return total;
      };
      const auto steps = golden::mhcSinkhorn(x.data(), tokens, n, iters, eps);
      const std::vector<double> grad = golden::mhcSinkhornBackward(steps, g.data(), tokens, n, iters);
      const double h = 1e-3;
      for (int64_t i = 0; i < count; ++i) {
        std::vector<double> probe = x;
        const auto at = [&](double offset) {
          probe[i] = x[i] + offset;
          return loss(probe);
        };
        const double fd = (8 * (at(h) - at(-h)) - (at(2 * h) - at(-2 * h))) / (12 * h);
        const double error = std::fabs(fd - grad[i]);
        worst = std::max(worst, error);
        EXPECT_LT(error, 1e-9) << "n " << n << ", iters " << iters << ", element " << i;
      }
    }
  }
  std::printf("worst |finite difference - golden gradient|: %.3g\n", worst);
}

}  // namespace
}  // namespace gradkit::test
