// The sparse flash MLA golden (golden/sparse_flash_mla.h) against hand-worked values, independently of any kernel: the
// visible keys of every mode written out (docs/sparse_attention.md, "What one query row sees": SWA masks 0/3/4 with -1
// windows, HCA, CSA with -1 padding, duplicates and dropped entries, ori sparse with topk lengths, both index rules,
// empty rows, the residual of the context-parallel example); the worked numbers of the forward, the backward, the L1
// norm and the L1 example program's counts; the kernel form of dSinks on inconsistent inputs; the io rounding; and the
// float instantiation against the double one. The backward against finite differences is in
// test_sparse_flash_mla_golden_grad.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "golden/sparse_flash_mla.h"

namespace {

using gradkit::golden::SmlaBatch;
using gradkit::golden::SmlaIndexRule;
using gradkit::golden::SmlaIoRounding;
using gradkit::golden::SmlaKey;
using gradkit::golden::SmlaPart;
using gradkit::golden::SparseFlashMlaGradInputs;
using gradkit::golden::SparseFlashMlaGradOutputs;
using gradkit::golden::SparseFlashMlaInputs;
using gradkit::golden::SparseFlashMlaOutputs;
using gradkit::golden::SparseFlashMlaProblem;

/** The visible keys of row i of batch b as text: "o4" (dense ori j = 4), "c1#0" (cmp c = 1 from slot 0), ... */
std::string keysText(const SparseFlashMlaProblem& p, int64_t b, int64_t i) {
  std::string text;
  for (const SmlaKey& key : gradkit::golden::sparseFlashMlaVisibleKeys(p, b, i)) {
    if (!text.empty()) text += ' ';
    text.append(key.cmp ? "c" : "o").append(std::to_string(key.index));
    if (key.slot >= 0) text.append("#").append(std::to_string(key.slot));
  }
  return text;
}

std::string range(const char* part, int64_t lo, int64_t hi) {
  std::string text;
  for (int64_t j = lo; j < hi; ++j) text.append(text.empty() ? "" : " ").append(part).append(std::to_string(j));
  return text;
}

// A hand-worked problem: one batch, r = 4, C = 2, residual 2 -> R = 10 = S2act, S1act = 3, thr = 8, 9, 10.
SparseFlashMlaProblem spec24() {
  SparseFlashMlaProblem p;
  p.batches = {SmlaBatch{3, 10, 0, 0}};
  return p;
}

TEST(SparseFlashMlaGolden, OriMasksOfSpec24) {
  SparseFlashMlaProblem p = spec24();
  struct Row {
    int64_t mode, wl, wr, lo[3], hi[3];
  };
  const Row rows[] = {{4, 3, 0, {4, 5, 6}, {8, 9, 10}},    {4, -1, 0, {0, 0, 0}, {8, 9, 10}},
                      {4, 3, -1, {4, 5, 6}, {10, 10, 10}}, {4, -1, -1, {0, 0, 0}, {10, 10, 10}},
                      {3, -1, -1, {0, 0, 0}, {8, 9, 10}},  {0, -1, -1, {0, 0, 0}, {10, 10, 10}},
                      {4, 0, 0, {7, 8, 9}, {8, 9, 10}},    {4, 127, 0, {0, 0, 0}, {8, 9, 10}}};
  for (const Row& r : rows) {
    p.oriMaskMode = r.mode, p.oriWinLeft = r.wl, p.oriWinRight = r.wr;
    for (int64_t i = 0; i < 3; ++i) {
      EXPECT_EQ(keysText(p, 0, i), range("o", r.lo[i], r.hi[i]))
          << "mode " << r.mode << " (" << r.wl << ", " << r.wr << ") row " << i;
    }
  }
}

TEST(SparseFlashMlaGolden, HcaThresholdOfSpec24AndResidual) {
  SparseFlashMlaProblem p = spec24();
  p.batches[0].cmp = 2, p.batches[0].residual = 2, p.cmpRatio = 4, p.oriMaskMode = 4, p.oriWinLeft = 3;
  p.oriWinRight = 0, p.cmpMaskMode = 3;
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(gradkit::golden::smlaCmpThreshold(p, 0, i), 2);
    EXPECT_EQ(keysText(p, 0, i), range("o", 4 + i, 8 + i) + " c0 c1");
  }
  p.cmpMaskMode = 0;  // floor(R / r) = 2
  EXPECT_EQ(gradkit::golden::smlaCmpThreshold(p, 0, 0), 2);
  // Without the residual R = 8: floor((8 - 3 + i + 1) / 4) = 1, 1, 2.
  p.cmpMaskMode = 3, p.batches[0].residual = 0;
  EXPECT_EQ(gradkit::golden::smlaCmpThreshold(p, 0, 0), 1);
  EXPECT_EQ(gradkit::golden::smlaCmpThreshold(p, 0, 1), 1);
  EXPECT_EQ(gradkit::golden::smlaCmpThreshold(p, 0, 2), 2);
  // r = 1: the residual is ignored; thr = C - S1 + i + 1 = 0, 1, 2 with C = 2.
  p.cmpRatio = 1, p.batches[0].residual = 1;
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(gradkit::golden::smlaCmpThreshold(p, 0, i), i);
}

TEST(SparseFlashMlaGolden, CsaPaddingDuplicatesAndDroppedEntries) {
  SparseFlashMlaProblem p = spec24();
  p.batches[0].cmp = 2, p.batches[0].residual = 2, p.cmpRatio = 4, p.cmpMaskMode = 3, p.oriMaskMode = 4;
  p.oriWinLeft = 1, p.oriWinRight = 0, p.cmpTopk = 3;
  p.cmpIndices = {1, 0, -1,   // row 0: n = min(3, 2) = 2 -> {1, 0}
                  1, 1, 0,    // a duplicate kept; the third slot is past n
                  5, 1, -1};  // row 2: 5 >= cmpThr is dropped -> {1}
  EXPECT_EQ(keysText(p, 0, 0), "o6 o7 c1#0 c0#1");
  EXPECT_EQ(keysText(p, 0, 1), "o7 o8 c1#0 c1#1");
  EXPECT_EQ(keysText(p, 0, 2), "o8 o9 c1#1");
  p.cmpIndices[1] = -1;  // -1 ends the scan even with a valid entry after it
  p.cmpIndices[2] = 0;
  EXPECT_EQ(keysText(p, 0, 0), "o6 o7 c1#0");
  // Lengths cap n further when given (cmp mode 0 requires them upstream).
  p.cmpTopkLength = {2, 1, 0};
  EXPECT_EQ(keysText(p, 0, 1), "o7 o8 c1#0");
  EXPECT_EQ(keysText(p, 0, 2), "o8 o9");
}

TEST(SparseFlashMlaGolden, IndexRules) {
  // C = 4, r = 2, residual 0, S1 = 2: R = 8, cmpThr = floor((8 - 2 + i + 1) / 2) = 3, 4.
  SparseFlashMlaProblem p;
  p.batches = {SmlaBatch{2, 0, 4, 0}};
  p.cmpRatio = 2, p.cmpMaskMode = 3, p.cmpTopk = 4;
  p.cmpIndices = {3, 0, 1, 2,    // n = 3: 3 is beyond cmpThr
                  9, 2, 0, -1};  // 9 is beyond the batch's C
  EXPECT_EQ(keysText(p, 0, 0), "c0#1 c1#2");
  EXPECT_EQ(keysText(p, 0, 1), "c2#1 c0#2");
  p.indexRule = SmlaIndexRule::UseInRange;  // used as given, >= C ends the scan
  EXPECT_EQ(keysText(p, 0, 0), "c3#0 c0#1 c1#2");
  EXPECT_EQ(keysText(p, 0, 1), "");
}

TEST(SparseFlashMlaGolden, OriSparse) {
  SparseFlashMlaProblem p;
  p.batches = {SmlaBatch{3, 6, 0, 0}};
  p.oriTopk = 4;  // mode 0: n = min(K, length, S2act)
  p.oriIndices = {5, 2, 2, -1, 0, -1, 3, 4, 5, 2, 2, 1};
  p.oriTopkLength = {3, 4, 2};
  EXPECT_EQ(keysText(p, 0, 0), "o5#0 o2#1 o2#2");
  EXPECT_EQ(keysText(p, 0, 1), "o0#0");
  EXPECT_EQ(keysText(p, 0, 2), "o5#0 o2#1");
  // Mode 4 (2, 0), S1 = 1, S2 = 10: window [7, 10), n = min(5, 3): 9, 1 (outside, dropped), 8; 7 and 6 are not read.
  p.batches = {SmlaBatch{1, 10, 0, 0}};
  p.oriMaskMode = 4, p.oriWinLeft = 2, p.oriWinRight = 0, p.oriTopk = 5, p.oriTopkLength.clear();
  p.oriIndices = {9, 1, 8, 7, 6};
  EXPECT_EQ(keysText(p, 0, 0), "o9#0 o8#2");
  p.indexRule = SmlaIndexRule::UseInRange;
  EXPECT_EQ(keysText(p, 0, 0), "o9#0 o1#1 o8#2");
  // ORI_CMP_SPARSE: the ori part first, then the cmp part.
  p.indexRule = SmlaIndexRule::DropOutsideMask;
  p.batches[0].cmp = 3, p.cmpRatio = 3, p.cmpMaskMode = 0, p.cmpTopk = 2, p.cmpIndices = {2, 0};
  EXPECT_EQ(keysText(p, 0, 0), "o9#0 o8#2 c2#0 c0#1");
}

TEST(SparseFlashMlaGolden, EmptyRowsGiveZeroOutAndLse) {
  // S1act = 12 > S2act = 10, mode 3: thr = i - 1; rows 0, 1 see nothing, row 2 sees ori 0 only.
  SparseFlashMlaProblem p;
  p.heads = 2, p.dim = 2, p.batches = {SmlaBatch{12, 10, 2, 2}}, p.cmpRatio = 4, p.cmpMaskMode = 3;
  p.oriMaskMode = 3, p.sinks = {0.5, -1.0};
  EXPECT_EQ(keysText(p, 0, 0), "");
  EXPECT_EQ(keysText(p, 0, 1), "");
  EXPECT_EQ(keysText(p, 0, 2), "o0");
  EXPECT_EQ(keysText(p, 0, 5), "o0 o1 o2 o3 c0");  // thr 4, cmpThr floor(4 / 4) = 1
  // Mode 4 (1, 0) far left of the diagonal: hi = max(thr, 0) = 0.
  p.oriMaskMode = 4, p.oriWinLeft = 1, p.oriWinRight = 0;
  EXPECT_EQ(keysText(p, 0, 0), "");
  std::vector<double> q(12 * 2 * 2, 1.0), kv(10 * 2, 0.5), cmp(2 * 2, 0.25);
  const SparseFlashMlaOutputs<double> out =
      gradkit::golden::sparseFlashMlaForward<double>(p, {q.data(), kv.data(), cmp.data()});
  for (int64_t e = 0; e < 8; ++e) EXPECT_EQ(out.out[e], 0.0);  // rows 0, 1
  for (int64_t e = 0; e < 4; ++e) EXPECT_EQ(out.lse[e], 0.0);
  EXPECT_NE(out.lse[4], 0.0);
  // The backward gives them no gradient and the sinks nothing from them.
  std::vector<double> dOut(q.size(), 1.0);
  SparseFlashMlaGradInputs<double> in{{q.data(), kv.data(), cmp.data()}, dOut.data(), nullptr, nullptr};
  const SparseFlashMlaGradOutputs<double> g = gradkit::golden::sparseFlashMlaGradient(p, in);
  for (int64_t e = 0; e < 8; ++e) EXPECT_EQ(g.dq[e], 0.0);
}

TEST(SparseFlashMlaGolden, ContextParallelResidual) {
  // [TDOC] CP example: a sequence of 18 tokens (cmp 4, residual 2, r = 4); rank 1 holds q rows 8..17 against the
  // whole prefix. Its rows must equal rows 8..17 of the unsplit run, which only the residual makes true.
  SparseFlashMlaProblem whole;
  whole.heads = 2, whole.dim = 3, whole.scale = 0.6f, whole.sinks = {0.3, -0.2}, whole.cmpRatio = 4;
  whole.cmpMaskMode = 3, whole.oriMaskMode = 4, whole.oriWinLeft = 3, whole.oriWinRight = 0;
  whole.batches = {SmlaBatch{18, 18, 4, 2}};
  SparseFlashMlaProblem rank1 = whole;
  rank1.batches = {SmlaBatch{10, 18, 4, 2}};
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<double> q(18 * 6), ori(18 * 3), cmp(4 * 3);
  for (std::vector<double>* v : {&q, &ori, &cmp})
    for (double& x : *v) x = u(gen);
  const auto all = gradkit::golden::sparseFlashMlaForward<double>(whole, {q.data(), ori.data(), cmp.data()});
  const auto part = gradkit::golden::sparseFlashMlaForward<double>(rank1, {q.data() + 8 * 6, ori.data(), cmp.data()});
  for (size_t e = 0; e < part.out.size(); ++e) ASSERT_EQ(part.out[e], all.out[8 * 6 + e]) << e;
  for (size_t e = 0; e < part.lse.size(); ++e) ASSERT_EQ(part.lse[e], all.lse[8 * 2 + e]) << e;
  rank1.batches[0].residual = 0;  // without it the cmp threshold moves
  EXPECT_EQ(keysText(whole, 0, 8), "o5 o6 o7 o8 c0 c1");
  EXPECT_NE(keysText(rank1, 0, 0), keysText(whole, 0, 8));
  EXPECT_EQ(keysText(rank1, 0, 0), keysText(whole, 0, 8).substr(0, 11) + " c0");
}

// ---------------------------------------------------------------------------------------------------------------
// Worked numbers

TEST(SparseFlashMlaGolden, ForwardWorkedExampleOfSpec24) {
  // Sink 0, two keys with scaled scores 0 and ln 3 (q = (1, 0), k_a = (0, 1), k_b = (ln 3, 0), V = K).
  const double ln3 = std::log(3.0);
  SparseFlashMlaProblem p;
  p.dim = 2, p.sinks = {0.0}, p.batches = {SmlaBatch{1, 2, 0, 0}};
  const std::vector<double> q = {1, 0}, ori = {0, 1, ln3, 0};
  auto out = gradkit::golden::sparseFlashMlaForward<double>(p, {q.data(), ori.data(), nullptr});
  EXPECT_NEAR(out.out[0], 0.6 * ln3, 1e-15);
  EXPECT_NEAR(out.out[1], 0.2, 1e-15);
  EXPECT_NEAR(out.lse[0], std::log(5.0), 1e-15);
  EXPECT_NEAR(out.lse[0], 1.6094379, 1e-7);
  // The same keys split between ori (k_a) and cmp (k_b, HCA with r = 1, cmp mode 0).
  SparseFlashMlaProblem split = p;
  split.batches = {SmlaBatch{1, 1, 1, 0}};
  const std::vector<double> ka = {0, 1}, kb = {ln3, 0};
  const auto same = gradkit::golden::sparseFlashMlaForward<double>(split, {q.data(), ka.data(), kb.data()});
  EXPECT_EQ(same.out, out.out);
  EXPECT_EQ(same.lse, out.lse);
  // Without a sink, and with sink -inf: plain softmax, 0.25 / 0.75, lse ln 4.
  for (const bool none : {true, false}) {
    p.sinks = none ? std::vector<double>{} : std::vector<double>{-std::numeric_limits<double>::infinity()};
    out = gradkit::golden::sparseFlashMlaForward<double>(p, {q.data(), ori.data(), nullptr});
    EXPECT_NEAR(out.out[0], 0.75 * ln3, 1e-15);
    EXPECT_NEAR(out.out[1], 0.25, 1e-15);
    EXPECT_NEAR(out.lse[0], std::log(4.0), 1e-15);
  }
}

TEST(SparseFlashMlaGolden, BackwardWorkedExampleOfGradSpec36) {
  // One row, G = 1, D = 2, scale 1, sink 0, q = (1, 0), dO = (1, 0); ori0 = (0, 1), ori1 = (ln 3, 0), cmp0 = (0, 0).
  SparseFlashMlaProblem p;
  p.dim = 2, p.sinks = {0.0}, p.batches = {SmlaBatch{1, 2, 1, 0}};
  const std::vector<double> q = {1, 0}, ori = {0, 1, std::log(3.0), 0}, cmp = {0, 0}, dO = {1, 0};
  const SparseFlashMlaGradInputs<double> in{{q.data(), ori.data(), cmp.data()}, dO.data(), nullptr, nullptr};
  const auto fwd = gradkit::golden::sparseFlashMlaForward(p, in.tensors);
  EXPECT_NEAR(fwd.lse[0], std::log(6.0), 1e-15);
  EXPECT_NEAR(fwd.out[0], 0.549306, 1e-6);
  EXPECT_NEAR(fwd.out[1], 1.0 / 6, 1e-15);
  const auto g = gradkit::golden::sparseFlashMlaGradient(p, in);
  const double tol = 5e-7;  // the hand-worked values have 6 decimals
  EXPECT_NEAR(g.dq[0], 0.301737, tol);
  EXPECT_NEAR(g.dq[1], -0.091551, tol);
  EXPECT_NEAR(g.dOri[0], 0.075116, tol);
  EXPECT_NEAR(g.dOri[1], 0.0, 1e-15);
  EXPECT_NEAR(g.dOri[2], 0.774653, tol);
  EXPECT_NEAR(g.dOri[3], 0.0, 1e-15);
  EXPECT_NEAR(g.dCmp[0], 0.075116, tol);
  EXPECT_NEAR(g.dCmp[1], 0.0, 1e-15);
  ASSERT_EQ(g.dSinks.size(), 1u);
  EXPECT_NEAR(g.dSinks[0], -0.091551, tol);
  EXPECT_TRUE(g.oriL1.empty() && g.cmpL1.empty());
  // From the forward's own out and lse the two entry points agree bit for bit.
  SparseFlashMlaGradInputs<double> given = in;
  given.out = fwd.out.data(), given.lse = fwd.lse.data();
  const auto same = gradkit::golden::sparseFlashMlaBackward(p, given);
  EXPECT_EQ(same.dq, g.dq);
  EXPECT_EQ(same.dOri, g.dOri);
  EXPECT_EQ(same.dCmp, g.dCmp);
  EXPECT_EQ(same.dSinks, g.dSinks);
}

TEST(SparseFlashMlaGolden, BackwardUsesGivenStatisticsAndKernelFormOfDSinks) {
  // Inconsistent out / lse: G = D = 1, scale 1, sink 0, q = k = dO = 1, given out 0.5, lse ln 2.
  // P = e / 2, P_sink = 1/2, dP = 1, D = 0.5, dS = e / 4: dq = e / 4, dkv = dS q + P dO = 3e / 4,
  // dSinks = -P_sink * P * dP = -e / 4 (not -P_sink * D = -1/4).
  SparseFlashMlaProblem p;
  p.dim = 1, p.sinks = {0.0}, p.batches = {SmlaBatch{1, 1, 0, 0}};
  const std::vector<double> one = {1.0}, out = {0.5}, lse = {std::log(2.0)};
  const SparseFlashMlaGradInputs<double> in{{one.data(), one.data(), nullptr}, one.data(), out.data(), lse.data()};
  const auto g = gradkit::golden::sparseFlashMlaBackward(p, in);
  const double e = std::exp(1.0);
  EXPECT_NEAR(g.dq[0], e / 4, 1e-15);
  EXPECT_NEAR(g.dOri[0], 3 * e / 4, 1e-15);
  EXPECT_NEAR(g.dSinks[0], -e / 4, 1e-15);
}

TEST(SparseFlashMlaGolden, L1NormWorkedExampleOfGradSpec91) {
  // G = 2, D = 2, scale 1, q0 = (1, 0), q1 = (0, 1), keys (0, 0), (1, 1), (2, 0), no sink: the L1 op's k as the cmp
  // part of a problem without ori rows (dense, mode 0).
  SparseFlashMlaProblem p;
  p.heads = 2, p.dim = 2, p.batches = {SmlaBatch{1, 0, 3, 0}};
  const std::vector<double> q = {1, 0, 0, 1}, k = {0, 0, 1, 1, 2, 0};
  const SparseFlashMlaInputs<double> in{q.data(), nullptr, k.data()};
  const auto fwd = gradkit::golden::sparseFlashMlaForward(p, in);
  const double e = std::exp(1.0);
  EXPECT_NEAR(fwd.lse[0], std::log(1 + e + e * e), 1e-15);
  EXPECT_NEAR(fwd.lse[1], std::log(2 + e), 1e-15);
  const auto l1 = gradkit::golden::sparseFlashMlaSoftmaxL1Norm(p, SmlaPart::Cmp, in, fwd.lse.data());
  ASSERT_EQ(l1.size(), 3u);
  EXPECT_NEAR(l1[0], 0.150986, 5e-7);
  EXPECT_NEAR(l1[1], 0.410423, 5e-7);
  EXPECT_NEAR(l1[2], 0.438591, 5e-7);
  EXPECT_TRUE(gradkit::golden::sparseFlashMlaSoftmaxL1Norm(p, SmlaPart::Ori, in, fwd.lse.data()).empty());
}

TEST(SparseFlashMlaGolden, L1NormCountsOfGradSpec113) {
  // The L1 example program: TND, 16 query rows, k 2048 rows, cr 128, mode 3, residual 0, lse 3, q = k = 2^-24:
  // count = floor((2048 * 128 - 16 + s + 1) / 128) = 2047 for rows 0..14, 2048 for row 15; values e^-3.
  SparseFlashMlaProblem p;
  p.heads = 2, p.dim = 4, p.scale = 0.088388f, p.cmpRatio = 128, p.cmpMaskMode = 3;
  p.batches = {SmlaBatch{16, 0, 2048, 0}};
  const double tiny = std::ldexp(1.0, -24);
  const std::vector<double> q(16 * 2 * 4, tiny), k(2048 * 4, tiny), lse(16 * 2, 3.0);
  const auto l1 =
      gradkit::golden::sparseFlashMlaSoftmaxL1Norm(p, SmlaPart::Cmp, {q.data(), nullptr, k.data()}, lse.data(), 2048);
  const std::vector<float> qf(q.begin(), q.end()), kf(k.begin(), k.end()), lsef(lse.begin(), lse.end());
  const auto l1f = gradkit::golden::sparseFlashMlaSoftmaxL1Norm(p, SmlaPart::Cmp, {qf.data(), nullptr, kf.data()},
                                                                lsef.data(), 2048);
  ASSERT_EQ(l1.size(), 16u * 2048u);
  ASSERT_EQ(l1f.size(), l1.size());
  for (int64_t s = 0; s < 16; ++s) {
    const int64_t count = s < 15 ? 2047 : 2048;
    EXPECT_EQ(gradkit::golden::smlaCmpThreshold(p, 0, s), count);
    EXPECT_NEAR(l1[s * 2048], std::exp(-3.0), 1e-12);
    EXPECT_NEAR(l1[s * 2048 + count - 1], std::exp(-3.0), 1e-12);
    EXPECT_EQ(l1f[s * 2048 + count - 1], 0.049787067f);  // e^-3 in fp32
    if (count < 2048) {
      EXPECT_EQ(l1[s * 2048 + count], 0.0);
    }
  }
}

}  // namespace
