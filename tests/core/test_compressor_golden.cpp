// The Compressor golden (golden/compressor.h) proven independently of any kernel: its fp64 backward against
// fourth-order central finite differences of its fp64 forward (x, wkv, wgate, ape; cr 2..4, coff 1 and 2, BSH and
// TH with an empty batch, start_pos 0, 1, cr-1, cr, cr+2 reading history rows, seqused tails, uncompressed tails),
// the worked examples of spec compressor.md 3.3 and 4.3 recomputed by hand, the interleaved row order and zero
// padding rows, and the float instantiation against the double one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <set>
#include <stdexcept>
#include <utility>
#include <vector>

#include "golden/compressor.h"

namespace {

using gradkit::golden::CompressorGradInputs;
using gradkit::golden::CompressorGradOutputs;
using gradkit::golden::CompressorHistory;
using gradkit::golden::CompressorInputs;
using gradkit::golden::CompressorLayout;
using gradkit::golden::CompressorOutputs;
using gradkit::golden::CompressorRow;

const double kNaN = std::numeric_limits<double>::quiet_NaN();

// A problem: the forward's inputs, a dense history [B][maxStart][coff*D] for both state rows, and dCmpKv. Values are
// fp32-representable so that the float and double instantiations see the same inputs.
struct Problem {
  CompressorLayout layout;
  std::vector<double> x, wkv, wgate, ape, dCmpKv;
  std::vector<double> histKv, histScore;
  int64_t maxStart = 0;
};

std::vector<double> randomValues(std::mt19937& rng, int64_t count, double lo, double hi) {
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> out(static_cast<size_t>(count));
  for (double& v : out) v = static_cast<float>(dist(rng));
  return out;
}

// True when token i of batch b lies in a compressed block (spec 3.3: i < u_b and its position < limit_b).
bool compressed(const CompressorLayout& l, int64_t b, int64_t i) {
  const int64_t sp = l.start(b), u = l.used(b), cr = l.cmpRatio;
  const int64_t limit = (sp + u) / cr * cr;
  return i < u && sp + i < limit;
}

// The flat rows that hold a token the forward reads (i < u_b); the others get NaN to prove they are never read.
std::vector<char> readRows(const CompressorLayout& l) {
  std::vector<char> rows(static_cast<size_t>(l.totalTokens()), 0);
  for (int64_t b = 0; b < l.batch; ++b)
    for (int64_t i = 0; i < l.used(b); ++i) rows[l.firstToken(b) + i] = 1;
  return rows;
}

Problem randomProblem(const CompressorLayout& layout, uint32_t seed) {
  std::mt19937 rng(seed);
  Problem p;
  p.layout = layout;
  const int64_t T = layout.totalTokens(), H = layout.hidden, C = layout.channels(), D = layout.headDim;
  p.x = randomValues(rng, T * H, -1, 1);
  const std::vector<char> read = readRows(layout);
  for (int64_t t = 0; t < T; ++t)
    if (!read[t])
      for (int64_t h = 0; h < H; ++h) p.x[t * H + h] = kNaN;
  // Weights scaled by 1/sqrt(H) keep the gate logits O(1): the softmax is far from one-hot, every row matters.
  const double scale = 1.5 / std::sqrt(static_cast<double>(H));
  p.wkv = randomValues(rng, C * H, -scale, scale);
  p.wgate = randomValues(rng, C * H, -scale, scale);
  p.ape = randomValues(rng, layout.cmpRatio * C, -0.5, 0.5);
  for (int64_t b = 0; b < layout.batch; ++b) p.maxStart = std::max(p.maxStart, layout.start(b));
  p.histKv = randomValues(rng, layout.batch * p.maxStart * C, -1, 1);
  p.histScore = randomValues(rng, layout.batch * p.maxStart * C, -1, 1);
  p.dCmpKv = randomValues(rng, layout.outputRows() * D, -1, 1);
  return p;
}

template <class Real>
std::vector<Real> narrow(const std::vector<double>& v) {
  return std::vector<Real>(v.begin(), v.end());
}

// The history callback over the dense arrays; it records which (batch, position) pairs were asked for.
template <class Real>
CompressorHistory<Real> denseHistory(const Problem& p, std::set<std::pair<int64_t, int64_t>>* asked = nullptr) {
  return [&p, asked](int64_t b, int64_t pos, Real* kvRow, Real* scoreRow) {
    if (pos < 0 || pos >= p.layout.start(b)) throw std::logic_error("history asked outside [0, sp_b)");
    if (asked) asked->insert({b, pos});
    const int64_t C = p.layout.channels();
    for (int64_t c = 0; c < C; ++c) {
      kvRow[c] = static_cast<Real>(p.histKv[(b * p.maxStart + pos) * C + c]);
      scoreRow[c] = static_cast<Real>(p.histScore[(b * p.maxStart + pos) * C + c]);
    }
  };
}

CompressorOutputs<double> forward(const Problem& p, std::set<std::pair<int64_t, int64_t>>* asked = nullptr) {
  CompressorInputs<double> in;
  in.layout = p.layout;
  in.x = p.x.data();
  in.wkv = p.wkv.data();
  in.wgate = p.wgate.data();
  in.ape = p.ape.data();
  in.history = denseHistory<double>(p, asked);
  return gradkit::golden::compressor(in);
}

// The backward fed with the forward's own intermediates; padding rows of dCmpKv, softmax_score and kv are set to NaN
// first, since the backward must never read them.
CompressorGradOutputs<double> backward(const Problem& p, const CompressorOutputs<double>& fwd) {
  const CompressorLayout& l = p.layout;
  const int64_t D = l.headDim, ND = l.blockRows() * D;
  std::vector<double> dC = p.dCmpKv, score = fwd.softmaxScore, kv = fwd.kv;
  const std::vector<CompressorRow> map = gradkit::golden::compressorRowMap(l);
  for (size_t row = 0; row < map.size(); ++row) {
    if (map[row].batch >= 0) continue;
    std::fill_n(dC.begin() + row * D, D, kNaN);
    std::fill_n(score.begin() + row * ND, ND, kNaN);
    std::fill_n(kv.begin() + row * ND, ND, kNaN);
  }
  CompressorGradInputs<double> in;
  in.layout = l;
  in.x = p.x.data();
  in.wkv = p.wkv.data();
  in.wgate = p.wgate.data();
  in.dCmpKv = dC.data();
  in.softmaxScore = score.data();
  in.kv = kv.data();
  return gradkit::golden::compressorGrad(in);
}

// loss = sum over valid rows of dCmpKv * cmp_kv.
double loss(const Problem& p) {
  const CompressorOutputs<double> out = forward(p);
  const std::vector<CompressorRow> map = gradkit::golden::compressorRowMap(p.layout);
  const int64_t D = p.layout.headDim;
  double sum = 0;
  for (size_t row = 0; row < map.size(); ++row)
    if (map[row].batch >= 0)
      for (int64_t d = 0; d < D; ++d) sum += p.dCmpKv[row * D + d] * out.cmpKv[row * D + d];
  return sum;
}

// Fourth-order central difference of the loss in one input value. Unread (NaN) values have derivative 0.
double numericDerivative(Problem& p, std::vector<double>& values, size_t index) {
  const double saved = values[index];
  if (std::isnan(saved)) return 0;
  const double h = 1e-3;
  const auto at = [&](double offset) {
    values[index] = saved + offset;
    const double v = loss(p);
    values[index] = saved;
    return v;
  };
  return (8 * (at(h) - at(-h)) - (at(2 * h) - at(-2 * h))) / (12 * h);
}

struct Worst {
  double dX = 0, dWkv = 0, dWgate = 0, dApe = 0;
};

// Compares one analytic gradient with the numeric one over every value of `values`; returns the worst error and the
// number of analytic entries that are clearly non-zero (so that a test of zeros against zeros cannot pass).
std::pair<double, int64_t> checkGradient(Problem& p, std::vector<double>& values, const std::vector<double>& analytic,
                                         const char* name) {
  // Tolerance: the 4th-order difference with h = 1e-3 has a truncation error ~h^4 * |f'''''| ~ 1e-12 and a rounding
  // error ~ eps * |loss| / h ~ 1e-12 for these O(1) losses (measured worst 1.1e-12); 1e-10 leaves a factor 100 of
  // room, while any wrong or missing term (a dropped row, a wrong position) is O(1e-2) or more.
  const double tolerance = 1e-10;
  double worst = 0;
  int64_t nonZero = 0;
  for (size_t i = 0; i < values.size(); ++i) {
    const double numeric = numericDerivative(p, values, i);
    const double error = std::fabs(numeric - analytic[i]);
    worst = std::max(worst, error);
    if (std::fabs(analytic[i]) > 1e-3) ++nonZero;
    if (!(error <= tolerance * (1 + std::fabs(analytic[i])))) {
      ADD_FAILURE() << name << "[" << i << "]: analytic " << analytic[i] << " numeric " << numeric;
      return {worst, nonZero};
    }
  }
  return {worst, nonZero};
}

// BSH: five batches with start_pos 0, 1, cr-1, cr, cr+2 and seqused shorter than S in some of them.
CompressorLayout bshLayout(int64_t cr, int64_t coff) {
  CompressorLayout l;
  l.th = false;
  l.batch = 5;
  l.seqLen = 2 * cr + 3;
  l.hidden = 3 + (cr + coff) % 6;
  l.headDim = 2 + cr % 3;
  l.coff = coff;
  l.cmpRatio = cr;
  l.startPos = {0, 1, cr - 1, cr, cr + 2};
  l.seqused = {l.seqLen, l.seqLen - 2, l.seqLen, l.seqLen - 1, l.seqLen - 3};
  return l;
}

// TH: six batches, one empty, the same start positions, seqused tails, and two trailing rows no batch owns.
CompressorLayout thLayout(int64_t cr, int64_t coff) {
  CompressorLayout l;
  l.th = true;
  l.batch = 6;
  const std::vector<int64_t> lengths = {2 * cr + 3, 0, cr + 1, 3 * cr, 2, cr + 2};
  l.cuSeqlens = {0};
  for (int64_t len : lengths) l.cuSeqlens.push_back(l.cuSeqlens.back() + len);
  l.tokens = l.cuSeqlens.back() + 2;
  l.hidden = 8 - (cr + coff) % 4;
  l.headDim = 4 - cr % 3;
  l.coff = coff;
  l.cmpRatio = cr;
  l.startPos = {0, 3, 1, cr - 1, cr, cr + 2};
  l.seqused = {lengths[0], 0, lengths[2], lengths[3] - 1, 2, lengths[5] - 1};
  return l;
}

TEST(CompressorGolden, BackwardMatchesFiniteDifferences) {
  Worst worst;
  for (bool th : {false, true}) {
    for (int64_t cr : {2, 3, 4}) {
      for (int64_t coff : {1, 2}) {
        SCOPED_TRACE(testing::Message() << (th ? "TH" : "BSH") << " cr " << cr << " coff " << coff);
        Problem p = randomProblem(th ? thLayout(cr, coff) : bshLayout(cr, coff), 1000 + cr * 10 + coff + th * 100);
        const CompressorLayout& l = p.layout;
        std::set<std::pair<int64_t, int64_t>> asked;
        const CompressorOutputs<double> fwd = forward(p, &asked);
        EXPECT_FALSE(asked.empty());  // the start positions >= 1 make blocks read history rows
        const CompressorGradOutputs<double> grad = backward(p, fwd);

        // Tokens outside every block (uncompressed tails, beyond seqused, rows no batch owns): dX exactly 0.
        std::vector<char> inBlock(static_cast<size_t>(l.totalTokens()), 0);
        for (int64_t b = 0; b < l.batch; ++b)
          for (int64_t i = 0; i < l.length(b); ++i) inBlock[l.firstToken(b) + i] = compressed(l, b, i);
        int64_t tails = 0;
        for (int64_t t = 0; t < l.totalTokens(); ++t) {
          if (inBlock[t]) continue;
          ++tails;
          for (int64_t h = 0; h < l.hidden; ++h) ASSERT_EQ(grad.dX[t * l.hidden + h], 0.0) << "token " << t;
        }
        EXPECT_GT(tails, 4);

        const auto [ex, nx] = checkGradient(p, p.x, grad.dX, "dX");
        const auto [ek, nk] = checkGradient(p, p.wkv, grad.dWkv, "dWkv");
        const auto [eg, ng] = checkGradient(p, p.wgate, grad.dWgate, "dWgate");
        const auto [ea, na] = checkGradient(p, p.ape, grad.dApe, "dApe");
        EXPECT_GT(nx, l.hidden * 4);
        EXPECT_GT(nk, l.channels() * l.hidden / 2);
        EXPECT_GT(ng, l.channels() * l.hidden / 2);
        EXPECT_GT(na, l.channels());
        worst.dX = std::max(worst.dX, ex);
        worst.dWkv = std::max(worst.dWkv, ek);
        worst.dWgate = std::max(worst.dWgate, eg);
        worst.dApe = std::max(worst.dApe, ea);
      }
    }
  }
  std::printf("worst |finite difference - golden|: dX %.3g dWkv %.3g dWgate %.3g dApe %.3g\n", worst.dX, worst.dWkv,
              worst.dWgate, worst.dApe);
}

// Spec 3.3's worked example: TH cu = [0,5,5,13], start_pos = [0,0,3], cr = 4 -> n = [1,0,2], R = 6.
TEST(CompressorGolden, WorkedExampleRowPlacement) {
  for (int64_t coff : {1, 2}) {
    SCOPED_TRACE(testing::Message() << "coff " << coff);
    CompressorLayout l;
    l.th = true;
    l.batch = 3;
    l.cuSeqlens = {0, 5, 5, 13};
    l.tokens = 13;
    l.hidden = 5;
    l.headDim = 3;
    l.coff = coff;
    l.cmpRatio = 4;
    l.startPos = {0, 0, 3};
    EXPECT_EQ(l.blocks(0), 1);
    EXPECT_EQ(l.blocks(1), 0);
    EXPECT_EQ(l.blocks(2), 2);
    ASSERT_EQ(l.outputRows(), 6);
    const std::vector<CompressorRow> map = gradkit::golden::compressorRowMap(l);
    const std::vector<std::pair<int64_t, int64_t>> expected = {{0, 0}, {2, 0}, {2, 1}, {-1, -1}, {-1, -1}, {-1, -1}};
    for (size_t r = 0; r < expected.size(); ++r) {
      EXPECT_EQ(map[r].batch, expected[r].first) << "row " << r;
      EXPECT_EQ(map[r].block, expected[r].second) << "row " << r;
    }

    Problem p = randomProblem(l, 77 + static_cast<uint32_t>(coff));
    std::set<std::pair<int64_t, int64_t>> asked;
    const CompressorOutputs<double> fwd = forward(p, &asked);
    // Batch 2's block 0 = positions 0..3: 0..2 from the cache. (coff 2: block 1's prev half is that same block.)
    EXPECT_EQ(asked, (std::set<std::pair<int64_t, int64_t>>{{2, 0}, {2, 1}, {2, 2}}));

    // Recompute row 1 (batch 2, block 0) by hand, cur half: channels [cD - D, cD), rows r = 0..3 at positions 0..3;
    // position 3 is batch 2's token 0 = flat row 5. For coff 2 the prev half is block -1, all padding.
    const int64_t H = l.hidden, D = l.headDim, C = l.channels(), cur = (coff - 1) * D;
    for (int64_t d = 0; d < D; ++d) {
      double z[4], k[4];
      for (int64_t r = 0; r < 3; ++r) {
        z[r] = p.histScore[(2 * p.maxStart + r) * C + cur + d];
        k[r] = p.histKv[(2 * p.maxStart + r) * C + cur + d];
      }
      z[3] = p.ape[3 * C + cur + d];
      k[3] = 0;
      for (int64_t h = 0; h < H; ++h) {
        z[3] += p.x[5 * H + h] * p.wgate[(cur + d) * H + h];
        k[3] += p.x[5 * H + h] * p.wkv[(cur + d) * H + h];
      }
      double top = z[0], sum = 0, pooled = 0;
      for (double v : z) top = std::max(top, v);
      for (double v : z) sum += std::exp(v - top);
      for (int r = 0; r < 4; ++r) pooled += std::exp(z[r] - top) / sum * k[r];
      EXPECT_NEAR(fwd.cmpKv[1 * D + d], pooled, 1e-14);
    }
    // Rows 3..5 are padding: zero everywhere.
    const int64_t ND = l.blockRows() * D;
    for (int64_t row = 3; row < 6; ++row) {
      for (int64_t d = 0; d < D; ++d) EXPECT_EQ(fwd.cmpKv[row * D + d], 0.0);
      for (int64_t i = 0; i < ND; ++i) {
        EXPECT_EQ(fwd.softmaxScore[row * ND + i], 0.0);
        EXPECT_EQ(fwd.kv[row * ND + i], 0.0);
      }
    }
    // Gradient: batch 0's token 4 and batch 2's tokens 5..7 (positions 8..10) are the uncompressed tail.
    const CompressorGradOutputs<double> grad = backward(p, fwd);
    for (int64_t t = 0; t < 13; ++t) {
      const bool tail = t == 4 || t >= 10;
      double norm = 0;
      for (int64_t h = 0; h < H; ++h) norm += std::fabs(grad.dX[t * H + h]);
      if (tail) {
        EXPECT_EQ(norm, 0.0) << "token " << t;
      } else {
        EXPECT_GT(norm, 0.0) << "token " << t;
      }
    }
  }
}

// dZ of one block row by the formula of spec 4.2, from the forward's stored S and K.
double dZOf(const CompressorOutputs<double>& fwd, const std::vector<double>& dC, int64_t row, int64_t n, int64_t d,
            int64_t N, int64_t D) {
  const double* s = fwd.softmaxScore.data() + row * N * D;
  const double* k = fwd.kv.data() + row * N * D;
  double w = 0;
  for (int64_t m = 0; m < N; ++m) w += s[m * D + d] * k[m * D + d];
  return dC[row * D + d] * s[n * D + d] * (k[n * D + d] - w);
}

// Spec 4.3's worked example: cr = 4, coff = 2, sp = 6, u = 9 (BSH, S = 11).
TEST(CompressorGolden, WorkedExampleApeRouting) {
  CompressorLayout l;
  l.batch = 1;
  l.seqLen = 11;
  l.hidden = 5;
  l.headDim = 3;
  l.coff = 2;
  l.cmpRatio = 4;
  l.startPos = {6};
  l.seqused = {9};
  EXPECT_EQ(l.blocks(0), 2);
  Problem p = randomProblem(l, 4321);
  std::set<std::pair<int64_t, int64_t>> asked;
  const CompressorOutputs<double> fwd = forward(p, &asked);
  // Block 0 (q = 1): cur rows 0,1 = positions 4,5 and the prev half = positions 0..3 from the cache; block 1's prev
  // half rows 0,1 are positions 4,5 again.
  EXPECT_EQ(asked, (std::set<std::pair<int64_t, int64_t>>{{0, 0}, {0, 1}, {0, 2}, {0, 3}, {0, 4}, {0, 5}}));
  const CompressorGradOutputs<double> grad = backward(p, fwd);
  const int64_t D = 3, C = 6, N = 8, H = 5;
  // Interleaved rows: n = 2r + h. prev channels [0, D): only block 1 rows r = 2, 3 (tokens 0, 1).
  // cur channels [D, 2D): block 0 rows r = 2, 3 (tokens 0, 1) and block 1 rows 0..3 (tokens 2..5).
  for (int64_t d = 0; d < D; ++d) {
    EXPECT_EQ(grad.dApe[0 * C + d], 0.0);
    EXPECT_EQ(grad.dApe[1 * C + d], 0.0);
    for (int64_t r : {2, 3}) EXPECT_NEAR(grad.dApe[r * C + d], dZOf(fwd, p.dCmpKv, 1, 2 * r, d, N, D), 1e-15);
    for (int64_t r : {0, 1}) EXPECT_NEAR(grad.dApe[r * C + D + d], dZOf(fwd, p.dCmpKv, 1, 2 * r + 1, d, N, D), 1e-15);
    for (int64_t r : {2, 3}) {
      const double both = dZOf(fwd, p.dCmpKv, 0, 2 * r + 1, d, N, D) + dZOf(fwd, p.dCmpKv, 1, 2 * r + 1, d, N, D);
      EXPECT_NEAR(grad.dApe[r * C + D + d], both, 1e-15);
    }
  }
  // Tokens 6..8 (positions 12..14) are the tail, 9..10 beyond seqused: dX exactly 0; tokens 0..5 get gradient.
  for (int64_t t = 0; t < 11; ++t) {
    double norm = 0;
    for (int64_t h = 0; h < H; ++h) norm += std::fabs(grad.dX[t * H + h]);
    if (t >= 6) {
      EXPECT_EQ(norm, 0.0) << "token " << t;
    } else {
      EXPECT_GT(norm, 0.0) << "token " << t;
    }
  }
}

// coff 2 rows are interleaved (2r = prev, 2r+1 = cur), the prev half of block 0 with sp = 0 is padding (S = 0,
// K = 0), and output rows without a block are zero.
TEST(CompressorGolden, InterleavedOrderAndPaddingRows) {
  const int64_t cr = 3;
  CompressorLayout l;
  l.batch = 2;
  l.seqLen = 2 * cr + 1;
  l.hidden = 4;
  l.headDim = 2;
  l.coff = 2;
  l.cmpRatio = cr;
  l.seqused = {l.seqLen, cr - 1};  // batch 0: 2 blocks + 1 tail token; batch 1: no block
  Problem p = randomProblem(l, 99);
  const CompressorOutputs<double> fwd = forward(p);
  const int64_t H = l.hidden, D = l.headDim, C = l.channels(), N = l.blockRows(), rowsPerBatch = 3;
  ASSERT_EQ(l.outputRows(), 2 * rowsPerBatch);
  const auto kvOf = [&](int64_t token, int64_t channel) {
    double sum = 0;
    for (int64_t h = 0; h < H; ++h) sum += p.x[token * H + h] * p.wkv[channel * H + h];
    return sum;
  };
  for (int64_t d = 0; d < D; ++d) {
    for (int64_t block = 0; block < 2; ++block) {
      double total = 0;
      for (int64_t n = 0; n < N; ++n) total += fwd.softmaxScore[(block * N + n) * D + d];
      EXPECT_NEAR(total, 1.0, 1e-15);
    }
    for (int64_t r = 0; r < cr; ++r) {
      // Block 0: prev rows padding, cur rows = tokens 0..cr-1 through channels [D, 2D).
      EXPECT_EQ(fwd.softmaxScore[(2 * r) * D + d], 0.0);
      EXPECT_EQ(fwd.kv[(2 * r) * D + d], 0.0);
      EXPECT_NEAR(fwd.kv[(2 * r + 1) * D + d], kvOf(r, D + d), 1e-15);
      EXPECT_GT(fwd.softmaxScore[(2 * r + 1) * D + d], 0.0);
      // Block 1: prev rows = tokens 0..cr-1 through channels [0, D), cur rows = tokens cr..2cr-1.
      EXPECT_NEAR(fwd.kv[(N + 2 * r) * D + d], kvOf(r, d), 1e-15);
      EXPECT_NEAR(fwd.kv[(N + 2 * r + 1) * D + d], kvOf(cr + r, D + d), 1e-15);
    }
  }
  (void)C;
  // Row 2 (batch 0 has 2 blocks) and rows 3..5 (batch 1 has none) are padding.
  for (int64_t row = 2; row < 6; ++row) {
    for (int64_t d = 0; d < D; ++d) EXPECT_EQ(fwd.cmpKv[row * D + d], 0.0);
    for (int64_t i = 0; i < N * D; ++i) {
      EXPECT_EQ(fwd.softmaxScore[row * N * D + i], 0.0);
      EXPECT_EQ(fwd.kv[row * N * D + i], 0.0);
    }
  }
}

// No compressed block at all: every gradient is zero, and x (all NaN) is never read by the backward.
TEST(CompressorGolden, NoBlockGivesZeroGradients) {
  CompressorLayout l;
  l.th = true;
  l.batch = 2;
  l.cuSeqlens = {0, 2, 3};
  l.tokens = 3;
  l.hidden = 3;
  l.headDim = 2;
  l.coff = 2;
  l.cmpRatio = 4;
  Problem p = randomProblem(l, 5);
  const CompressorOutputs<double> fwd = forward(p);
  EXPECT_EQ(l.outputRows(), 2);
  for (double v : fwd.cmpKv) EXPECT_EQ(v, 0.0);
  std::fill(p.x.begin(), p.x.end(), kNaN);
  const CompressorGradOutputs<double> grad = backward(p, fwd);
  for (const std::vector<double>* g : {&grad.dX, &grad.dWkv, &grad.dWgate, &grad.dApe})
    for (double v : *g) EXPECT_EQ(v, 0.0);
}

TEST(CompressorGolden, RejectsInconsistentLayouts) {
  CompressorLayout l = thLayout(4, 2);
  l.seqused[0] = l.length(0) + 1;
  EXPECT_THROW(gradkit::golden::checkCompressorLayout(l), std::invalid_argument);
  l = thLayout(4, 2);
  l.cuSeqlens[2] = l.cuSeqlens[1] - 1;
  EXPECT_THROW(gradkit::golden::checkCompressorLayout(l), std::invalid_argument);
  l = bshLayout(4, 1);
  l.startPos[1] = -1;
  EXPECT_THROW(gradkit::golden::checkCompressorLayout(l), std::invalid_argument);
  l = bshLayout(4, 1);
  l.coff = 3;
  EXPECT_THROW(gradkit::golden::checkCompressorLayout(l), std::invalid_argument);
  // A block needing the cache without a history callback.
  Problem p = randomProblem(bshLayout(4, 1), 3);
  CompressorInputs<double> in;
  in.layout = p.layout;
  in.x = p.x.data();
  in.wkv = p.wkv.data();
  in.wgate = p.wgate.data();
  in.ape = p.ape.data();
  EXPECT_THROW(gradkit::golden::compressor(in), std::invalid_argument);
}

// Largest |a - b| over max |b| (normwise), over the entries of b.
double normwise(const std::vector<float>& a, const std::vector<double>& b) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(b[i]));
  }
  return worst / scale;
}

// The float instantiation (naive fp32) stays close to the double one, and is a genuinely different computation.
TEST(CompressorGolden, FloatCloseToDouble) {
  for (int64_t coff : {1, 2}) {
    SCOPED_TRACE(testing::Message() << "coff " << coff);
    CompressorLayout l = thLayout(4, coff);
    l.hidden = 64;
    l.headDim = 8;
    Problem p = randomProblem(l, 2024 + static_cast<uint32_t>(coff));
    const CompressorOutputs<double> fwd = forward(p);
    const CompressorGradOutputs<double> grad = backward(p, fwd);

    const std::vector<float> x = narrow<float>(p.x), wkv = narrow<float>(p.wkv), wgate = narrow<float>(p.wgate);
    const std::vector<float> ape = narrow<float>(p.ape), dC = narrow<float>(p.dCmpKv);
    CompressorInputs<float> in;
    in.layout = l;
    in.x = x.data();
    in.wkv = wkv.data();
    in.wgate = wgate.data();
    in.ape = ape.data();
    in.history = denseHistory<float>(p);
    const CompressorOutputs<float> fwdF = gradkit::golden::compressor(in);
    CompressorGradInputs<float> gin;
    gin.layout = l;
    gin.x = x.data();
    gin.wkv = wkv.data();
    gin.wgate = wgate.data();
    gin.dCmpKv = dC.data();
    gin.softmaxScore = fwdF.softmaxScore.data();
    gin.kv = fwdF.kv.data();
    const CompressorGradOutputs<float> gradF = gradkit::golden::compressorGrad(gin);

    // fp32 sums of 64 products and softmaxes of 8 rows: a few ulp of 6e-8 each, far below 1e-5; far above 1e-9.
    const double errors[] = {normwise(fwdF.cmpKv, fwd.cmpKv), normwise(fwdF.softmaxScore, fwd.softmaxScore),
                             normwise(fwdF.kv, fwd.kv),       normwise(gradF.dX, grad.dX),
                             normwise(gradF.dWkv, grad.dWkv), normwise(gradF.dWgate, grad.dWgate),
                             normwise(gradF.dApe, grad.dApe)};
    for (double e : errors) {
      EXPECT_LT(e, 1e-5);
      EXPECT_GT(e, 1e-10);
    }
  }
}

}  // namespace
