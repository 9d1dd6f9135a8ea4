// MhcPreBackward values: the plan run directly on aclTensor views (and through the C API) against a hand-worked case,
// the fp64 golden (golden/mhc_pre.h) and the naive fp32 golden; SIMD against scalar kernels; the same bits for any
// thread count; N = 4, 6, 8 and N!, BF16 and FP16, TND and BSND, with and without gamma and gradXPost, HF32 and fp32
// matmuls, non-contiguous inputs and outputs (and nothing written outside the output views).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_mhc_pre_backward.h"
#include "aclnnop/aclnn_mhc_pre_backward_v2.h"
#include "core/parallel.h"
#include "golden/mhc_pre.h"
#include "gradkit/float_convert.h"
#include "hwy/targets.h"
#include "opapi/tensor.h"
#include "ops/mhc/kernels/mhc_pre_backward_kernel.h"
#include "ops/mhc/mhc_pre_backward_plan.h"
#include "ops/op_test_util.h"
#include "ops/placed_tensor.h"
#include "runtime/runtime.h"

namespace gradkit::test {
namespace {

using ops::MhcPreBackwardArgs;

struct Case {
  int64_t tokens = 10, streams = 4, hidden = 8;
  bool factorial = false;  // residual N! instead of N*N
  aclDataType dtype = ACL_BF16;
  bool bsnd = false;  // [2, T/2, ...] instead of [T, ...]
  bool gamma = true, gradXPost = true, hf32 = false;
  bool stridedInputs = false, stridedOutputs = false;
  uint32_t seed = 1;
};

std::string describe(const Case& c) {
  return "T=" + std::to_string(c.tokens) + " N=" + std::to_string(c.streams) + " D=" + std::to_string(c.hidden) +
         (c.factorial ? " N!" : "") + (c.dtype == ACL_BF16 ? " bf16" : " fp16") + (c.bsnd ? " BSND" : " TND") +
         (c.gamma ? " gamma" : "") + (c.gradXPost ? " gradXPost" : "") + (c.hf32 ? " hf32" : "") +
         (c.stridedInputs ? " strided-in" : "") + (c.stridedOutputs ? " strided-out" : "");
}

int64_t factorial(int64_t n) { return n <= 1 ? 1 : n * factorial(n - 1); }

uint16_t narrow(aclDataType dtype, float value) {
  return dtype == ACL_FLOAT16 ? floatToHalf(value) : floatToBf16(value);
}
float widen(aclDataType dtype, uint16_t bits) { return dtype == ACL_FLOAT16 ? halfToFloat(bits) : bf16ToFloat(bits); }

// One problem: the inputs in their stored types.
struct Problem {
  Case c;
  int64_t residual = 0, fusion = 0, width = 0;
  std::vector<uint16_t> x, gradHIn, gradXPost;  // x's dtype
  std::vector<float> phi, alpha, gradHPost, gradHRes, invRms, hMix, hPre, hPost, gamma;
  float hcEps = 1e-6f;
};

void setSizes(Problem& p) {
  p.residual = p.c.factorial ? factorial(p.c.streams) : p.c.streams * p.c.streams;
  p.fusion = 2 * p.c.streams + p.residual;
  p.width = p.c.streams * p.c.hidden;
}

// Random values in the ranges upstream's UTs use (values in [-1, 1], alpha in [0.5, 1.5], invRms in [0.1, 1]), with
// hPre / hPost in the ranges a forward produces (sigmoid + eps, 2 sigmoid).
Problem makeProblem(const Case& c) {
  Problem p;
  p.c = c;
  setSizes(p);
  std::mt19937 rng(c.seed);
  const auto uniform = [&rng](int64_t n, float lo, float hi) {
    std::uniform_real_distribution<float> dist(lo, hi);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& e : v) e = dist(rng);
    return v;
  };
  const auto narrowed = [&](int64_t n) {
    std::vector<uint16_t> bits;
    for (float v : uniform(n, -1.0f, 1.0f)) bits.push_back(narrow(c.dtype, v));
    return bits;
  };
  const int64_t t = c.tokens, n = c.streams;
  p.x = narrowed(t * p.width);
  p.gradHIn = narrowed(t * c.hidden);
  if (c.gradXPost) p.gradXPost = narrowed(t * p.width);
  p.phi = uniform(p.fusion * p.width, -1.0f, 1.0f);
  p.alpha = uniform(3, 0.5f, 1.5f);
  p.gradHPost = uniform(t * n, -1.0f, 1.0f);
  p.gradHRes = uniform(t * p.residual, -1.0f, 1.0f);
  p.invRms = uniform(t, 0.1f, 1.0f);
  p.hMix = uniform(t * p.fusion, -1.0f, 1.0f);
  p.hPre = uniform(t * n, 0.02f, 0.98f);
  for (float& h : p.hPre) h += p.hcEps;
  p.hPost = uniform(t * n, 0.04f, 1.96f);
  if (c.gamma) p.gamma = uniform(p.width, 0.5f, 1.5f);
  return p;
}

struct Result {
  std::vector<uint16_t> gradX;
  std::vector<float> gradPhi, gradAlpha, gradBias, gradGamma;  // gradGamma: what its buffer holds after the run
  bool gapsIntact = true;
};

// Every tensor of one call, placed as the case asks.
struct Views {
  std::optional<Placed> x, phi, alpha, gradHIn, gradHPost, gradHRes, invRms, hMix, hPre, hPost, gamma, gradXPost;
  std::optional<Placed> gradX, gradPhi, gradAlpha, gradBias, gradGamma;
  std::vector<float> gammaSentinel;

  explicit Views(const Problem& p) {
    const Case& c = p.c;
    const int64_t t = c.tokens, n = c.streams, d = c.hidden;
    std::vector<int64_t> lead = c.bsnd ? std::vector<int64_t>{2, t / 2} : std::vector<int64_t>{t};
    const auto with = [&lead](std::vector<int64_t> tail) {
      std::vector<int64_t> shape = lead;
      shape.insert(shape.end(), tail.begin(), tail.end());
      return shape;
    };
    const bool si = c.stridedInputs, so = c.stridedOutputs;
    x.emplace(c.dtype, with({n, d}), p.x.data(), si);
    phi.emplace(ACL_FLOAT, std::vector<int64_t>{p.fusion, p.width}, p.phi.data(), si);
    alpha.emplace(ACL_FLOAT, std::vector<int64_t>{3}, p.alpha.data(), si);
    gradHIn.emplace(c.dtype, with({d}), p.gradHIn.data(), si);
    gradHPost.emplace(ACL_FLOAT, with({n}), p.gradHPost.data(), si);
    gradHRes.emplace(ACL_FLOAT, c.factorial ? with({p.residual}) : with({n, n}), p.gradHRes.data(), si);
    invRms.emplace(ACL_FLOAT, lead, p.invRms.data(), si);
    hMix.emplace(ACL_FLOAT, with({p.fusion}), p.hMix.data(), si);
    hPre.emplace(ACL_FLOAT, with({n}), p.hPre.data(), si);
    hPost.emplace(ACL_FLOAT, with({n}), p.hPost.data(), si);
    if (c.gamma) gamma.emplace(ACL_FLOAT, std::vector<int64_t>{n, d}, p.gamma.data(), si);
    if (c.gradXPost) gradXPost.emplace(c.dtype, with({n, d}), p.gradXPost.data(), si);
    gradX.emplace(c.dtype, with({n, d}), nullptr, so);
    gradPhi.emplace(ACL_FLOAT, std::vector<int64_t>{p.fusion, p.width}, nullptr, so);
    gradAlpha.emplace(ACL_FLOAT, std::vector<int64_t>{3}, nullptr, so);
    gradBias.emplace(ACL_FLOAT, std::vector<int64_t>{p.fusion}, nullptr, so);
    // Without gamma the buffer is still passed, filled with a sentinel the op must leave alone.
    gammaSentinel.assign(static_cast<size_t>(p.width), 12345.0f);
    gradGamma.emplace(ACL_FLOAT, std::vector<int64_t>{n, d}, gammaSentinel.data(), so);
  }

  MhcPreBackwardArgs args(const Problem& p, const char* api = ops::kMhcPreBackwardV2Api) const {
    return MhcPreBackwardArgs{api,
                              x->get(),
                              phi->get(),
                              alpha->get(),
                              gradHIn->get(),
                              gradHPost->get(),
                              gradHRes->get(),
                              invRms->get(),
                              hMix->get(),
                              hPre->get(),
                              hPost->get(),
                              gamma ? gamma->get() : nullptr,
                              gradXPost ? gradXPost->get() : nullptr,
                              p.hcEps,
                              p.c.hf32 ? ops::kMhcHf32Matmul : ops::kMhcFp32Matmul,
                              gradX->get(),
                              gradPhi->get(),
                              gradAlpha->get(),
                              gradBias->get(),
                              gradGamma->get()};
  }

  Result result() const {
    Result r;
    r.gradX = gradX->gather<uint16_t>();
    r.gradPhi = gradPhi->gather<float>();
    r.gradAlpha = gradAlpha->gather<float>();
    r.gradBias = gradBias->gather<float>();
    r.gradGamma = gradGamma->gather<float>();
    r.gapsIntact = gradX->gapsIntact() && gradPhi->gapsIntact() && gradAlpha->gapsIntact() && gradBias->gapsIntact() &&
                   gradGamma->gapsIntact();
    return r;
  }
};

// Plans and runs the call directly (no argument checks), optionally with a given kernel table.
Result runPlan(const Problem& p, const kernels::MhcPreBackwardKernels* table = nullptr) {
  Views views(p);
  ops::MhcPreBackwardPlan plan = ops::planMhcPreBackward(views.args(p));
  if (table != nullptr) plan.passes.kernels = table;
  std::vector<uint64_t> workspace(plan.workspace.totalBytes() / 8 + 1);
  EXPECT_EQ(plan.run(workspace.data()), ACLNN_SUCCESS);
  return views.result();
}

template <class Real>
golden::MhcPreBackwardOutputs<Real> runGolden(const Problem& p) {
  const auto cast = [](const auto& v) { return std::vector<Real>(v.begin(), v.end()); };
  const auto wide = [&p](const std::vector<uint16_t>& bits) {
    std::vector<Real> v;
    for (uint16_t b : bits) v.push_back(static_cast<Real>(widen(p.c.dtype, b)));
    return v;
  };
  const std::vector<Real> x = wide(p.x), gin = wide(p.gradHIn), gxp = wide(p.gradXPost), phi = cast(p.phi),
                          alpha = cast(p.alpha), gPost = cast(p.gradHPost), gRes = cast(p.gradHRes),
                          invRms = cast(p.invRms), hMix = cast(p.hMix), hPre = cast(p.hPre), hPost = cast(p.hPost),
                          gamma = cast(p.gamma);
  golden::MhcPreBackwardInputs<Real> in;
  in.sizes = {p.c.tokens, p.c.streams, p.c.hidden, p.fusion};
  in.x = x.data(), in.phi = phi.data(), in.alpha = alpha.data(), in.gradHIn = gin.data();
  in.gradHPost = gPost.data(), in.gradHRes = gRes.data(), in.invRms = invRms.data(), in.hMix = hMix.data();
  in.hPre = hPre.data(), in.hPost = hPost.data();
  in.gamma = p.c.gamma ? gamma.data() : nullptr;
  in.gradXPost = p.c.gradXPost ? gxp.data() : nullptr;
  in.hcEps = static_cast<Real>(p.hcEps);
  in.hf32 = p.c.hf32;
  return golden::mhcPreBackward(in);
}

double maxAbs(const std::vector<double>& v) {
  double m = 0;
  for (double e : v) m = std::max(m, std::abs(e));
  return m;
}

// The spacing of x's dtype at |value| (one unit in the last place).
double ulp16(aclDataType dtype, double value) {
  const int bits = dtype == ACL_FLOAT16 ? 10 : 7;
  const int minExponent = dtype == ACL_FLOAT16 ? -14 : -126;
  const int exponent =
      value == 0 ? minExponent : std::max(minExponent, static_cast<int>(std::floor(std::log2(std::abs(value)))));
  return std::ldexp(1.0, exponent - bits);
}

// Tolerances against the fp64 golden. Inputs are O(1) and every output element is a sum of terms of similar size,
// so an fp32 computation errs by at most (number of terms in one unblocked chain) * eps * the array's largest
// magnitude: our chains are <= 64 (token blocks, then compensated), dots over D run in 32 lanes, and the largest
// D here is 256, so 1e-5 (84 eps) of the largest |value| bounds every fp32 rounding, while a wrong formula errs by
// O(1) of it. In HF32 mode the golden rounds its fp64 dm to HF32 where we round our fp32 dm: the two may straddle a
// rounding boundary and differ by one HF32 unit (2^-11 relative) in a term, hence 1e-3. gradX adds the final
// rounding to 16 bits: up to one unit of the 16-bit type (half for RNE, plus the fp32 error that can move a value
// across a tie).
void expectNear(const std::vector<float>& got, const std::vector<double>& want, double relative, const char* what,
                const std::string& label) {
  ASSERT_EQ(got.size(), want.size()) << what << " " << label;
  const double bound = relative * maxAbs(want) + 1e-30;
  int failures = 0;
  for (size_t i = 0; i < got.size() && failures < 5; ++i) {
    if (!(std::abs(got[i] - want[i]) <= bound)) {
      ADD_FAILURE() << what << "[" << i << "] = " << got[i] << ", golden " << want[i] << " (bound " << bound << ") "
                    << label;
      ++failures;
    }
  }
}

void expectMatchesGolden(const Problem& p, const Result& r) {
  const std::string label = describe(p.c);
  const golden::MhcPreBackwardOutputs<double> g = runGolden<double>(p);
  const double relative = p.c.hf32 ? 1e-3 : 1e-5;
  const double xBound = relative * maxAbs(g.gradX);
  ASSERT_EQ(r.gradX.size(), g.gradX.size());
  int failures = 0;
  for (size_t i = 0; i < r.gradX.size() && failures < 5; ++i) {
    const double got = widen(p.c.dtype, r.gradX[i]);
    if (!(std::abs(got - g.gradX[i]) <= ulp16(p.c.dtype, g.gradX[i]) + xBound)) {
      ADD_FAILURE() << "gradX[" << i << "] = " << got << ", golden " << g.gradX[i] << " " << label;
      ++failures;
    }
  }
  expectNear(r.gradPhi, g.gradPhi, relative, "gradPhi", label);
  expectNear(r.gradAlpha, g.gradAlpha, relative, "gradAlpha", label);
  expectNear(r.gradBias, g.gradBias, relative, "gradBias", label);
  if (p.c.gamma) {
    expectNear(r.gradGamma, g.gradGamma, relative, "gradGamma", label);
  } else {
    for (float v : r.gradGamma) ASSERT_EQ(v, 12345.0f) << "gradGamma written without gamma " << label;
  }
  EXPECT_TRUE(r.gapsIntact) << "an output was written outside its view " << label;
}

bool sameBits(const Result& a, const Result& b) {
  const auto same = [](const std::vector<float>& u, const std::vector<float>& v) {
    return u.size() == v.size() && std::memcmp(u.data(), v.data(), u.size() * sizeof(float)) == 0;
  };
  return a.gradX == b.gradX && same(a.gradPhi, b.gradPhi) && same(a.gradAlpha, b.gradAlpha) &&
         same(a.gradBias, b.gradBias) && same(a.gradGamma, b.gradGamma);
}

class ThreadCountGuard {
 public:
  ~ThreadCountGuard() { setThreadCount(0); }
};

// ---------------------------------------------------------------------------------------------------------------
// A hand-worked case: T = 2, N = 1 (F = 3: one pre, one post, one res row), D = 2, every value a short binary
// fraction so every step is exact in fp32 (and in HF32, and the results in bf16 / fp16).
//   phi = [[1, 0], [0, 1], [1, 1]], alpha = (1, 2, 0.5), gamma = (2, 1), hcEps = 0, hPre = 0.5 (s(1-s) = 0.25),
//   hPost = 1 (h(1 - h/2) = 0.5), invRms = 0.5, hMix = (1, 2, 4), gradHPost = 2, gradHRes = 1, gradXPost = 0.25.
//   token 0: x = (1, 2), gin = (1, 1): g_pre = 3, dz = (0.75, 1, 1), alpha terms (0.375, 1, 2), dw = (0.75, 2, 0.5),
//     g_r = 6.75, dm = (0.375, 1, 0.25), coef = -6.75 * 0.125 / 2 = -0.421875, dxg = (0.625, 1.25),
//     gradX = ((0.5 - 0.421875) + 1.25) + 0.25 = 1.578125 and ((0.5 - 0.84375) + 1.25) + 0.25 = 1.15625,
//     xg = (2, 2), x * dxg = (0.625, 2.5).
//   token 1: x = (-1, 0.5), gin = (2, -1): g_pre = -2.5, dz = (-0.625, 1, 1), alpha terms (-0.3125, 1, 2),
//     dw = (-0.625, 2, 0.5), g_r = 5.375, dm = (-0.3125, 1, 0.25), coef = -0.3359375, dxg = (-0.0625, 1.25),
//     gradX = ((1 + 0.3359375) - 0.125) + 0.25 = 1.4609375 and ((-0.5 - 0.16796875) + 1.25) + 0.25 = 0.83203125,
//     xg = (-2, 0.5), x * dxg = (0.0625, 0.625).
//   totals: grad_bias = (0.125, 2, 2), grad_alpha = (0.0625, 2, 4), grad_phi = [[1.375, 0.59375], [0, 2.5],
//     [0, 0.625]], grad_gamma = (0.6875, 3.125).
Problem handProblem(aclDataType dtype, bool hf32) {
  Problem p;
  p.c.tokens = 2, p.c.streams = 1, p.c.hidden = 2, p.c.dtype = dtype, p.c.hf32 = hf32;
  setSizes(p);
  const auto bits = [dtype](std::initializer_list<float> v) {
    std::vector<uint16_t> out;
    for (float e : v) out.push_back(narrow(dtype, e));
    return out;
  };
  p.x = bits({1, 2, -1, 0.5f});
  p.gradHIn = bits({1, 1, 2, -1});
  p.gradXPost = bits({0.25f, 0.25f, 0.25f, 0.25f});
  p.phi = {1, 0, 0, 1, 1, 1};
  p.alpha = {1, 2, 0.5f};
  p.gamma = {2, 1};
  p.hcEps = 0.0f;
  p.hPre = {0.5f, 0.5f};
  p.hPost = {1, 1};
  p.invRms = {0.5f, 0.5f};
  p.hMix = {1, 2, 4, 1, 2, 4};
  p.gradHPost = {2, 2};
  p.gradHRes = {1, 1};
  return p;
}

TEST(MhcPreBackwardValues, HandWorkedCase) {
  for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
    for (bool hf32 : {false, true}) {
      for (const auto* table : {&kernels::kMhcPreBackwardSimdKernels, &kernels::kMhcPreBackwardScalarKernels}) {
        const Result r = runPlan(handProblem(dtype, hf32), table);
        const std::vector<float> gradX = {1.578125f, 1.15625f, 1.4609375f, 0.83203125f};
        for (size_t i = 0; i < gradX.size(); ++i) EXPECT_EQ(r.gradX[i], narrow(dtype, gradX[i])) << i;
        EXPECT_EQ(r.gradBias, (std::vector<float>{0.125f, 2, 2}));
        EXPECT_EQ(r.gradAlpha, (std::vector<float>{0.0625f, 2, 4}));
        EXPECT_EQ(r.gradPhi, (std::vector<float>{1.375f, 0.59375f, 0, 2.5f, 0, 0.625f}));
        EXPECT_EQ(r.gradGamma, (std::vector<float>{0.6875f, 3.125f}));
      }
    }
  }
}

TEST(MhcPreBackwardValues, HandWorkedCaseMatchesGolden) {  // the golden agrees with the hand-worked numbers
  const Problem p = handProblem(ACL_BF16, false);
  const golden::MhcPreBackwardOutputs<double> g = runGolden<double>(p);
  EXPECT_EQ(g.gradPhi, (std::vector<double>{1.375, 0.59375, 0, 2.5, 0, 0.625}));
  EXPECT_EQ(g.gradGamma, (std::vector<double>{0.6875, 3.125}));
  EXPECT_EQ(g.gradX, (std::vector<double>{1.578125, 1.15625, 1.4609375, 0.83203125}));
}

// ---------------------------------------------------------------------------------------------------------------
std::vector<Case> goldenCases() {
  std::vector<Case> cases;
  uint32_t seed = 100;
  const auto add = [&](Case c) {
    c.seed = seed++;
    cases.push_back(c);
  };
  for (int64_t n : {4, 6, 8}) {
    for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
      Case c;
      c.streams = n, c.dtype = dtype, c.tokens = 70, c.hidden = 40;
      add(c);
    }
  }
  Case fact;
  fact.factorial = true, fact.tokens = 67, fact.hidden = 24;
  add(fact);
  fact.bsnd = true, fact.tokens = 66, fact.dtype = ACL_FLOAT16;
  add(fact);
  for (bool gamma : {false, true}) {
    for (bool gxp : {false, true}) {
      for (bool hf32 : {false, true}) {
        Case c;
        c.tokens = 130, c.hidden = 72, c.gamma = gamma, c.gradXPost = gxp, c.hf32 = hf32;
        add(c);
      }
    }
  }
  Case bsnd;
  bsnd.bsnd = true, bsnd.tokens = 128, bsnd.hidden = 256, bsnd.dtype = ACL_FLOAT16;  // K = 1024: 16 column blocks
  add(bsnd);
  Case strided;
  strided.tokens = 77, strided.hidden = 40, strided.stridedInputs = true, strided.stridedOutputs = true;
  add(strided);
  strided.gamma = false, strided.gradXPost = false, strided.bsnd = true, strided.tokens = 78;
  add(strided);
  strided.stridedInputs = false, strided.factorial = true, strided.gamma = true, strided.hf32 = true;
  add(strided);
  return cases;
}

TEST(MhcPreBackwardValues, MatchesFp64Golden) {
  for (const Case& c : goldenCases()) {
    const Problem p = makeProblem(c);
    expectMatchesGolden(p, runPlan(p));
  }
}

TEST(MhcPreBackwardValues, ScalarKernelsMatchFp64Golden) {
  for (const Case& c : goldenCases()) {
    const Problem p = makeProblem(c);
    expectMatchesGolden(p, runPlan(p, &kernels::kMhcPreBackwardScalarKernels));
  }
}

TEST(MhcPreBackwardValues, SimdAndScalarKernelsAgree) {
  // Only the h_pre dot product sums in another order, so dm differs by an fp32 ulp or so: the outputs agree to a few
  // fp32 ulps of the array's largest value (gradX to one unit of the 16-bit type). In HF32 mode such a dm difference
  // can move an operand across an HF32 rounding boundary (one HF32 unit, 2^-11 relative), hence 1e-3 there.
  for (const Case& c : goldenCases()) {
    const Problem p = makeProblem(c);
    const Result simd = runPlan(p, &kernels::kMhcPreBackwardSimdKernels);
    const Result scalar = runPlan(p, &kernels::kMhcPreBackwardScalarKernels);
    const double relative = c.hf32 ? 1e-3 : 1e-6;
    std::vector<double> scalarX;
    for (uint16_t bits : scalar.gradX) scalarX.push_back(widen(c.dtype, bits));
    const double xBound = relative * maxAbs(scalarX);
    for (size_t i = 0; i < simd.gradX.size(); ++i) {
      const double a = widen(c.dtype, simd.gradX[i]);
      ASSERT_LE(std::abs(a - scalarX[i]), ulp16(c.dtype, a) + xBound) << i << " " << describe(c);
    }
    const auto close = [&](const std::vector<float>& a, const std::vector<float>& b, const char* what) {
      const std::vector<double> wide(b.begin(), b.end());
      expectNear(a, wide, relative, what, describe(c));
    };
    close(simd.gradPhi, scalar.gradPhi, "gradPhi");
    close(simd.gradAlpha, scalar.gradAlpha, "gradAlpha");
    close(simd.gradBias, scalar.gradBias, "gradBias");
    close(simd.gradGamma, scalar.gradGamma, "gradGamma");
  }
}

TEST(MhcPreBackwardValues, SimdSegmentKernelGivesTheScalarBits) {
  // With the same h_pre dot products (the scalar ones) the SIMD segment kernel must give the scalar kernel's bits on
  // every target with fused multiply-add that the CPU runs: the same fma chains, the same elementwise operations.
  // D = 45 and 21 leave strips of 16 + 8 + scalar columns (AVX2) and of 32 + scalar or 16 + scalar columns
  // (AVX-512), column blocks of 64 straddle streams (several segments per block), T = 137 a token block of 17 rows
  // (6 x 2 + 5 rows, or 8 x 2 + 1), N = 8 an F of 80 (grad_phi rows 6 x 13 + 2, or 8 x 10).
  const kernels::MhcPreBackwardKernels mixed{kernels::kMhcPreBackwardScalarKernels.streamDots,
                                             kernels::kMhcPreBackwardSimdKernels.segment};
  std::vector<Case> cases;
  for (bool hf32 : {false, true}) {
    for (bool gamma : {false, true}) {
      Case c;
      c.tokens = 137, c.hidden = 45, c.hf32 = hf32, c.gamma = gamma, c.gradXPost = !gamma, c.seed = 11;
      cases.push_back(c);
    }
  }
  Case wide;
  wide.tokens = 31, wide.streams = 8, wide.hidden = 21, wide.dtype = ACL_FLOAT16, wide.seed = 12;
  cases.push_back(wide);
  for (const Case& c : cases) {
    const Problem p = makeProblem(c);
    const Result scalar = runPlan(p, &kernels::kMhcPreBackwardScalarKernels);
    expectMatchesGolden(p, scalar);
    forEachFmaTarget([&](int64_t target) {
      EXPECT_TRUE(sameBits(scalar, runPlan(p, &mixed))) << hwy::TargetName(target) << " " << describe(c);
    });
  }
}

TEST(MhcPreBackwardValues, SameBitsForAnyThreadCount) {
  // T = 150 (token blocks of 120: 120 + 30), K = 4 * 136 = 544 (column blocks of 64: 8 + a block of 32); T = 2000
  // also runs several token groups with several slots (groups of 16 token blocks: 1920 + 80; one block with one).
  ThreadCountGuard guard;
  for (auto [tokens, hf32] : {std::pair{150, false}, std::pair{150, true}, std::pair{2000, false}}) {
    Case c;
    c.tokens = tokens, c.hidden = 136, c.hf32 = hf32, c.seed = 7;
    const Problem p = makeProblem(c);
    for (const auto* table : {&kernels::kMhcPreBackwardSimdKernels, &kernels::kMhcPreBackwardScalarKernels}) {
      setThreadCount(1);
      const Result one = runPlan(p, table);
      expectMatchesGolden(p, one);
      for (int threads : {2, 3, 8}) {
        setThreadCount(threads);
        EXPECT_TRUE(sameBits(one, runPlan(p, table))) << threads << " threads " << describe(c);
      }
    }
  }
}

TEST(MhcPreBackwardValues, GradGammaUntouchedWithoutGamma) {
  Case c;
  c.gamma = false;
  const Problem p = makeProblem(c);
  const Result r = runPlan(p);
  for (float v : r.gradGamma) EXPECT_EQ(v, 12345.0f);
  // Without gamma, x * gamma is x: the other outputs equal those of a call with gamma = 1.
  Problem ones = p;
  ones.c.gamma = true;
  ones.gamma.assign(static_cast<size_t>(p.width), 1.0f);
  const Result withOnes = runPlan(ones);
  EXPECT_EQ(r.gradX, withOnes.gradX);
  EXPECT_EQ(r.gradPhi, withOnes.gradPhi);
  EXPECT_EQ(r.gradBias, withOnes.gradBias);
  EXPECT_EQ(r.gradAlpha, withOnes.gradAlpha);
}

TEST(MhcPreBackwardValues, Hf32ModeRoundsTheMatmulOperands) {
  // Same problem in both modes: the grad_phi / gradX differences are of HF32's size (2^-12 relative per operand),
  // far above fp32 rounding, and each mode matches its own golden (checked above); grad_bias and grad_alpha do not
  // involve a matmul and are identical.
  Case c;
  c.tokens = 64, c.hidden = 64;
  Problem p = makeProblem(c);
  const Result fp32 = runPlan(p);
  p.c.hf32 = true;
  const Result hf32 = runPlan(p);
  EXPECT_EQ(fp32.gradBias, hf32.gradBias);
  EXPECT_EQ(fp32.gradAlpha, hf32.gradAlpha);
  double worst = 0, scale = 0;
  for (size_t i = 0; i < fp32.gradPhi.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(fp32.gradPhi[i] - hf32.gradPhi[i])));
    scale = std::max(scale, static_cast<double>(std::abs(fp32.gradPhi[i])));
  }
  EXPECT_GT(worst, 1e-5 * scale);
  EXPECT_LT(worst, 1e-2 * scale);
}

TEST(MhcPreBackwardValues, TokenSumsMoreAccurateThanNaiveFp32) {
  // 3000 tokens: the naive golden's sequential fp32 sums over tokens lose about sqrt(T) ulps; our blocked and
  // compensated sums must be at least as close to fp64 (the double-benchmark idea of the precision gate).
  Case c;
  c.tokens = 3000, c.hidden = 16, c.gradXPost = false, c.seed = 11;
  const Problem p = makeProblem(c);
  const Result r = runPlan(p);
  const auto exact = runGolden<double>(p);
  const auto naive = runGolden<float>(p);
  const auto worst = [](const std::vector<float>& got, const std::vector<double>& want) {
    double e = 0;
    for (size_t i = 0; i < got.size(); ++i) e = std::max(e, std::abs(got[i] - want[i]));
    return e;
  };
  const auto check = [&](const std::vector<float>& ours, const std::vector<float>& theirs,
                         const std::vector<double>& want, const char* what) {
    const double floor = 4 * 1.2e-7 * maxAbs(want);  // a few ulps: both may be essentially exact
    EXPECT_LE(worst(ours, want), std::max(worst(theirs, want), floor)) << what;
  };
  check(r.gradPhi, naive.gradPhi, exact.gradPhi, "gradPhi");
  check(r.gradBias, naive.gradBias, exact.gradBias, "gradBias");
  check(r.gradAlpha, naive.gradAlpha, exact.gradAlpha, "gradAlpha");
  check(r.gradGamma, naive.gradGamma, exact.gradGamma, "gradGamma");
}

TEST(MhcPreBackwardValues, InPlaceGradXOverGradXPost) {
  // gradX may be exactly gradXPost's memory (each element is read before it is written).
  Case c;
  c.tokens = 20, c.hidden = 64;
  const Problem p = makeProblem(c);
  const Result separate = runPlan(p);
  Views views(p);
  MhcPreBackwardArgs args = views.args(p);
  args.gradX = args.gradXPost;
  ops::MhcPreBackwardPlan plan = ops::planMhcPreBackward(args);
  std::vector<uint64_t> workspace(plan.workspace.totalBytes() / 8 + 1);
  ASSERT_EQ(plan.run(workspace.data()), ACLNN_SUCCESS);
  EXPECT_EQ(views.gradXPost->gather<uint16_t>(), separate.gradX);
}

// ---------------------------------------------------------------------------------------------------------------
// Through the C API (checks, executor, stream): the same bits as the plan run directly.
class ScopedSoc {
 public:
  explicit ScopedSoc(const char* soc) {
    if (const char* old = std::getenv("GRADKIT_SOC")) previous_ = old;
    setenv("GRADKIT_SOC", soc, 1);
    rt::clearSocOverride();
  }
  ~ScopedSoc() {
    if (previous_) {
      setenv("GRADKIT_SOC", previous_->c_str(), 1);
    } else {
      unsetenv("GRADKIT_SOC");
    }
    rt::clearSocOverride();
  }
  ScopedSoc(const ScopedSoc&) = delete;
  ScopedSoc& operator=(const ScopedSoc&) = delete;

 private:
  std::optional<std::string> previous_;
};

Result runApi(const Problem& p, bool v2) {
  Views views(p);
  const MhcPreBackwardArgs a = views.args(p);
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus status =
      v2 ? aclnnMhcPreBackwardV2GetWorkspaceSize(a.x, a.phi, a.alpha, a.gradHIn, a.gradHPost, a.gradHRes, a.invRms,
                                                 a.hMix, a.hPre, a.hPost, a.gamma, a.gradXPost, a.hcEps, a.opImplMode,
                                                 a.gradX, a.gradPhi, a.gradAlpha, a.gradBias, a.gradGamma, &size,
                                                 &executor)
         : aclnnMhcPreBackwardGetWorkspaceSize(a.x, a.phi, a.alpha, a.gradHIn, a.gradHPost, a.gradHRes, a.invRms,
                                               a.hMix, a.hPre, a.hPost, a.gamma, a.gradXPost, a.hcEps, a.gradX,
                                               a.gradPhi, a.gradAlpha, a.gradBias, a.gradGamma, &size, &executor);
  EXPECT_EQ(status, ACLNN_SUCCESS) << recentError();
  if (status != ACLNN_SUCCESS) return {};
  std::vector<uint64_t> workspace(size / 8 + 1);
  EXPECT_EQ(v2 ? aclnnMhcPreBackwardV2(workspace.data(), size, executor, nullptr)
               : aclnnMhcPreBackward(workspace.data(), size, executor, nullptr),
            ACLNN_SUCCESS);
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << recentError();
  return views.result();
}

TEST(MhcPreBackwardValues, CApiMatchesThePlan) {
  {
    ScopedSoc soc("Ascend950");  // N 4/6/8, D % 64 == 0, HF32 available
    for (bool hf32 : {false, true}) {
      Case c;
      c.tokens = 40, c.hidden = 64, c.hf32 = hf32, c.stridedInputs = true, c.stridedOutputs = hf32;
      const Problem p = makeProblem(c);
      const Result api = runApi(p, true);
      expectMatchesGolden(p, api);
      EXPECT_TRUE(sameBits(api, runPlan(p)));
      if (!hf32) {
        EXPECT_TRUE(sameBits(runApi(p, false), api));  // V1 is V2 with opImplMode 0
      }
    }
  }
  {
    ScopedSoc soc("Ascend910B");  // N = 4, D % 128 == 0, the N! residual
    Case c;
    c.tokens = 12, c.hidden = 128, c.factorial = true, c.bsnd = true, c.gamma = false;
    const Problem p = makeProblem(c);
    const Result api = runApi(p, false);
    expectMatchesGolden(p, api);
    EXPECT_TRUE(sameBits(api, runPlan(p)));
  }
}

}  // namespace
}  // namespace gradkit::test
