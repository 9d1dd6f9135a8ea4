// CompressorGrad values: the plan run directly on aclTensor views (and through the C API) against the fp64 golden
// (golden/compressor.h), with the naive fp32 golden as the yardstick of the precision gate (double-benchmark idea:
// our error vs fp64 at most about twice the naive fp32 computation's); exact zeros where no block routes; SIMD
// against scalar kernels and 1 / 2 / 3 threads bit for bit; BSH and TH, coff 1 and 2, cmpRatio 2..128, D 128 and
// 512, start_pos 0 / unaligned / beyond cmpRatio, seqused tails, empty batches, TH rows after cu_seqlens[B], no block
// at all, BF16 and FP16, non-contiguous inputs and outputs (and nothing written outside the output views).
//
// softmaxScore and kv come from the golden forward (golden::compressor<double>, with a random state-cache history and
// ape), so they are what a forward call hands the backward; some cases use random softmaxes instead (upstream's
// pathway 2), with the forward's zeros in padding rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "aclnnop/aclnn_compressor_grad.h"
#include "core/parallel.h"
#include "golden/compressor.h"
#include "gradkit/float_convert.h"
#include "opapi/tensor.h"
#include "ops/compressor/compressor_grad_plan.h"
#include "ops/compressor/kernels/compressor_grad_kernel.h"
#include "ops/op_test_util.h"
#include "ops/placed_tensor.h"

namespace gradkit::test {
namespace {

using golden::CompressorLayout;

struct Case {
  bool th = false;
  int64_t batch = 1, seqLen = 8;  // BSH
  std::vector<int64_t> cu;        // TH: cu_seqlens
  int64_t tokens = 0;             // TH: rows of x (>= cu[B])
  int64_t hidden = 1024, headDim = 128, coff = 2, cr = 4;
  std::vector<int64_t> seqused, startPos;
  aclDataType dtype = ACL_BF16;
  bool randomSoftmax = false;  // upstream's pathway 2 instead of the golden forward
  bool stridedInputs = false, stridedOutputs = false;
  ops::CompressorGradOptions options;
  uint32_t seed = 1;
};

std::string describe(const Case& c) {
  std::string s = c.th ? "TH T=" + std::to_string(c.tokens) + " cu=["
                       : "BSH B=" + std::to_string(c.batch) + " S=" + std::to_string(c.seqLen);
  if (c.th) {
    for (int64_t v : c.cu) s += std::to_string(v) + ",";
    s += "]";
  }
  s += " H=" + std::to_string(c.hidden) + " D=" + std::to_string(c.headDim) + " coff=" + std::to_string(c.coff) +
       " cr=" + std::to_string(c.cr) + (c.dtype == ACL_BF16 ? " bf16" : " fp16");
  if (!c.seqused.empty()) {
    s += " seqused=[";
    for (int64_t v : c.seqused) s += std::to_string(v) + ",";
    s += "]";
  }
  if (!c.startPos.empty()) {
    s += " start=[";
    for (int64_t v : c.startPos) s += std::to_string(v) + ",";
    s += "]";
  }
  if (c.randomSoftmax) s += " random-softmax";
  if (c.stridedInputs) s += " strided-in";
  if (c.stridedOutputs) s += " strided-out";
  if (c.options.chunkRows > 0) s += " chunk=" + std::to_string(c.options.chunkRows);
  return s;
}

CompressorLayout layoutOf(const Case& c) {
  CompressorLayout l;
  l.th = c.th;
  l.batch = c.th ? static_cast<int64_t>(c.cu.size()) - 1 : c.batch;
  l.seqLen = c.th ? 0 : c.seqLen;
  l.tokens = c.th ? c.tokens : 0;
  l.hidden = c.hidden, l.headDim = c.headDim, l.coff = c.coff, l.cmpRatio = c.cr;
  l.cuSeqlens = c.cu, l.seqused = c.seqused, l.startPos = c.startPos;
  return l;
}

uint16_t narrow(aclDataType dtype, float value) {
  return dtype == ACL_FLOAT16 ? floatToHalf(value) : floatToBf16(value);
}
float widen(aclDataType dtype, uint16_t bits) { return dtype == ACL_FLOAT16 ? halfToFloat(bits) : bf16ToFloat(bits); }

// One problem: the inputs in their stored types.
struct Problem {
  Case c;
  CompressorLayout layout;
  std::vector<uint16_t> x, wkv, wgate, dCmpKv;  // x's dtype
  std::vector<float> softmaxScore, kv;
};

Problem makeProblem(const Case& c) {
  Problem p;
  p.c = c;
  p.layout = layoutOf(c);
  const CompressorLayout& l = p.layout;
  std::mt19937 rng(c.seed);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::normal_distribution<double> normal(0.0, 1.0);
  const int64_t t = l.totalTokens(), ch = l.channels(), rows = l.outputRows(), n = l.blockRows(), d = c.headDim;
  const auto narrowed = [&](int64_t count, double scale) {
    std::vector<uint16_t> bits(static_cast<size_t>(count));
    for (uint16_t& b : bits) b = narrow(c.dtype, static_cast<float>(scale * uniform(rng)));
    return bits;
  };
  p.x = narrowed(t * c.hidden, 1.0);
  // Weights ~ 1/sqrt(H) so projections are O(1) and the softmax is neither flat nor one-hot.
  p.wkv = narrowed(ch * c.hidden, 2.0 / std::sqrt(static_cast<double>(c.hidden)));
  p.wgate = narrowed(ch * c.hidden, 2.0 / std::sqrt(static_cast<double>(c.hidden)));
  p.dCmpKv = narrowed(rows * d, 1.0);
  const std::vector<golden::CompressorRow> map = golden::compressorRowMap(l);
  p.softmaxScore.assign(static_cast<size_t>(rows * n * d), 0.0f);
  p.kv.assign(static_cast<size_t>(rows * n * d), 0.0f);
  if (c.randomSoftmax) {
    // kv = randn, softmaxScore = softmax over the N rows of randn; the forward's zeros in padding rows (positions < 0).
    for (int64_t row = 0; row < rows; ++row) {
      if (map[static_cast<size_t>(row)].batch < 0) continue;
      const int64_t b = map[static_cast<size_t>(row)].batch, j = map[static_cast<size_t>(row)].block;
      const int64_t q = l.start(b) / c.cr + j;
      for (int64_t col = 0; col < d; ++col) {
        std::vector<double> e(static_cast<size_t>(n));
        double sum = 0;
        for (int64_t r = 0; r < n; ++r) {
          const int64_t position = (q - (c.coff - 1) + r % c.coff) * c.cr + r / c.coff;
          const size_t at = static_cast<size_t>((row * n + r) * d + col);
          const bool padding = position < 0;
          p.kv[at] = padding ? 0.0f : static_cast<float>(normal(rng));
          e[static_cast<size_t>(r)] = padding ? 0.0 : std::exp(normal(rng));
          sum += e[static_cast<size_t>(r)];
        }
        for (int64_t r = 0; r < n; ++r) {
          p.softmaxScore[static_cast<size_t>((row * n + r) * d + col)] = static_cast<float>(e[r] / sum);
        }
      }
    }
    return p;
  }
  // The golden forward on the same x, weights, a random ape and a random state-cache history.
  std::vector<double> x(p.x.size()), wkv(p.wkv.size()), wgate(p.wgate.size()), ape(static_cast<size_t>(c.cr * ch));
  for (size_t i = 0; i < x.size(); ++i) x[i] = widen(c.dtype, p.x[i]);
  for (size_t i = 0; i < wkv.size(); ++i) wkv[i] = widen(c.dtype, p.wkv[i]);
  for (size_t i = 0; i < wgate.size(); ++i) wgate[i] = widen(c.dtype, p.wgate[i]);
  for (double& a : ape) a = 0.5 * uniform(rng);
  golden::CompressorInputs<double> in;
  in.layout = l;
  in.x = x.data(), in.wkv = wkv.data(), in.wgate = wgate.data(), in.ape = ape.data();
  const uint32_t historySeed = c.seed * 7919u + 13u;
  in.history = [ch, historySeed](int64_t batch, int64_t position, double* kvState, double* scoreState) {
    std::mt19937 local(historySeed + static_cast<uint32_t>(batch * 100003 + position));
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (int64_t i = 0; i < ch; ++i) {
      kvState[i] = u(local);
      scoreState[i] = u(local);
    }
  };
  const golden::CompressorOutputs<double> out = golden::compressor(in);
  for (size_t i = 0; i < p.softmaxScore.size(); ++i) {
    p.softmaxScore[i] = static_cast<float>(out.softmaxScore[i]);
    p.kv[i] = static_cast<float>(out.kv[i]);
  }
  return p;
}

struct Result {
  std::vector<uint16_t> dX, dWkv, dWgate;
  std::vector<float> dApe;
  bool gapsIntact = true;
};

bool sameBits(const Result& a, const Result& b) {
  return a.dX == b.dX && a.dWkv == b.dWkv && a.dWgate == b.dWgate && a.dApe.size() == b.dApe.size() &&
         std::memcmp(a.dApe.data(), b.dApe.data(), a.dApe.size() * sizeof(float)) == 0;
}

// Every tensor of one call, placed as the case asks.
struct Views {
  std::vector<int32_t> cu, used, start;
  std::optional<Placed> x, wkv, wgate, dCmpKv, softmaxScore, kv, cuSeqlens, seqused, startPos;
  std::optional<Placed> dX, dWkv, dWgate, dApe;

  explicit Views(const Problem& p) {
    const Case& c = p.c;
    const CompressorLayout& l = p.layout;
    const bool si = c.stridedInputs, so = c.stridedOutputs;
    const int64_t ch = l.channels(), rows = l.outputRows(), n = l.blockRows(), d = c.headDim;
    const std::vector<int64_t> xShape =
        c.th ? std::vector<int64_t>{c.tokens, c.hidden} : std::vector<int64_t>{c.batch, c.seqLen, c.hidden};
    const std::vector<int64_t> lead =
        c.th ? std::vector<int64_t>{rows} : std::vector<int64_t>{c.batch, rows / std::max<int64_t>(c.batch, 1)};
    const auto with = [&lead](std::vector<int64_t> tail) {
      std::vector<int64_t> shape = lead;
      shape.insert(shape.end(), tail.begin(), tail.end());
      return shape;
    };
    x.emplace(c.dtype, xShape, p.x.data(), si);
    wkv.emplace(c.dtype, std::vector<int64_t>{ch, c.hidden}, p.wkv.data(), si);
    wgate.emplace(c.dtype, std::vector<int64_t>{ch, c.hidden}, p.wgate.data(), si);
    dCmpKv.emplace(c.dtype, with({d}), p.dCmpKv.data(), si);
    softmaxScore.emplace(ACL_FLOAT, with({n, d}), p.softmaxScore.data(), si);
    kv.emplace(ACL_FLOAT, with({n, d}), p.kv.data(), si);
    const auto ints = [](const std::vector<int64_t>& v) { return std::vector<int32_t>(v.begin(), v.end()); };
    cu = ints(c.cu), used = ints(c.seqused), start = ints(c.startPos);
    if (c.th) cuSeqlens.emplace(ACL_INT32, std::vector<int64_t>{static_cast<int64_t>(cu.size())}, cu.data(), si);
    if (!used.empty()) seqused.emplace(ACL_INT32, std::vector<int64_t>{l.batch}, used.data(), si);
    if (!start.empty()) startPos.emplace(ACL_INT32, std::vector<int64_t>{l.batch}, start.data(), si);
    dX.emplace(c.dtype, xShape, nullptr, so);
    dWkv.emplace(c.dtype, std::vector<int64_t>{ch, c.hidden}, nullptr, so);
    dWgate.emplace(c.dtype, std::vector<int64_t>{ch, c.hidden}, nullptr, so);
    dApe.emplace(ACL_FLOAT, std::vector<int64_t>{c.cr, ch}, nullptr, so);
  }

  ops::CompressorGradArgs args(const Case& c) const {
    return ops::CompressorGradArgs{x->get(),
                                   wkv->get(),
                                   wgate->get(),
                                   dCmpKv->get(),
                                   softmaxScore->get(),
                                   kv->get(),
                                   cuSeqlens ? cuSeqlens->get() : nullptr,
                                   seqused ? seqused->get() : nullptr,
                                   startPos ? startPos->get() : nullptr,
                                   c.cr,
                                   c.coff,
                                   dX->get(),
                                   dWkv->get(),
                                   dWgate->get(),
                                   dApe->get()};
  }

  Result result() const {
    Result r;
    r.dX = dX->gather<uint16_t>();
    r.dWkv = dWkv->gather<uint16_t>();
    r.dWgate = dWgate->gather<uint16_t>();
    r.dApe = dApe->gather<float>();
    r.gapsIntact = dX->gapsIntact() && dWkv->gapsIntact() && dWgate->gapsIntact() && dApe->gapsIntact();
    return r;
  }
};

// Plans and runs the call directly (no argument checks), optionally with a given kernel table.
Result runPlan(const Problem& p, const kernels::CompressorGradKernels* table = nullptr) {
  Views views(p);
  ops::CompressorGradPlan plan = ops::planCompressorGrad(views.args(p.c), p.c.options);
  if (table != nullptr) plan.kernels = table;
  std::vector<uint64_t> workspace(plan.workspace.totalBytes() / 8 + 1);
  EXPECT_EQ(plan.run(workspace.data()), ACLNN_SUCCESS);
  return views.result();
}

template <class Real>
golden::CompressorGradOutputs<Real> runGolden(const Problem& p) {
  const auto wide = [&p](const std::vector<uint16_t>& bits) {
    std::vector<Real> v;
    for (uint16_t b : bits) v.push_back(static_cast<Real>(widen(p.c.dtype, b)));
    return v;
  };
  const std::vector<Real> x = wide(p.x), wkv = wide(p.wkv), wgate = wide(p.wgate), dC = wide(p.dCmpKv);
  const std::vector<Real> s(p.softmaxScore.begin(), p.softmaxScore.end()), k(p.kv.begin(), p.kv.end());
  golden::CompressorGradInputs<Real> in;
  in.layout = p.layout;
  in.x = x.data(), in.wkv = wkv.data(), in.wgate = wgate.data(), in.dCmpKv = dC.data();
  in.softmaxScore = s.data(), in.kv = k.data();
  return golden::compressorGrad(in);
}

// The error of one output against the fp64 golden: root mean square and mean relative error (|golden| above a
// floor of 1e-3 of the largest, as small values are judged by their absolute error in the RMS).
struct Error {
  double rms = 0, meanRelative = 0;
};

template <class Value>
Error errorOf(const std::vector<Value>& got, const std::vector<double>& want) {
  double top = 0;
  for (double w : want) top = std::max(top, std::abs(w));
  Error e;
  int64_t counted = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double diff = static_cast<double>(got[i]) - want[i];
    e.rms += diff * diff;
    if (std::abs(want[i]) > 1e-3 * top) {
      e.meanRelative += std::abs(diff) / std::abs(want[i]);
      ++counted;
    }
  }
  e.rms = std::sqrt(e.rms / static_cast<double>(std::max<size_t>(want.size(), 1)));
  e.meanRelative /= static_cast<double>(std::max<int64_t>(counted, 1));
  return e;
}

std::vector<double> widened(aclDataType dtype, const std::vector<uint16_t>& bits) {
  std::vector<double> v;
  for (uint16_t b : bits) v.push_back(widen(dtype, b));
  return v;
}

std::vector<double> roundedNaive(aclDataType dtype, const std::vector<float>& values) {
  std::vector<double> v;
  for (float f : values) v.push_back(widen(dtype, narrow(dtype, f)));
  return v;
}

// The precision gate: each output's RMS and mean relative error vs fp64 at most `ratio` times the naive fp32 golden's
// (its dX / dW rounded to x's dtype like ours), with a floor of a few fp32 ulps of the largest value (both may be
// essentially exact, e.g. dApe of few terms). Returns the worst ratio seen.
double expectWithinGate(const Problem& p, const Result& r, double ratio = 2.0) {
  const std::string label = describe(p.c);
  const golden::CompressorGradOutputs<double> g = runGolden<double>(p);
  const golden::CompressorGradOutputs<float> naive = runGolden<float>(p);
  const aclDataType dt = p.c.dtype;
  double worst = 0;
  const auto check = [&](const std::vector<double>& ours, const std::vector<double>& theirs,
                         const std::vector<double>& want, const char* what, double ulp) {
    double top = 0;
    for (double w : want) top = std::max(top, std::abs(w));
    const Error a = errorOf(ours, want), b = errorOf(theirs, want);
    const double floorRms = ulp * top, floorRel = ulp;
    EXPECT_LE(a.rms, ratio * std::max(b.rms, floorRms))
        << what << " RMS " << a.rms << " vs naive " << b.rms << " " << label;
    EXPECT_LE(a.meanRelative, ratio * std::max(b.meanRelative, floorRel))
        << what << " mean relative " << a.meanRelative << " vs naive " << b.meanRelative << " " << label;
    worst = std::max({worst, a.rms / std::max(b.rms, floorRms), a.meanRelative / std::max(b.meanRelative, floorRel)});
  };
  const double fp32Ulps = 8 * 1.2e-7;
  check(widened(dt, r.dX), roundedNaive(dt, naive.dX), g.dX, "dX", fp32Ulps);
  check(widened(dt, r.dWkv), roundedNaive(dt, naive.dWkv), g.dWkv, "dWkv", fp32Ulps);
  check(widened(dt, r.dWgate), roundedNaive(dt, naive.dWgate), g.dWgate, "dWgate", fp32Ulps);
  check(std::vector<double>(r.dApe.begin(), r.dApe.end()), std::vector<double>(naive.dApe.begin(), naive.dApe.end()),
        g.dApe, "dApe", fp32Ulps);
  // Where the golden is exactly 0 (rows no block routes to, or everything without a block), so are we.
  for (size_t i = 0; i < g.dX.size(); ++i) {
    if (g.dX[i] == 0.0 && r.dX[i] != 0) {
      ADD_FAILURE() << "dX[" << i << "] = " << widen(dt, r.dX[i]) << " where no block routes " << label;
      break;
    }
  }
  EXPECT_TRUE(r.gapsIntact) << "an output was written outside its view " << label;
  return worst;
}

class ThreadCountGuard {
 public:
  ~ThreadCountGuard() { setThreadCount(0); }
};

Case bsh(int64_t b, int64_t s, int64_t coff, int64_t cr, int64_t d = 128) {
  Case c;
  c.batch = b, c.seqLen = s, c.coff = coff, c.cr = cr, c.headDim = d;
  return c;
}

Case th(std::vector<int64_t> cu, int64_t tokens, int64_t coff, int64_t cr, int64_t d = 128) {
  Case c;
  c.th = true, c.cu = std::move(cu), c.tokens = tokens, c.coff = coff, c.cr = cr, c.headDim = d;
  return c;
}

std::vector<Case> goldenCases() {
  std::vector<Case> cases;
  uint32_t seed = 100;
  const auto add = [&](Case c) {
    c.seed = seed++;
    cases.push_back(c);
  };
  // The three named configurations in miniature, both dtypes.
  for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
    Case c4a = bsh(1, 8, 2, 4, 512);  // C4A
    c4a.dtype = dtype;
    add(c4a);
    Case c4li = bsh(2, 12, 2, 4, 128);  // C4Li
    c4li.dtype = dtype;
    add(c4li);
    Case c128a = bsh(1, 256, 1, 128, 512);  // C128A: two blocks
    c128a.dtype = dtype;
    add(c128a);
  }
  // cmpRatio 2, 3, 5 with both coff; start_pos 0, unaligned, beyond cmpRatio; seqused tails (and a batch with none).
  for (int64_t coff : {1, 2}) {
    for (int64_t cr : {2, 3, 5}) {
      Case c = bsh(3, 13, coff, cr);
      c.startPos = {0, cr + 1, 2 * cr + cr - 1};
      c.seqused = {13, 9, 0};
      add(c);
      Case t = th({0, 7, 7, 20}, 23, coff, cr);  // an empty batch and 3 rows after cu[B]
      t.startPos = {1, 0, cr};
      t.dtype = ACL_FLOAT16;
      add(t);
    }
  }
  Case unaligned = bsh(2, 10, 2, 4);  // S = 10 not a multiple of cr, start 3 < cr (prev half of block 0 padding)
  unaligned.startPos = {3, 6};
  add(unaligned);
  Case seqTail = th({0, 9, 21}, 21, 2, 4, 512);
  seqTail.seqused = {6, 12};
  seqTail.startPos = {2, 5};
  add(seqTail);
  Case longRatio = th({0, 130, 300}, 310, 2, 128);  // coff 2 with cr 128: N = 256 rows per block
  longRatio.startPos = {0, 100};
  add(longRatio);
  Case random = bsh(2, 16, 2, 4, 512);  // pathway 2: random softmaxes
  random.randomSoftmax = true;
  random.startPos = {5, 0};
  add(random);
  Case randomTh = th({0, 11, 30}, 33, 1, 5);
  randomTh.randomSoftmax = true;
  randomTh.dtype = ACL_FLOAT16;
  add(randomTh);
  Case wide = bsh(1, 12, 2, 3);  // H = 2048
  wide.hidden = 2048;
  add(wide);
  return cases;
}

// The problems of goldenCases(), made once (the golden forward behind each is the slow part).
const std::vector<Problem>& goldenProblems() {
  static const std::vector<Problem> problems = [] {
    std::vector<Problem> all;
    for (const Case& c : goldenCases()) all.push_back(makeProblem(c));
    return all;
  }();
  return problems;
}

TEST(CompressorGradValues, WithinTheGateOfTheNaiveFp32Golden) {
  double worst = 0;
  for (const Problem& p : goldenProblems()) worst = std::max(worst, expectWithinGate(p, runPlan(p)));
  RecordProperty("worst_ratio_vs_naive_fp32", std::to_string(worst));
}

TEST(CompressorGradValues, ScalarKernelsGiveTheSimdBits) {
  for (const Problem& p : goldenProblems()) {
    EXPECT_TRUE(
        sameBits(runPlan(p, &kernels::kCompressorGradSimdKernels), runPlan(p, &kernels::kCompressorGradScalarKernels)))
        << describe(p.c);
  }
}

TEST(CompressorGradValues, SmallChunksAndPieces) {
  // Chunks of 5 or 7 rows cut blocks (and a batch's last block) in the middle; pieces of 24 channels leave a
  // partial piece and partial vectors.
  for (int64_t chunk : {5, 7}) {
    Case c = th({0, 9, 9, 26}, 30, 2, 4);
    c.startPos = {2, 0, 5};
    c.options.chunkRows = chunk;
    c.options.pieceWidth = 24;
    c.seed = 40 + static_cast<uint32_t>(chunk);
    const Problem p = makeProblem(c);
    const Result simd = runPlan(p, &kernels::kCompressorGradSimdKernels);
    expectWithinGate(p, simd);
    EXPECT_TRUE(sameBits(simd, runPlan(p, &kernels::kCompressorGradScalarKernels))) << describe(c);
    // dApe does not depend on the chunking (each element sums the same terms in the same order).
    Case whole = c;
    whole.options = {};
    const Result one = runPlan(makeProblem(whole));
    EXPECT_EQ(0, std::memcmp(one.dApe.data(), simd.dApe.data(), one.dApe.size() * sizeof(float))) << describe(c);
  }
}

TEST(CompressorGradValues, SameBitsForAnyThreadCount) {
  ThreadCountGuard guard;
  std::vector<Case> cases;
  Case a = th({0, 40, 47, 90}, 96, 2, 4, 512);
  a.startPos = {3, 0, 9};
  a.options.chunkRows = 32;
  cases.push_back(a);
  Case b = bsh(2, 136, 1, 128, 512);
  b.startPos = {64, 0};
  b.dtype = ACL_FLOAT16;
  cases.push_back(b);
  for (const Case& c : cases) {
    const Problem p = makeProblem(c);
    for (const auto* table : {&kernels::kCompressorGradSimdKernels, &kernels::kCompressorGradScalarKernels}) {
      setThreadCount(1);
      const Result one = runPlan(p, table);
      expectWithinGate(p, one);
      for (int threads : {2, 3}) {
        setThreadCount(threads);
        EXPECT_TRUE(sameBits(one, runPlan(p, table))) << threads << " threads " << describe(c);
      }
    }
  }
}

TEST(CompressorGradValues, NonContiguousInputsAndOutputs) {
  Case c = th({0, 10, 19}, 22, 2, 3);
  c.startPos = {4, 0};
  c.seqused = {10, 7};
  c.stridedInputs = true;
  c.stridedOutputs = true;
  const Problem p = makeProblem(c);
  const Result strided = runPlan(p);
  expectWithinGate(p, strided);
  Case dense = c;
  dense.stridedInputs = dense.stridedOutputs = false;
  EXPECT_TRUE(sameBits(strided, runPlan(makeProblem(dense))));
  Case mixed = bsh(2, 8, 1, 4, 512);  // strided outputs only
  mixed.stridedOutputs = true;
  const Problem q = makeProblem(mixed);
  expectWithinGate(q, runPlan(q));
}

TEST(CompressorGradValues, NoBlockGivesZeros) {
  // start 1, 2 tokens of cr 4: no aligned block ends; seqused 0; TH with every batch too short. Every output is
  // written (the views start as garbage) and is exactly zero.
  std::vector<Case> cases;
  Case a = bsh(2, 2, 2, 4);
  a.startPos = {1, 0};
  cases.push_back(a);
  Case b = bsh(1, 8, 1, 4, 512);
  b.seqused = {0};
  cases.push_back(b);
  Case t = th({0, 3, 6}, 8, 2, 4);
  t.dtype = ACL_FLOAT16;
  cases.push_back(t);
  for (const Case& c : cases) {
    const Problem p = makeProblem(c);
    const Result r = runPlan(p);
    for (uint16_t v : r.dX) ASSERT_EQ(v, 0) << describe(c);
    for (uint16_t v : r.dWkv) ASSERT_EQ(v, 0) << describe(c);
    for (uint16_t v : r.dWgate) ASSERT_EQ(v, 0) << describe(c);
    for (float v : r.dApe) ASSERT_EQ(v, 0.0f) << describe(c);
    EXPECT_TRUE(r.gapsIntact);
  }
}

TEST(CompressorGradValues, UnroutedRowsAreZero) {
  // TH rows after cu[B], seqused tails, uncompressed tails and an empty batch: their dX rows are exactly 0; every
  // routed row is not all zero (random data).
  Case c = th({0, 11, 11, 25}, 31, 2, 4);
  c.seqused = {9, 0, 14};
  c.startPos = {0, 0, 2};
  const Problem p = makeProblem(c);
  const Result r = runPlan(p);
  const int64_t hidden = c.hidden;
  const auto rowZero = [&](int64_t t) {
    for (int64_t h = 0; h < hidden; ++h) {
      if (r.dX[static_cast<size_t>(t * hidden + h)] != 0) return false;
    }
    return true;
  };
  // Batch 0: positions 0..8 used, blocks end at 8: tokens 0..7 routed. Batch 2: positions 2..15, limit 16: tokens
  // 11..24 routed. Everything else (8..10, 25..30) zero.
  for (int64_t t = 0; t < 31; ++t) {
    const bool routed = t < 8 || (t >= 11 && t < 25);
    EXPECT_EQ(rowZero(t), !routed) << "row " << t;
  }
  expectWithinGate(p, r);
  // x rows that no block reads are never read: NaN there changes nothing (no 0 * NaN reaches dW).
  Problem poisoned = p;
  for (int64_t t = 0; t < 31; ++t) {
    if (t < 8 || (t >= 11 && t < 25)) continue;
    std::fill_n(poisoned.x.begin() + t * hidden, hidden, uint16_t{0x7FC0});
  }
  EXPECT_TRUE(sameBits(r, runPlan(poisoned)));
}

TEST(CompressorGradValues, CompensationKeepsCancellingSumsAccurate) {
  // kv rows nearly equal within each block (K = 8 + tiny noise): K - w cancels to ~1e-6 of K, so dZ and dApe are all
  // cancellation. The naive fp32 golden loses most digits; TwoSum(K, -w) with the compensated w keeps ours close.
  Case c = bsh(1, 64, 2, 8, 128);
  c.randomSoftmax = true;
  c.seed = 77;
  Problem p = makeProblem(c);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> tiny(-1e-5f, 1e-5f);
  for (float& k : p.kv) k = k == 0.0f ? 0.0f : 8.0f + tiny(rng);
  const Result r = runPlan(p);
  const auto g = runGolden<double>(p);
  const auto naive = runGolden<float>(p);
  const Error ours = errorOf(r.dApe, g.dApe), theirs = errorOf(naive.dApe, g.dApe);
  EXPECT_LT(ours.meanRelative, 0.1 * theirs.meanRelative) << ours.meanRelative << " vs naive " << theirs.meanRelative;
  EXPECT_LT(ours.meanRelative, 1e-4);
}

// ---------------------------------------------------------------------------------------------------------------
// Through the C API (checks, executor, stream): the same bits as the plan run directly.
Result runApi(const Problem& p) {
  Views views(p);
  const ops::CompressorGradArgs a = views.args(p.c);
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus status = aclnnCompressorGradGetWorkspaceSize(a.x, a.wkv, a.wgate, a.dCmpKv, a.softmaxScore, a.kv,
                                                                 a.cuSeqlens, a.seqused, a.startPos, a.cmpRatio, a.coff,
                                                                 a.dX, a.dWkv, a.dWgate, a.dApe, &size, &executor);
  EXPECT_EQ(status, ACLNN_SUCCESS) << recentError();
  if (status != ACLNN_SUCCESS) return {};
  std::vector<uint64_t> workspace(size / 8 + 1);
  EXPECT_EQ(aclnnCompressorGrad(workspace.data(), size, executor, nullptr), ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << recentError();
  return views.result();
}

TEST(CompressorGradValues, CApiMatchesThePlan) {
  Case a = bsh(2, 8, 2, 4, 512);
  a.startPos = {0, 5};
  a.stridedInputs = true;
  Case b = th({0, 6, 20}, 24, 1, 3);
  b.seqused = {6, 11};
  b.dtype = ACL_FLOAT16;
  b.stridedOutputs = true;
  for (const Case& c : {a, b}) {
    const Problem p = makeProblem(c);
    const Result api = runApi(p);
    expectWithinGate(p, api);
    EXPECT_TRUE(sameBits(api, runPlan(p))) << describe(c);
  }
}

}  // namespace
}  // namespace gradkit::test
