// Shared by the CompressorGrad value tests: a case (layout, dtype, placement), its problem (inputs in their stored
// types, softmaxScore and kv from the golden forward), every tensor placed as the case asks, the plan run directly,
// the goldens, and the precision gate (our error vs fp64 at most about twice the naive fp32 computation's).
#pragma once

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

namespace gradkit::test::cgrad {

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

inline std::string describe(const Case& c) {
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

inline CompressorLayout layoutOf(const Case& c) {
  CompressorLayout l;
  l.th = c.th;
  l.batch = c.th ? static_cast<int64_t>(c.cu.size()) - 1 : c.batch;
  l.seqLen = c.th ? 0 : c.seqLen;
  l.tokens = c.th ? c.tokens : 0;
  l.hidden = c.hidden, l.headDim = c.headDim, l.coff = c.coff, l.cmpRatio = c.cr;
  l.cuSeqlens = c.cu, l.seqused = c.seqused, l.startPos = c.startPos;
  return l;
}

inline uint16_t narrow(aclDataType dtype, float value) {
  return dtype == ACL_FLOAT16 ? floatToHalf(value) : floatToBf16(value);
}
inline float widen(aclDataType dtype, uint16_t bits) {
  return dtype == ACL_FLOAT16 ? halfToFloat(bits) : bf16ToFloat(bits);
}

// One problem: the inputs in their stored types.
struct Problem {
  Case c;
  CompressorLayout layout;
  std::vector<uint16_t> x, wkv, wgate, dCmpKv;  // x's dtype
  std::vector<float> softmaxScore, kv;
};

inline Problem makeProblem(const Case& c) {
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

inline bool sameBits(const Result& a, const Result& b) {
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
inline Result runPlan(const Problem& p, const kernels::CompressorGradKernels* table = nullptr) {
  Views views(p);
  ops::CompressorGradPlan plan = ops::planCompressorGrad(views.args(p.c), p.c.options);
  if (table != nullptr) plan.kernels = table;
  std::vector<uint64_t> workspace(plan.workspace.totalBytes() / 8 + 1);
  EXPECT_EQ(plan.run(workspace.data()), ACLNN_SUCCESS);
  return views.result();
}

/** The golden in Real; roundRouted: dNewKv, dNewScore rounded to bf16 first (upstream's "two" golden). */
template <class Real>
golden::CompressorGradOutputs<Real> runGolden(const Problem& p, bool roundRouted = false) {
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
  in.roundRoutedToBf16 = roundRouted;
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

inline std::vector<double> widened(aclDataType dtype, const std::vector<uint16_t>& bits) {
  std::vector<double> v;
  for (uint16_t b : bits) v.push_back(widen(dtype, b));
  return v;
}

inline std::vector<double> roundedNaive(aclDataType dtype, const std::vector<float>& values) {
  std::vector<double> v;
  for (float f : values) v.push_back(widen(dtype, narrow(dtype, f)));
  return v;
}

// The precision gate: each output's RMS and mean relative error vs fp64 at most `ratio` times the naive fp32 golden's
// (its dX / dW rounded to x's dtype like ours; on the native-bf16 path with A rounded to bf16 as the op rounds it),
// with a floor of a few fp32 ulps of the largest value (both may be essentially exact, e.g. dApe of few terms).
// Returns the worst ratio seen.
inline double expectWithinGate(const Problem& p, const Result& r, double ratio = 2.0) {
  const std::string label = describe(p.c);
  // The path the plan takes: the case's, else the process's (core/tile_path.h); only bf16 has a native one.
  const TilePath path = p.c.options.tilePath.value_or(chooseTilePath(ACL_BF16, ProductEngine::Gemm).path);
  const bool native = p.c.dtype == ACL_BF16 && path == TilePath::NativeBf16;
  const golden::CompressorGradOutputs<double> g = runGolden<double>(p);
  const golden::CompressorGradOutputs<float> naive = runGolden<float>(p, native);
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

inline Case bsh(int64_t b, int64_t s, int64_t coff, int64_t cr, int64_t d = 128) {
  Case c;
  c.batch = b, c.seqLen = s, c.coff = coff, c.cr = cr, c.headDim = d;
  return c;
}

inline Case th(std::vector<int64_t> cu, int64_t tokens, int64_t coff, int64_t cr, int64_t d = 128) {
  Case c;
  c.th = true, c.cu = std::move(cu), c.tokens = tokens, c.coff = coff, c.cr = cr, c.headDim = d;
  return c;
}

/** Restores the default thread count when a test that sets one ends. */
class ThreadCountGuard {
 public:
  ~ThreadCountGuard() { setThreadCount(0); }
};

}  // namespace gradkit::test::cgrad
