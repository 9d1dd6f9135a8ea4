// The sparse flash MLA golden's backward (golden/sparse_flash_mla.h) against fourth-order central finite differences of
// its fp64 forward: the loss sum(out * W) with random W, differentiated in every q, ori_kv, cmp_kv and sink value, in
// SWA / HCA / CSA / ORI_SPARSE / ORI_CMP_SPARSE problems with duplicates, -1 padding and dropped entries, both index
// rules, several batches, empty rows and batches, no sink and a -inf sink. Also: the L1 norms summing to 1 - mean
// P_sink, the io rounding, and the float instantiation (the naive benchmark) against the double one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/gradient_check.h"
#include "golden/sparse_flash_mla.h"

namespace {

using gradkit::test::checkGradient;
using gradkit::test::kGradTolerance;

using gradkit::golden::SmlaBatch;
using gradkit::golden::SmlaIndexRule;
using gradkit::golden::SmlaIoRounding;
using gradkit::golden::SmlaKey;
using gradkit::golden::SmlaPart;
using gradkit::golden::SparseFlashMlaGradInputs;
using gradkit::golden::SparseFlashMlaGradOutputs;
using gradkit::golden::SparseFlashMlaInputs;
using gradkit::golden::SparseFlashMlaProblem;

struct Case {
  SparseFlashMlaProblem p;
  std::vector<double> q, ori, cmp, w;  // w: the loss weights, also dOut
  SparseFlashMlaInputs<double> inputs() const { return {q.data(), ori.data(), cmp.data()}; }
};

/** Random tensors for c.p's sizes, and random index lists (with duplicates, -1 and out-of-range entries). */
void fill(Case& c, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  const SparseFlashMlaProblem& p = c.p;
  c.q.resize(static_cast<size_t>(p.qRows() * p.heads * p.dim));
  c.ori.resize(static_cast<size_t>(p.oriRows() * p.dim));
  c.cmp.resize(static_cast<size_t>(p.cmpRows() * p.dim));
  c.w.resize(c.q.size());
  for (std::vector<double>* v : {&c.q, &c.ori, &c.cmp, &c.w})
    for (double& x : *v) x = u(gen);
  const auto indices = [&](int64_t topk, bool cmp, std::vector<int32_t>& list) {
    list.clear();
    for (int64_t b = 0; b < p.batchCount(); ++b) {
      const SmlaBatch& batch = p.batches[static_cast<size_t>(b)];
      const int64_t length = cmp ? batch.cmp : batch.s2;
      for (int64_t i = 0; i < batch.s1; ++i) {
        std::uniform_int_distribution<int64_t> pick(0, length + 1), pad(topk / 2, topk);
        const int64_t end = pad(gen);  // -1 from here on (none when end == topk)
        for (int64_t s = 0; s < topk; ++s) list.push_back(s < end ? static_cast<int32_t>(pick(gen)) : -1);
      }
    }
  };
  if (p.oriTopk > 0) indices(p.oriTopk, false, c.p.oriIndices);
  if (p.cmpTopk > 0) indices(p.cmpTopk, true, c.p.cmpIndices);
}

double loss(const Case& c) {
  const auto fwd = gradkit::golden::sparseFlashMlaForward(c.p, c.inputs());
  double sum = 0;
  for (size_t e = 0; e < fwd.out.size(); ++e) sum += fwd.out[e] * c.w[e];
  return sum;
}

/** Rows of the case whose visible keys hold the same kv row twice. */
int64_t rowsWithDuplicates(const SparseFlashMlaProblem& p) {
  int64_t rows = 0;
  for (int64_t b = 0; b < p.batchCount(); ++b)
    for (int64_t i = 0; i < p.batches[static_cast<size_t>(b)].s1; ++i) {
      std::set<std::pair<bool, int64_t>> seen;
      bool twice = false;
      for (const SmlaKey& key : gradkit::golden::sparseFlashMlaVisibleKeys(p, b, i))
        twice = !seen.insert({key.cmp, key.index}).second || twice;
      rows += twice ? 1 : 0;
    }
  return rows;
}

// The backward from the forward's own out and lse against finite differences of sum(out * W) for q, ori, cmp and
// the sinks; each gradient that exists must have non-zero entries.
void gradCheck(Case& c, const std::string& label) {
  SCOPED_TRACE(label);
  SparseFlashMlaGradInputs<double> in{c.inputs(), c.w.data(), nullptr, nullptr};
  const SparseFlashMlaGradOutputs<double> g = gradkit::golden::sparseFlashMlaGradient(c.p, in);
  double worst = 0;
  const auto lossOfC = [&c] { return loss(c); };
  EXPECT_GT(checkGradient(lossOfC, c.q, g.dq, "dq", &worst), 0);
  if (c.p.oriRows() > 0) {
    EXPECT_GT(checkGradient(lossOfC, c.ori, g.dOri, "dOri", &worst), 0);
  }
  if (c.p.cmpRows() > 0) {
    EXPECT_GT(checkGradient(lossOfC, c.cmp, g.dCmp, "dCmp", &worst), 0);
  }
  EXPECT_EQ(g.dSinks.size(), c.p.sinks.size());
  if (!c.p.sinks.empty()) {
    EXPECT_GT(checkGradient(lossOfC, c.p.sinks, g.dSinks, "dSinks", &worst), 0);
  }
  std::printf("%s: worst relative error %.2e\n", label.c_str(), worst);
}

Case base(int64_t heads, int64_t dim, std::vector<SmlaBatch> batches) {
  Case c;
  c.p.heads = heads, c.p.dim = dim, c.p.batches = std::move(batches), c.p.scale = 0.7f;
  for (int64_t h = 0; h < heads; ++h) c.p.sinks.push_back(0.4 - 0.3 * static_cast<double>(h));
  return c;
}

TEST(SparseFlashMlaGoldenGrad, SwaWindowTwoBatches) {
  Case c = base(2, 3, {SmlaBatch{3, 6, 0, 0}, SmlaBatch{2, 5, 0, 0}});
  c.p.oriMaskMode = 4, c.p.oriWinLeft = 2, c.p.oriWinRight = 1;
  fill(c, 1);
  gradCheck(c, "SWA mode 4 (2, 1)");
  c.p.oriMaskMode = 0, c.p.oriWinLeft = -1, c.p.oriWinRight = -1;
  gradCheck(c, "SWA mode 0");
}

TEST(SparseFlashMlaGoldenGrad, HcaCausalWithResidual) {
  Case c = base(2, 3, {SmlaBatch{3, 7, 3, 1}});
  c.p.oriMaskMode = 3, c.p.cmpMaskMode = 3, c.p.cmpRatio = 2;
  fill(c, 2);
  gradCheck(c, "HCA causal r 2 residual 1");
}

TEST(SparseFlashMlaGoldenGrad, CsaDuplicatesPaddingAndDroppedEntries) {
  Case c = base(3, 2, {SmlaBatch{4, 8, 4, 1}, SmlaBatch{3, 6, 3, 0}});
  c.p.oriMaskMode = 4, c.p.oriWinLeft = 1, c.p.oriWinRight = 0, c.p.cmpMaskMode = 3, c.p.cmpRatio = 2;
  c.p.cmpTopk = 5;
  fill(c, 3);
  EXPECT_GT(rowsWithDuplicates(c.p), 0);
  gradCheck(c, "CSA");
}

TEST(SparseFlashMlaGoldenGrad, OriSparseWithLengthsAndDenseCmp) {
  Case c = base(2, 3, {SmlaBatch{3, 5, 2, 0}});
  c.p.oriTopk = 4, c.p.oriTopkLength = {4, 2, 3}, c.p.cmpMaskMode = 0;
  fill(c, 4);
  EXPECT_GT(rowsWithDuplicates(c.p), 0);
  gradCheck(c, "ORI_SPARSE mode 0 + HCA");
}

TEST(SparseFlashMlaGoldenGrad, OriCmpSparseBothRules) {
  Case c = base(2, 2, {SmlaBatch{3, 6, 4, 1}, SmlaBatch{2, 4, 2, 0}});
  c.p.oriMaskMode = 4, c.p.oriWinLeft = 3, c.p.oriWinRight = -1, c.p.oriTopk = 4;
  c.p.cmpMaskMode = 3, c.p.cmpRatio = 2, c.p.cmpTopk = 3;
  fill(c, 5);
  EXPECT_GT(rowsWithDuplicates(c.p), 0);
  gradCheck(c, "ORI_CMP_SPARSE drop");
  c.p.indexRule = SmlaIndexRule::UseInRange;
  gradCheck(c, "ORI_CMP_SPARSE use in range");
}

TEST(SparseFlashMlaGoldenGrad, EmptyRowsEmptyBatchAndNoSink) {
  Case c = base(2, 3, {SmlaBatch{4, 2, 1, 0}, SmlaBatch{0, 3, 1, 0}, SmlaBatch{2, 3, 0, 0}});
  c.p.oriMaskMode = 3, c.p.cmpMaskMode = 3, c.p.sinks.clear();
  fill(c, 6);
  EXPECT_TRUE(gradkit::golden::sparseFlashMlaVisibleKeys(c.p, 0, 0).empty());
  gradCheck(c, "empty rows, no sink");
  c.p.sinks = {-std::numeric_limits<double>::infinity(), 0.25};
  gradCheck(c, "sink -inf");
  const auto g = gradkit::golden::sparseFlashMlaGradient(
      c.p, SparseFlashMlaGradInputs<double>{c.inputs(), c.w.data(), nullptr, nullptr});
  EXPECT_EQ(g.dSinks[0], 0.0);
}

TEST(SparseFlashMlaGoldenGrad, CmpOnly) {
  // The L1 op's shape (k as cmp_kv, no ori rows: the cmp-only mode).
  Case c = base(2, 3, {SmlaBatch{3, 0, 5, 0}});
  c.p.cmpMaskMode = 3;
  fill(c, 7);
  gradCheck(c, "cmp only causal");
}

// ---------------------------------------------------------------------------------------------------------------
// L1 norms, io rounding, float against double

TEST(SparseFlashMlaGoldenGrad, L1NormsSumToOneMinusSinkMass) {
  Case sparse = base(3, 2, {SmlaBatch{4, 8, 4, 1}, SmlaBatch{3, 6, 3, 0}});
  sparse.p.oriMaskMode = 4, sparse.p.oriWinLeft = 3, sparse.p.oriWinRight = 0, sparse.p.oriTopk = 4;
  sparse.p.cmpMaskMode = 3, sparse.p.cmpRatio = 2, sparse.p.cmpTopk = 5;
  fill(sparse, 8);
  Case dense = base(3, 2, {SmlaBatch{4, 0, 5, 0}});
  dense.p.cmpMaskMode = 3;
  fill(dense, 9);
  for (const Case* c : {&sparse, &dense}) {
    const SparseFlashMlaProblem& p = c->p;
    const auto fwd = gradkit::golden::sparseFlashMlaForward(p, c->inputs());
    const auto g = gradkit::golden::sparseFlashMlaBackward(
        p, SparseFlashMlaGradInputs<double>{c->inputs(), c->w.data(), fwd.out.data(), fwd.lse.data()});
    const std::vector<double> ori = p.oriTopk > 0 ? g.oriL1 : std::vector<double>{};
    const std::vector<double> cmp =
        p.cmpTopk > 0 ? g.cmpL1
                      : gradkit::golden::sparseFlashMlaSoftmaxL1Norm(p, SmlaPart::Cmp, c->inputs(), fwd.lse.data());
    const int64_t oriWidth = p.oriTopk, cmpWidth = static_cast<int64_t>(cmp.size()) / p.qRows();
    int64_t checked = 0;
    for (int64_t b = 0; b < p.batchCount(); ++b)
      for (int64_t i = 0; i < p.batches[static_cast<size_t>(b)].s1; ++i) {
        const int64_t row = p.qRowsBefore(b) + i;
        if (gradkit::golden::sparseFlashMlaVisibleKeys(p, b, i).empty()) continue;
        double total = 0, sinkMass = 0;
        for (int64_t s = 0; s < oriWidth; ++s) total += ori[static_cast<size_t>(row * oriWidth + s)];
        for (int64_t s = 0; s < cmpWidth; ++s) total += cmp[static_cast<size_t>(row * cmpWidth + s)];
        for (int64_t h = 0; h < p.heads; ++h)
          sinkMass += std::exp(p.sinks[static_cast<size_t>(h)] - fwd.lse[static_cast<size_t>(row * p.heads + h)]);
        EXPECT_NEAR(total, 1 - sinkMass / static_cast<double>(p.heads), 1e-14) << "row " << row;
        ++checked;
      }
    EXPECT_GT(checked, 3);
  }
  // Slots that are not visible (dropped, after -1, past n) are 0; duplicate slots carry the same value.
  const SparseFlashMlaProblem& p = sparse.p;
  const auto fwd = gradkit::golden::sparseFlashMlaForward(p, sparse.inputs());
  const auto l1 = gradkit::golden::sparseFlashMlaSoftmaxL1Norm(p, SmlaPart::Cmp, sparse.inputs(), fwd.lse.data());
  int64_t zeros = 0;
  for (int64_t b = 0; b < p.batchCount(); ++b)
    for (int64_t i = 0; i < p.batches[static_cast<size_t>(b)].s1; ++i) {
      const int64_t row = p.qRowsBefore(b) + i;
      std::vector<int64_t> visible(static_cast<size_t>(p.cmpTopk), -1);
      for (const SmlaKey& key : gradkit::golden::sparseFlashMlaVisibleKeys(p, b, i))
        if (key.cmp) visible[static_cast<size_t>(key.slot)] = key.index;
      for (int64_t s = 0; s < p.cmpTopk; ++s) {
        const double value = l1[static_cast<size_t>(row * p.cmpTopk + s)];
        if (visible[static_cast<size_t>(s)] < 0) {
          EXPECT_EQ(value, 0.0);
          ++zeros;
        }
        for (int64_t t = 0; t < s; ++t) {
          const int64_t key = visible[static_cast<size_t>(t)];
          if (key >= 0 && key == visible[static_cast<size_t>(s)]) {
            EXPECT_EQ(value, l1[static_cast<size_t>(row * p.cmpTopk + t)]);
          }
        }
      }
    }
  EXPECT_GT(zeros, 0);
}

TEST(SparseFlashMlaGoldenGrad, IoRounding) {
  using gradkit::golden::smlaRoundIo;
  EXPECT_EQ(smlaRoundIo(SmlaIoRounding::None, 1.0 / 3), 1.0 / 3);
  EXPECT_EQ(smlaRoundIo(SmlaIoRounding::Fp16, 1.0 / 3), 0.333251953125);
  EXPECT_EQ(smlaRoundIo(SmlaIoRounding::Bf16, 1.0 / 3), 0.333984375);
  EXPECT_EQ(smlaRoundIo(SmlaIoRounding::Fp16, 1.0f / 3), 0.333251953125f);
  EXPECT_EQ(smlaRoundIo(SmlaIoRounding::Bf16, 1.0f / 3), 0.333984375f);
  // Just above the fp16 midpoint 1 + 2^-11: double rounds once (up); through float it would tie down to 1.
  const double above = 1 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  EXPECT_EQ(smlaRoundIo(SmlaIoRounding::Fp16, above), 1 + std::ldexp(1.0, -10));
  EXPECT_EQ(smlaRoundIo(SmlaIoRounding::Fp16, static_cast<float>(above)), 1.0f);
}

/** max |a - b| / max |b| over a float and a double result. */
double relativeError(const std::vector<float>& a, const std::vector<double>& b) {
  double diff = 0, scale = 0;
  EXPECT_EQ(a.size(), b.size());
  for (size_t e = 0; e < a.size() && e < b.size(); ++e) {
    diff = std::max(diff, std::fabs(static_cast<double>(a[e]) - b[e]));
    scale = std::max(scale, std::fabs(b[e]));
  }
  return scale > 0 ? diff / scale : diff;
}

TEST(SparseFlashMlaGoldenGrad, FloatAgreesWithDouble) {
  Case c = base(4, 32, {SmlaBatch{5, 40, 10, 2}, SmlaBatch{3, 20, 5, 0}});
  c.p.oriMaskMode = 4, c.p.oriWinLeft = 15, c.p.oriWinRight = 0, c.p.cmpMaskMode = 3, c.p.cmpRatio = 4;
  c.p.cmpTopk = 6, c.p.scale = 0.25f;
  fill(c, 10);
  const auto narrow = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  const std::vector<float> q = narrow(c.q), ori = narrow(c.ori), cmp = narrow(c.cmp), w = narrow(c.w);
  const auto gd = gradkit::golden::sparseFlashMlaGradient(
      c.p, SparseFlashMlaGradInputs<double>{c.inputs(), c.w.data(), nullptr, nullptr});
  const auto fd = gradkit::golden::sparseFlashMlaForward(c.p, c.inputs());
  for (const SmlaIoRounding io : {SmlaIoRounding::None, SmlaIoRounding::Fp16, SmlaIoRounding::Bf16}) {
    SparseFlashMlaProblem p = c.p;
    p.io = io;
    const SparseFlashMlaInputs<float> in{q.data(), ori.data(), cmp.data()};
    const auto ff = gradkit::golden::sparseFlashMlaForward(p, in);
    const auto gf =
        gradkit::golden::sparseFlashMlaGradient(p, SparseFlashMlaGradInputs<float>{in, w.data(), nullptr, nullptr});
    // None: fp32 rounding only (~1e-7 relative). fp16 / bf16: P and dS operands rounded (2^-11 / 2^-8 relative).
    const double low = io == SmlaIoRounding::None ? 0 : 1e-5;
    const double high = io == SmlaIoRounding::None ? 1e-5 : io == SmlaIoRounding::Fp16 ? 2e-3 : 2e-2;
    const std::pair<const char*, double> errors[] = {
        {"out", relativeError(ff.out, fd.out)},      {"lse", relativeError(ff.lse, fd.lse)},
        {"dq", relativeError(gf.dq, gd.dq)},         {"dOri", relativeError(gf.dOri, gd.dOri)},
        {"dCmp", relativeError(gf.dCmp, gd.dCmp)},   {"dSinks", relativeError(gf.dSinks, gd.dSinks)},
        {"cmpL1", relativeError(gf.cmpL1, gd.cmpL1)}};
    for (const auto& [name, error] : errors) {
      EXPECT_LT(error, high) << name << " io " << static_cast<int>(io);
      // lse, dSinks and L1 use unrounded P; the others see the rounded operands.
      const bool rounded = std::string(name) != "lse" && std::string(name) != "dSinks" && std::string(name) != "cmpL1";
      if (rounded) {
        EXPECT_GE(error, low) << name << " io " << static_cast<int>(io);
      }
    }
  }
}

}  // namespace
