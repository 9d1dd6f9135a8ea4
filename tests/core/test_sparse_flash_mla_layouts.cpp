// The sparse flash MLA golden's storage addressing (golden/sparse_flash_mla_layouts.h) against the addressing its
// header states (docs/sparse_attention.md, "Layouts"): row maps of BSND / TND / PA_BBND written out by
// hand (seqUsed, a shuffled block table, a dim-0 stride, a PA side without seqUsed), the rejections, scatter-add, and
// one problem stored three ways (BSND, TND + PA_BBND) giving the same logical arrays and the same forward.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <vector>

#include "golden/sparse_flash_mla.h"
#include "golden/sparse_flash_mla_layouts.h"

namespace {

using gradkit::golden::SmlaLayout;
using gradkit::golden::SmlaLayoutRows;
using gradkit::golden::SmlaSide;
using Rows = std::vector<int64_t>;

SmlaSide bsnd(int64_t batch, int64_t tokens, std::vector<int32_t> seqUsed = {}) {
  SmlaSide s;
  s.layout = SmlaLayout::BSND, s.batch = batch, s.tokens = tokens, s.seqUsed = std::move(seqUsed);
  return s;
}

SmlaSide tnd(std::vector<int32_t> cu, int64_t tokens, std::vector<int32_t> seqUsed = {}) {
  SmlaSide s;
  s.layout = SmlaLayout::TND, s.cuSeqlens = std::move(cu), s.tokens = tokens, s.seqUsed = std::move(seqUsed);
  return s;
}

SmlaSide paged(int64_t blockSize, std::vector<int32_t> table, int64_t cols, std::vector<int32_t> seqUsed = {}) {
  SmlaSide s;
  s.layout = SmlaLayout::PA_BBND, s.tokens = blockSize, s.blockTable = std::move(table), s.blockTableCols = cols;
  s.seqUsed = std::move(seqUsed);
  return s;
}

TEST(SparseFlashMlaLayouts, RowMapsByHand) {
  using gradkit::golden::smlaRowMap;
  EXPECT_EQ(gradkit::golden::smlaLayoutOf("PA_BBND"), SmlaLayout::PA_BBND);
  EXPECT_EQ(gradkit::golden::smlaLayoutOf("TND"), SmlaLayout::TND);
  EXPECT_THROW(gradkit::golden::smlaLayoutOf("BNSD"), std::invalid_argument);
  EXPECT_EQ(smlaRowMap(bsnd(2, 4), 2), (Rows{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(smlaRowMap(bsnd(2, 4, {3, 0}), 2), (Rows{0, 1, 2}));
  EXPECT_EQ(smlaRowMap(bsnd(2, 4, {1, 2}), 2), (Rows{0, 4, 5}));
  EXPECT_EQ(gradkit::golden::smlaBatchCount(tnd({0, 3, 5}, 6)), 2);
  EXPECT_EQ(smlaRowMap(tnd({0, 3, 5}, 6), 2), (Rows{0, 1, 2, 3, 4}));
  EXPECT_EQ(smlaRowMap(tnd({0, 3, 5}, 6, {2, 2}), 2), (Rows{0, 1, 3, 4}));
  // PA_BBND, bs 2, 3 columns: batch 0 blocks 4, 1, 0; batch 1 blocks 2, 3, 5.
  SmlaSide pa = paged(2, {4, 1, 0, 2, 3, 5}, 3, {5, 3});
  EXPECT_EQ(smlaRowMap(pa, 2), (Rows{8, 9, 2, 3, 0, 4, 5, 6}));
  pa.blockStride = 3;  // a dim-0 stride of 3 rows (upstream accepts any dim-0 stride)
  EXPECT_EQ(smlaRowMap(pa, 2), (Rows{12, 13, 3, 4, 0, 6, 7, 9}));
  pa.seqUsed.clear();  // without seqUsed: the table's capacity cols * bs
  pa.blockStride = 0;
  EXPECT_EQ(gradkit::golden::smlaUsedLength(pa, 1), 6);
  EXPECT_EQ(smlaRowMap(pa, 2), (Rows{8, 9, 2, 3, 0, 1, 4, 5, 6, 7, 10, 11}));
}

TEST(SparseFlashMlaLayouts, Rejections) {
  using gradkit::golden::smlaRowMap;
  EXPECT_THROW(smlaRowMap(tnd({0, 3, 2}, 6), 2), std::invalid_argument);  // decreasing
  EXPECT_THROW(smlaRowMap(tnd({0, 3, 7}, 6), 2), std::invalid_argument);  // past T
  EXPECT_THROW(smlaRowMap(tnd({0, 3, 5}, 6, {4, 0}), 2), std::invalid_argument);
  EXPECT_THROW(smlaRowMap(bsnd(2, 4, {5, 0}), 2), std::invalid_argument);
  EXPECT_THROW(smlaRowMap(paged(2, {4, -1, 0, 2, 3, 5}, 3, {3, 1}), 2), std::invalid_argument);
  EXPECT_EQ(smlaRowMap(paged(2, {4, -1, 0, 2, 3, 5}, 3, {2, 1}), 2), (Rows{8, 9, 4}));  // unused -1 is fine
  EXPECT_THROW(gradkit::golden::smlaLayoutRows(bsnd(2, 3), bsnd(2, 3), nullptr, {1}), std::invalid_argument);
}

TEST(SparseFlashMlaLayouts, ScatterAddsSharedRows) {
  const std::vector<double> logical = {1, 10, 2, 20, 3, 30};
  EXPECT_EQ(gradkit::golden::smlaScatterRows(logical, {1, 1, 3}, 2, 4),
            (std::vector<double>{0, 0, 3, 30, 0, 0, 3, 30}));
  EXPECT_EQ(gradkit::golden::smlaGatherRows(logical.data(), {2, 0}, 2), (std::vector<double>{3, 30, 1, 10}));
  EXPECT_THROW(gradkit::golden::smlaScatterRows(logical, {1, 1, 4}, 2, 4), std::invalid_argument);
}

// One CSA problem (B 2, N1 2, D 2, q lengths 3 / 2, ori 5 / 4, cmp 2 / 1) stored as BSND everywhere, and as TND q
// with PA_BBND ori and cmp.
TEST(SparseFlashMlaLayouts, ThreeStoragesOneProblem) {
  const int64_t N = 2, D = 2, K = 2;
  std::mt19937 gen(3);
  std::uniform_real_distribution<double> u(-1, 1);
  // BSND: q [2, 3, 2, 2], ori [2, 5, 1, 2], cmp [2, 2, 1, 2], indices [2, 3, 1, 2]; seqUsed q {3, 2}, ori {5, 4}, cmp
  // {2, 1}. Padding positions hold garbage that must not be read.
  std::vector<double> q(2 * 3 * N * D), ori(2 * 5 * D), cmp(2 * 2 * D);
  for (std::vector<double>* v : {&q, &ori, &cmp})
    for (double& x : *v) x = u(gen);
  const std::vector<int32_t> indices = {1, 0, 0, -1, 1, 1, 0, 0, 0, -1, 7, 7};
  const SmlaSide qB = bsnd(2, 3, {3, 2}), oriB = bsnd(2, 5, {5, 4}), cmpB = bsnd(2, 2, {2, 1});
  // TND q: cu {0, 3, 5}, 6 rows (one padding row at the end). PA ori: bs 2, blocks b0 {3, 0, 4}, b1 {1, 5}; PA cmp:
  // bs 1, blocks b0 {2, 0}, b1 {1}. Filled position by position from the PA_BBND row formula.
  std::vector<double> qT(6 * N * D, 99.0), oriP(6 * 2 * D, 99.0), cmpP(3 * 1 * D, 99.0);
  std::vector<int32_t> indicesT(6 * K, 55);
  const int32_t cuQ[] = {0, 3}, s1[] = {3, 2}, s2[] = {5, 4}, c[] = {2, 1};
  const std::vector<int32_t> oriTable = {3, 0, 4, 1, 5, -1}, cmpTable = {2, 0, 1, -1};
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t i = 0; i < s1[b]; ++i) {
      for (int64_t e = 0; e < N * D; ++e) qT[(cuQ[b] + i) * N * D + e] = q[(b * 3 + i) * N * D + e];
      for (int64_t e = 0; e < K; ++e) indicesT[(cuQ[b] + i) * K + e] = indices[(b * 3 + i) * K + e];
    }
    for (int64_t j = 0; j < s2[b]; ++j)
      for (int64_t d = 0; d < D; ++d) oriP[(oriTable[b * 3 + j / 2] * 2 + j % 2) * D + d] = ori[(b * 5 + j) * D + d];
    for (int64_t j = 0; j < c[b]; ++j)
      for (int64_t d = 0; d < D; ++d) cmpP[cmpTable[b * 2 + j] * D + d] = cmp[(b * 2 + j) * D + d];
  }
  SmlaSide qT2 = tnd({0, 3, 5}, 6), oriPa = paged(2, oriTable, 3, {5, 4}), cmpPa = paged(1, cmpTable, 2, {2, 1});
  oriPa.batch = cmpPa.batch = 2;
  const SmlaLayoutRows a = gradkit::golden::smlaLayoutRows(qB, oriB, &cmpB, {1, 0});
  const SmlaLayoutRows b = gradkit::golden::smlaLayoutRows(qT2, oriPa, &cmpPa, {1, 0});
  ASSERT_EQ(a.batches.size(), 2u);
  ASSERT_EQ(b.batches.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_EQ(a.batches[k].s1, s1[k]);
    EXPECT_EQ(b.batches[k].s1, s1[k]);
    EXPECT_EQ(a.batches[k].s2, s2[k]);
    EXPECT_EQ(b.batches[k].s2, s2[k]);
    EXPECT_EQ(a.batches[k].cmp, c[k]);
    EXPECT_EQ(b.batches[k].cmp, c[k]);
    EXPECT_EQ(b.batches[k].residual, k == 0 ? 1 : 0);
  }
  using gradkit::golden::smlaGatherRows;
  EXPECT_EQ(smlaGatherRows(q.data(), a.q, N * D), smlaGatherRows(qT.data(), b.q, N * D));
  EXPECT_EQ(smlaGatherRows(ori.data(), a.ori, D), smlaGatherRows(oriP.data(), b.ori, D));
  EXPECT_EQ(smlaGatherRows(cmp.data(), a.cmp, D), smlaGatherRows(cmpP.data(), b.cmp, D));
  EXPECT_EQ(smlaGatherRows(indices.data(), a.q, K), smlaGatherRows(indicesT.data(), b.q, K));
  // The forward of the gathered problem, put back: TND rows are the BSND rows packed, padding rows 0.
  gradkit::golden::SparseFlashMlaProblem p;
  p.heads = N, p.dim = D, p.batches = a.batches, p.sinks = {0.1, -0.1}, p.cmpRatio = 2, p.cmpMaskMode = 3;
  p.oriMaskMode = 4, p.oriWinLeft = 2, p.oriWinRight = 0, p.cmpTopk = K;
  p.cmpIndices = smlaGatherRows(indicesT.data(), b.q, K);
  const auto qs = smlaGatherRows(qT.data(), b.q, N * D), os = smlaGatherRows(oriP.data(), b.ori, D);
  const auto cs = smlaGatherRows(cmpP.data(), b.cmp, D);
  const auto fwd = gradkit::golden::sparseFlashMlaForward<double>(p, {qs.data(), os.data(), cs.data()});
  const auto outB = gradkit::golden::smlaScatterRows(fwd.out, a.q, N * D, 2 * 3);
  const auto outT = gradkit::golden::smlaScatterRows(fwd.out, b.q, N * D, 6);
  for (int64_t bb = 0; bb < 2; ++bb)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t e = 0; e < N * D; ++e) {
        const double packed = i < s1[bb] ? outT[(cuQ[bb] + i) * N * D + e] : 0.0;
        EXPECT_EQ(outB[(bb * 3 + i) * N * D + e], packed) << bb << " " << i;
      }
  for (int64_t e = 0; e < N * D; ++e) EXPECT_EQ(outT[5 * N * D + e], 0.0);
  double norm = 0;
  for (double x : outB) norm += x * x;
  EXPECT_GT(norm, 0.1);
}

}  // namespace
