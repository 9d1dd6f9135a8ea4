// The fp64 SparseLightningIndexerKLLossGrad golden checked on its own: a hand-worked example (one row, K = 2),
// and dq, dk, dw against fourth-order central finite differences of its loss (the selection held fixed) on a problem
// with two batches, the right-down causal mask with cmpRatio 2 and a residual, invalid slots (-1, an index past the
// visible keys, slots past the visible count) holding non-zero p, and sum p != 1.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "golden/sparse_lightning_indexer_kl_loss_grad.h"

namespace gradkit::test {
namespace {

TEST(KlLossGradGolden, WorkedExample) {
  // N1 = 2, D = 2, one row, K = 2: q-heads (1,0), (0,1); w = (1,2); keys (1,1), (2,-1); p = (0.5, 0.5).
  golden::KlProblem pr;
  pr.heads = 2, pr.topk = 2, pr.qTotal = 1, pr.kTotal = 2, pr.headDim = 2, pr.maskMode = 0;
  pr.batches = {{0, 1, 0, 2, 0}};
  const std::vector<double> q = {1, 0, 0, 1}, k = {1, 1, 2, -1}, w = {1, 2}, p = {0.5, 0.5};
  const std::vector<int32_t> idx = {0, 1};
  const auto g = golden::klLossGrad(pr, q.data(), k.data(), w.data(), idx.data(), p.data());
  EXPECT_NEAR(golden::klLoss(pr, q.data(), k.data(), w.data(), idx.data(), p.data()), 0.1201145, 1e-7);
  const double d = 0.2310586;
  EXPECT_NEAR(g.softmaxOut[0], 0.7310586, 1e-7);
  EXPECT_NEAR(g.softmaxOut[1], 0.2689414, 1e-7);
  const std::vector<double> dw = {-d, d}, dq = {-d, 2 * d, 2 * d, 2 * d}, dk = {d, 2 * d, -d, 0};
  for (size_t i = 0; i < 2; ++i) EXPECT_NEAR(g.dw[i], dw[i], 1e-7) << i;
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(g.dq[i], dq[i], 1e-7) << i;
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(g.dk[i], dk[i], 1e-7) << i;
}

TEST(KlLossGradGolden, VisibleKeys) {
  // LightningIndexerV2's worked example (docs/lightning_indexer_v2.md): cr 4, Sk 2, res 1, Sq 3 -> positions 6, 7, 8
  // see 1, 2, 2 keys; cr 1 is ordinary right-down causal.
  golden::KlProblem pr;
  pr.cmpRatio = 4;
  const golden::KlBatch b{0, 3, 0, 2, 1};
  EXPECT_EQ(golden::klVisibleKeys(pr, b, 0), 1);
  EXPECT_EQ(golden::klVisibleKeys(pr, b, 1), 2);
  EXPECT_EQ(golden::klVisibleKeys(pr, b, 2), 2);
  pr.cmpRatio = 1;
  const golden::KlBatch c{0, 16, 0, 4, 0};  // the upstream example: rows 0-11 see nothing, row 12 one key
  EXPECT_EQ(golden::klVisibleKeys(pr, c, 11), 0);
  EXPECT_EQ(golden::klVisibleKeys(pr, c, 12), 1);
  EXPECT_EQ(golden::klVisibleKeys(pr, c, 15), 4);
  pr.maskMode = 0;
  EXPECT_EQ(golden::klVisibleKeys(pr, c, 0), 4);
}

TEST(KlLossGradGolden, GradientMatchesFiniteDifferences) {
  golden::KlProblem pr;
  pr.heads = 3, pr.topk = 5, pr.headDim = 4, pr.maskMode = 3, pr.cmpRatio = 2;
  // Batch 0: 4 rows, 5 keys, residual 1 -> visible 4, 4, 5, 5; batch 1: 3 rows, 2 keys -> visible 1, 1, 2.
  pr.batches = {{0, 4, 0, 5, 1}, {4, 3, 5, 2, 0}};
  pr.qTotal = 8, pr.kTotal = 8;  // one idle query row (7) and key row (7)
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1), pos(0.05, 1);
  const auto fill = [&](size_t count, auto& dist) {
    std::vector<double> v(count);
    for (double& e : v) e = dist(rng);
    return v;
  };
  std::vector<double> q = fill(8 * 3 * 4, u), k = fill(8 * 4, u), w = fill(8 * 3, u), p = fill(8 * 5, pos);
  const std::vector<int32_t> idx = {3, 0,  -1, 2,  1,   // visible 4: slot 4 is past the count (invalid)
                                    1, 3,  9,  0,  2,   // 9 >= 4 invalid
                                    4, 4,  0,  2,  -1,  // a repeated key: two slots
                                    2, 1,  0,  3,  4,   //
                                    0, 1,  0,  0,  0,   // visible 1: slot 1 past the count
                                    0, -1, 1,  1,  1,   //
                                    1, 0,  -1, -1, 1,   // visible 2
                                    0, 0,  0,  0,  0};  // idle row
  const auto g = golden::klLossGrad(pr, q.data(), k.data(), w.data(), idx.data(), p.data());
  const auto loss = [&] { return golden::klLoss(pr, q.data(), k.data(), w.data(), idx.data(), p.data()); };
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
      EXPECT_LT(error, 1e-8) << name << "[" << i << "] fd " << fd << " golden " << grad[i];
    }
  };
  check(q, g.dq, "dq");
  check(k, g.dk, "dk");
  check(w, g.dw, "dw");
  // The idle rows and keys, and key 7 of batch 1 (never selected), have zero gradients; y sums to 1 per used row.
  for (int64_t e = 0; e < 12; ++e) EXPECT_EQ(g.dq[static_cast<size_t>(7 * 12 + e)], 0.0);
  for (int64_t e = 0; e < 4; ++e) EXPECT_EQ(g.dk[static_cast<size_t>(7 * 4 + e)], 0.0);
  for (int64_t t = 0; t < 7; ++t) {
    double sum = 0;
    for (int64_t j = 0; j < 5; ++j) sum += g.softmaxOut[static_cast<size_t>(t * 5 + j)];
    EXPECT_NEAR(sum, 1.0, 1e-12) << t;
  }
  EXPECT_EQ(g.softmaxOut[4], 0.0);  // row 0 slot 4: past the visible count
  EXPECT_EQ(g.softmaxOut[2], 0.0);  // row 0 slot 2: -1
  EXPECT_EQ(g.softmaxOut[7], 0.0);  // row 1 slot 2: index 9
  EXPECT_GT(worst, 0.0);            // the comparison ran
}

}  // namespace
}  // namespace gradkit::test
