// The fp64 BlockAttentionResiduals golden checked on its own: a hand answer and its gradient against fourth-order
// central finite differences of its forward for all four inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "golden/block_attention_residuals.h"

namespace gradkit::test {
namespace {

TEST(BlockAttentionResidualsGolden, EqualScoresAverageTheValues) {
  // Zero score weights give every value the same score: hidden is the mean of the N + 1 values.
  const golden::BlockResidualSizes s{1, 2, 3};
  const std::vector<double> partial = {3, 6, 9}, blocks = {0, 3, 0, 6, 0, 3}, proj = {0, 0, 0}, norm = {1, 1, 1};
  const auto out = golden::blockAttentionResiduals(s, partial.data(), blocks.data(), proj.data(), norm.data(), 1e-6);
  EXPECT_NEAR(out.hidden[0], 3.0, 1e-15);
  EXPECT_NEAR(out.hidden[1], 3.0, 1e-15);
  EXPECT_NEAR(out.hidden[2], 4.0, 1e-15);
  for (double p : out.probs) EXPECT_NEAR(p, 1.0 / 3, 1e-15);
  EXPECT_NEAR(out.invNorm[2], 1 / std::sqrt((9.0 + 36 + 81) / 3 + 1e-6), 1e-15);  // the partial block comes last
}

TEST(BlockAttentionResidualsGolden, GradientMatchesFiniteDifferences) {
  const golden::BlockResidualSizes s{3, 4, 5};
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(-1, 1);
  const auto fill = [&](int64_t count) {
    std::vector<double> v(static_cast<size_t>(count));
    for (double& e : v) e = u(rng);
    return v;
  };
  std::vector<double> partial = fill(s.tokens * s.hidden), blocks = fill(s.tokens * s.blocks * s.hidden),
                      proj = fill(s.hidden), norm = fill(s.hidden), g = fill(s.tokens * s.hidden);
  const double eps = 1e-3;
  const auto loss = [&] {
    const auto out = golden::blockAttentionResiduals(s, partial.data(), blocks.data(), proj.data(), norm.data(), eps);
    double total = 0;
    for (size_t e = 0; e < g.size(); ++e) total += g[e] * out.hidden[e];
    return total;
  };
  const auto forward = golden::blockAttentionResiduals(s, partial.data(), blocks.data(), proj.data(), norm.data(), eps);
  const auto grads = golden::blockAttentionResidualsGrad(s, partial.data(), blocks.data(), proj.data(), norm.data(),
                                                         g.data(), forward.invNorm.data(), forward.probs.data());
  double worst = 0;
  const auto check = [&](std::vector<double>& values, const std::vector<double>& grad, const char* name) {
    const double h = 1e-4;
    for (size_t i = 0; i < values.size(); ++i) {
      const double saved = values[i];
      const auto at = [&](double offset) {
        values[i] = saved + offset;
        return loss();
      };
      const double fd = (8 * (at(h) - at(-h)) - (at(2 * h) - at(-2 * h))) / (12 * h);
      values[i] = saved;
      const double error = std::fabs(fd - grad[i]) / std::max(1.0, std::fabs(fd));
      worst = std::max(worst, error);
      EXPECT_LT(error, 1e-9) << name << " " << i;
    }
  };
  check(partial, grads.partialBlock, "partialBlock");
  check(blocks, grads.blockRes, "blockRes");
  check(proj, grads.projWeight, "projWeight");
  check(norm, grads.normWeight, "normWeight");
  std::printf("BlockAttentionResiduals golden gradient vs finite differences: worst relative error %.2e\n", worst);
}

}  // namespace
}  // namespace gradkit::test
