// The native-bf16 tile path of the flash attention kernels (FaProblem::tilePath = NativeBf16, GRADKIT_TILE=native):
// against the fp64 reference on the cases that exercise its operand loading, its own chain (bf16 P) told apart from
// the fp32 path's, and its bits over thread counts and kernel tables.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "gradkit/float_convert.h"
#include "ops/fa_kernel_checks.h"

namespace gradkit::test::fa {
namespace {

/**
 * The native-bf16 tile path (GRADKIT_TILE=native; fa_kernel.h FaProblem::tilePath) on the cases that exercise its
 * operand loading: bf16 in (in place and copied), rope columns, GQA, tails, strided and TND views, dropout; with
 * `sums` Sequential (the Highway tile kernels) or Bf16Pairs (VDPBF16PS's order: the AVX512-BF16 kernel or its
 * scalar emulation).
 */
void checkNativeCases(GemmSums sums) {
  const std::string tag = sums == GemmSums::Bf16Pairs ? " (pairs)" : "";
  FaCase c = base();
  c.dtype = ACL_BF16;
  c.outDtype = ACL_BF16;
  c.tilePath = TilePath::NativeBf16;
  c.tileSums = sums;
  checkCase(c, "native bf16" + tag);
  c.outDtype = ACL_FLOAT;
  c.bsnd = true;
  c.n1 = 4;
  c.n2 = 2;
  c.dv = 24;
  checkCase(c, "native bf16 in, fp32 out, gqa" + tag);
  c.outDtype = ACL_BF16;
  c.colStride = 2;
  c.dRope = 8;
  c.dropout = FaDropoutKind::Philox;
  checkCase(c, "native strided rope dropout" + tag);
  FaCase t = base();
  t.dtype = ACL_BF16;
  t.outDtype = ACL_BF16;
  t.tilePath = TilePath::NativeBf16;
  t.tileSums = sums;
  t.tnd = true;
  t.lengths = {{20, 30}, {0, 40}, {25, 0}, {230, 400}};
  t.band = true;
  t.bandRight = 0;
  t.pse = FaPseKind::Slope;
  checkCase(t, "native tnd causal slopes, several key blocks" + tag);
}

TEST(FaKernels, NativeBf16Path) { checkNativeCases(GemmSums::Sequential); }

TEST(FaKernels, NativeBf16PathInPairs) { checkNativeCases(GemmSums::Bf16Pairs); }

/** Root mean square of a - b over the forward's out (fp32 out). */
double rmsDifference(const FaData& x, const std::vector<double>& reference) {
  const FaCase& c = x.c;
  double sum = 0.0;
  const int64_t rows = x.problem.batches[0].s1;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t col = 0; col < c.dv; ++col) {
      const double d = x.out.at(0, 0, i, col) - reference[static_cast<size_t>(i * c.dv + col)];
      sum += d * d;
    }
  }
  return std::sqrt(sum / static_cast<double>(rows * c.dv));
}

// What the native path computes differently: out = sum_j bf16(exp(s_j - m)) v_j / l, the fp32 path the same with
// exp unrounded. With one key block (the running max is the row max) each path lands on its own chain, computed
// here in fp64, far closer than on the other's: the test fails if the path is ignored or rounds something else.
TEST(FaKernels, NativeBf16PathMultipliesRoundedProbabilities) {
  FaCase c;
  c.lengths = {{64, 150}};
  c.d = 32;
  c.dv = 32;
  c.scale = 0.5f;
  c.range = 2.0f;
  c.dtype = ACL_BF16;
  c.outDtype = ACL_FLOAT;
  std::vector<double> roundedChain, exactChain;
  {
    auto data = makeData(c);
    const FaData& x = *data;
    for (int64_t i = 0; i < 64; ++i) {
      std::vector<double> score(150);
      double m = -INFINITY;
      for (int64_t j = 0; j < 150; ++j) {
        double dot = 0.0;
        for (int64_t col = 0; col < c.d; ++col) dot += x.q.at(0, 0, i, col) * x.k.at(0, 0, j, col);
        score[static_cast<size_t>(j)] = static_cast<double>(static_cast<float>(dot) * c.scale);
        m = std::max(m, score[static_cast<size_t>(j)]);
      }
      std::vector<double> rounded(static_cast<size_t>(c.dv)), exact(static_cast<size_t>(c.dv));
      double l = 0.0;
      for (int64_t j = 0; j < 150; ++j) {
        const double e = std::exp(score[static_cast<size_t>(j)] - m);
        const double eRounded = bf16ToFloat(floatToBf16(static_cast<float>(e)));
        l += e;
        for (int64_t col = 0; col < c.dv; ++col) {
          rounded[static_cast<size_t>(col)] += eRounded * x.v.at(0, 0, j, col);
          exact[static_cast<size_t>(col)] += e * x.v.at(0, 0, j, col);
        }
      }
      for (int64_t col = 0; col < c.dv; ++col) {
        roundedChain.push_back(rounded[static_cast<size_t>(col)] / l);
        exactChain.push_back(exact[static_cast<size_t>(col)] / l);
      }
    }
  }
  for (const GemmSums sums : {GemmSums::Sequential, GemmSums::Bf16Pairs}) {
    for (const TilePath path : {TilePath::Highway, TilePath::NativeBf16}) {
      if (path == TilePath::Highway && sums == GemmSums::Bf16Pairs) continue;
      c.tilePath = path;
      c.tileSums = sums;
      auto data = makeData(c);
      FaData& x = *data;
      runForward(x, 2, kernels::faKernels());
      const double own = rmsDifference(x, path == TilePath::NativeBf16 ? roundedChain : exactChain);
      const double other = rmsDifference(x, path == TilePath::NativeBf16 ? exactChain : roundedChain);
      EXPECT_LT(own, 0.1 * other) << tilePathName(path) << (sums == GemmSums::Bf16Pairs ? " (pairs)" : "") << ": rms "
                                  << own << " from its chain, " << other << " from the other";
    }
  }
}

TEST(FaKernelBits, NativeBf16SameForAnyThreadCountAndTable) {
  FaCase c = bitsBandPseDropoutCase();
  c.dtype = ACL_BF16;
  c.outDtype = ACL_BF16;
  c.tilePath = TilePath::NativeBf16;
  checkBits(c, "native bf16 band pse dropout");
  FaCase t = bitsTndMaskRopeCase();
  t.tilePath = TilePath::NativeBf16;
  checkBits(t, "native bf16 tnd mask rope");
  c.tileSums = t.tileSums = GemmSums::Bf16Pairs;
  checkBits(c, "native bf16 band pse dropout, pairs");
  checkBits(t, "native bf16 tnd mask rope, pairs");
}

}  // namespace
}  // namespace gradkit::test::fa
