// libFuzzer target: the six mHC entry points (tests/fuzz/README.md). The first byte picks aclnnMhcPre,
// aclnnMhcPreV2, aclnnMhcPreBackward, aclnnMhcPreBackwardV2, aclnnMhcPost or aclnnMhcPostBackward, the next ones the
// emulated SoC (the three profiles), the layout (TND / BSND), the token counts, N, D (valid and invalid for the
// profile, zero, huge), alpha's length, the residual form (N*N or N!), which optional tensors are given (hRes of
// MhcPost[Backward] too), opImplMode and the eps values (NaN, Inf, ...); then every tensor is decoded with hostile
// descriptors (fuzz_common.h), and an output may be an input itself.
//
// Besides fuzz_common.h's oracle, the target holds its own model of the mHC rules (docs/mhc.md, DECISIONS.md),
// computed from the descriptors aclCreateTensor accepted: a call the model finds invalid must fail (mustFail), and
// a call it finds valid, with no output sharing a byte range with another tensor and only dense-or-gapped outputs,
// must succeed (a false rejection is a finding too).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <utility>
#include <vector>

#include "aclnnop/aclnn_mhc_post.h"
#include "aclnnop/aclnn_mhc_post_backward.h"
#include "aclnnop/aclnn_mhc_pre.h"
#include "aclnnop/aclnn_mhc_pre_backward.h"
#include "aclnnop/aclnn_mhc_pre_backward_v2.h"
#include "aclnnop/aclnn_mhc_pre_v2.h"
#include "fuzz_common.h"
#include "runtime/profile.h"
#include "runtime/runtime.h"

namespace {

using gradkit::rt::Soc;

// The profiles' mHC limits, the target's own copy of DECISIONS.md (not gradkit's table).
struct Limits {
  Soc soc;
  bool hasV2;      // the V2 entry points exist
  bool factorial;  // the N! residual form is accepted
  int64_t align, minD, maxD;
};
constexpr Limits kProfiles[] = {{Soc::Ascend950, true, false, 64, 64, 16384},
                                {Soc::Ascend910B, false, true, 128, 128, 99968},
                                {Soc::Ascend910_93, false, true, 128, 128, 99968}};

bool streamsAllowed(const Limits& p, int64_t n) { return p.hasV2 ? (n == 4 || n == 6 || n == 8) : n == 4; }
bool hiddenAllowed(const Limits& p, int64_t d) { return d % p.align == 0 && d >= p.minD && d <= p.maxD; }
// MhcPost[Backward]: any D on Ascend950; a multiple of 128 up to 100000 on A2/A3 (docs/mhc.md).
bool postHiddenAllowed(const Limits& p, int64_t d) { return d > 0 && (p.hasV2 || (d % 128 == 0 && d <= 100000)); }

int64_t satMul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}
int64_t satAdd(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<int64_t>::max() : r;
}
int64_t factorial(int64_t n) {
  int64_t f = 1;
  for (int64_t i = 2; i <= n && i < 30; ++i) f = satMul(f, i);
  return n >= 30 ? std::numeric_limits<int64_t>::max() : f;
}

std::vector<int64_t> cat(std::vector<int64_t> lead, std::initializer_list<int64_t> tail) {
  lead.insert(lead.end(), tail.begin(), tail.end());
  return lead;
}

// N: mostly a supported count, sometimes an unsupported, zero or huge one.
int64_t pickStreams(fuzz::Input& in) {
  const uint8_t m = in.u8();
  static constexpr int64_t kGood[] = {4, 6, 8};
  static constexpr int64_t kOdd[] = {0, 1, 2, 3, 5, 7, 9, 16, 12};
  if (m < 160) return kGood[m % 3];
  if (m < 240) return kOdd[m % 9];
  return in.dim();
}

// D: small valid sizes of either profile, or the edges, misaligned, zero or huge sizes.
int64_t pickHidden(fuzz::Input& in, const Limits& p) {
  const uint8_t m = in.u8();
  const int64_t good[] = {p.minD, 2 * p.minD, 192, 256};
  const int64_t odd[] = {0, 16, 32, 96, 100, p.maxD, p.maxD + p.align, 16448, 99968, 100096, 1, 65536};
  if (m < 160) return good[m % 4];
  if (m < 240) return odd[m % 12];
  return in.dim();
}

// One leading dim (T, or B and S): a few tokens; sometimes 0, or enough to cross the backward's 64-token chunks.
int64_t pickLead(fuzz::Input& in) {
  const uint8_t m = in.u8();
  static constexpr int64_t kOdd[] = {0, 5, 8, 17, 65, 70};
  return m < 240 ? 1 + m % 3 : kOdd[m % 6];
}

int64_t pickMode(fuzz::Input& in) {
  const uint8_t m = in.u8();
  static constexpr int64_t kOdd[] = {
      2, -1, std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min(), 3, int64_t{1} << 32};
  if (m < 150) return 0;
  if (m < 230) return 1;
  return kOdd[m % 6];
}

double pickEps(fuzz::Input& in) {
  const uint8_t m = in.u8();
  if (m < 160) return 1e-6;
  switch (m % 8) {
    case 0:
      return std::nan("");
    case 1:
      return std::numeric_limits<double>::infinity();
    case 2:
      return -std::numeric_limits<double>::infinity();
    case 3:
      return 0.0;
    case 4:
      return -1.0;
    case 5:
      return 1e30;
    case 6:
      return std::numeric_limits<double>::denorm_min();
    default: {
      double d;
      const uint64_t bits = in.u64();
      std::memcpy(&d, &bits, sizeof d);
      return d;
    }
  }
}

bool privateFormat(int f) { return f == 3 || f == 4 || f == 12 || f == 29 || f == 32 || f == 33; }

// One tensor argument, as created, with what the model needs to judge it.
struct Arg {
  const char* name = "";
  aclTensor* t = nullptr;
  fuzz::View v;
  bool output = false;
  bool used = true;  // false: an output the operator ignores (hRes with alpha [2], gradGamma without gamma)
  int dtype = -1;
  int format = -1;
  std::vector<int64_t> shape;  // what the decoding asked for (before fuzz_common.h's mutations)
  int intendedDtype = -1;
};

// The element byte positions of a view inside its buffer.
template <typename F>
void forEachElement(const fuzz::View& v, F f) {
  const size_t rank = v.dims.size();
  std::vector<int64_t> idx(rank, 0);
  for (int64_t k = 0; k < v.numel; ++k) {
    int64_t e = v.offset;
    for (size_t d = 0; d < rank; ++d) e += idx[d] * v.strides[d];
    f(v.byteOffset + static_cast<size_t>(e) * v.elemSize);
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < v.dims[d]) break;
      idx[d] = 0;
    }
  }
}

// [first, last] bytes of a view's hull in its buffer (what gradkit's overlap rules compare).
std::pair<size_t, size_t> hull(const fuzz::View& v) {
  int64_t span = 0;
  for (size_t d = 0; d < v.dims.size(); ++d) span += (v.dims[d] - 1) * v.strides[d];
  const size_t first = v.byteOffset + static_cast<size_t>(v.offset) * v.elemSize;
  return {first, first + static_cast<size_t>(span) * v.elemSize + v.elemSize - 1};
}

bool sameView(const Arg& a, const Arg& b) {
  return a.v.buffer == b.v.buffer && hull(a.v).first == hull(b.v).first && a.dtype == b.dtype && a.v.dims == b.v.dims &&
         a.v.strides == b.v.strides;
}

// gradkit's own conservative rule for outputs (dense-or-gapped layouts), used only to decide "must succeed".
bool denseOrGapped(const fuzz::View& v) {
  std::vector<std::pair<int64_t, int64_t>> dims;
  for (size_t d = 0; d < v.dims.size(); ++d) {
    if (v.dims[d] > 1) dims.emplace_back(v.strides[d], v.dims[d]);
  }
  std::sort(dims.begin(), dims.end());
  int64_t spanned = 0;
  for (const auto& [stride, size] : dims) {
    if (stride <= spanned) return false;
    spanned += stride * (size - 1);
  }
  return true;
}

// The call's verdict from the model.
struct Verdict {
  bool invalid = false;  // a rule is broken: the call must fail
  bool unsure = false;   // valid by the rules, but gradkit may refuse (hull overlaps, odd output strides, big views)
};

// gradkit's memory rules, judged element by element: an output that writes a byte twice, or shares a byte with an
// input (other than the exact same view of its in-place partner) or with another output, is invalid.
void judgeMemory(const fuzz::World& world, const std::vector<Arg*>& inputs, const std::vector<Arg*>& outputs,
                 const Arg* inPlaceOut, const Arg* inPlaceIn, Verdict* verdict) {
  for (size_t o = 0; o < outputs.size(); ++o) {
    const Arg& out = *outputs[o];
    if (out.v.numel > fuzz::World::kMaxRunNumel) {
      verdict->unsure = true;
      continue;
    }
    if (!denseOrGapped(out.v)) verdict->unsure = true;
    std::vector<uint8_t> mark(world.buffers[out.v.buffer].size, 0);
    forEachElement(out.v, [&](size_t at) {
      for (size_t k = 0; k < out.v.elemSize; ++k) {
        if (mark[at + k]) verdict->invalid = true;  // an address written twice
        mark[at + k] = 1;
      }
    });
    std::vector<const Arg*> others(inputs.begin(), inputs.end());
    others.insert(others.end(), outputs.begin(), outputs.begin() + static_cast<std::ptrdiff_t>(o));
    for (const Arg* other : others) {
      if (other->v.buffer != out.v.buffer) continue;
      const bool partner = &out == inPlaceOut && other == inPlaceIn;
      if (partner && sameView(out, *other)) continue;
      const auto [a0, a1] = hull(out.v);
      const auto [b0, b1] = hull(other->v);
      if (a1 < b0 || b1 < a0) continue;
      verdict->unsure = true;  // the hulls meet: gradkit refuses even without a shared byte
      if (other->v.numel > fuzz::World::kMaxRunNumel) continue;
      forEachElement(other->v, [&](size_t at) {
        for (size_t k = 0; k < other->v.elemSize; ++k) {
          if (mark[at + k]) verdict->invalid = true;
        }
      });
    }
  }
}

// A given tensor must have exactly `shape` and `dtype`, and a public format.
void expectTensor(const Arg& a, const std::vector<int64_t>& shape, int dtype, Verdict* verdict) {
  if (a.v.dims != shape || a.dtype != dtype || privateFormat(a.format)) verdict->invalid = true;
}

class Call {
 public:
  Call(fuzz::Input& in, fuzz::World& world) : in_(in), world_(world) {}

  // An input or output tensor with intended dtype and shape; `reuse` lets an output be an earlier tensor itself.
  Arg& add(const char* name, int dtype, const std::vector<int64_t>& shape, bool output) {
    args_.emplace_back();
    Arg& a = args_.back();
    a.name = name;
    a.output = output;
    a.shape = shape;
    a.intendedDtype = dtype;
    if (output && in_.oneIn(8) && args_.size() > 1) {
      // Mostly an earlier tensor of the same intended shape and dtype (so the call gets as far as the memory rules).
      std::vector<const Arg*> alike;
      for (size_t i = 0; i + 1 < args_.size(); ++i) {
        if (args_[i].shape == shape && args_[i].intendedDtype == dtype) alike.push_back(&args_[i]);
      }
      const Arg& earlier =
          !alike.empty() && !in_.oneIn(4) ? *alike[in_.u8() % alike.size()] : args_[in_.u8() % (args_.size() - 1)];
      a.t = earlier.t;
      a.v = earlier.v;
    } else {
      a.t = world_.tensor(in_, dtype, shape, &a.v);
    }
    if (a.t != nullptr) {
      aclDataType dt;
      aclFormat fmt;
      if (aclGetDataType(a.t, &dt) != ACLNN_SUCCESS || aclGetFormat(a.t, &fmt) != ACLNN_SUCCESS) {
        fuzz::finding("a getter failed on a created tensor");
      }
      a.dtype = static_cast<int>(dt);
      a.format = static_cast<int>(fmt);
    }
    return a;
  }

  std::deque<Arg>& args() { return args_; }

 private:
  fuzz::Input& in_;
  fuzz::World& world_;
  std::deque<Arg> args_;
};

constexpr int kF32 = ACL_FLOAT;

bool anyNull(std::initializer_list<const Arg*> args) {
  for (const Arg* a : args) {
    if (a->t == nullptr) return true;
  }
  return false;
}

// x's leading dims, N and D when x is [.., N, D] of a supported dtype with N and D of the profile; else invalid.
bool judgeX(const Arg& x, const Limits& p, std::vector<int64_t>* lead, int64_t* n, int64_t* d, Verdict* verdict,
            bool post = false) {
  const size_t rank = x.v.dims.size();
  if (rank != 3 && rank != 4) return verdict->invalid = true, false;
  lead->assign(x.v.dims.begin(), x.v.dims.end() - 2);
  *n = x.v.dims[rank - 2];
  *d = x.v.dims[rank - 1];
  for (int64_t l : *lead) {
    if (l <= 0) verdict->invalid = true;  // mHC supports no empty tensor
  }
  if (!streamsAllowed(p, *n) || !(post ? postHiddenAllowed(p, *d) : hiddenAllowed(p, *d))) verdict->invalid = true;
  if (x.dtype != ACL_BF16 && x.dtype != ACL_FLOAT16) verdict->invalid = true;
  if (privateFormat(x.format)) verdict->invalid = true;
  return !verdict->invalid;
}

struct Choices {
  const Limits* profile;
  std::vector<int64_t> lead;
  int64_t n, d, alphaLength, f, k;
  std::vector<int64_t> resShape;
  int xDtype;
  bool gamma;
};

Choices decodeChoices(fuzz::Input& in, bool backward) {
  Choices c;
  const uint8_t pm = in.u8();
  c.profile = &kProfiles[pm < 170 ? 0 : 1 + pm % 2];
  const bool bsnd = in.oneIn(2);
  c.lead = {pickLead(in)};
  if (bsnd) c.lead.push_back(pickLead(in));
  c.n = pickStreams(in);
  c.d = pickHidden(in, *c.profile);
  const uint8_t am = in.u8();
  static constexpr int64_t kOddAlpha[] = {0, 1, 4, 6};
  c.alphaLength = am < 200 ? 3 : (am < 240 ? 2 : kOddAlpha[am % 4]);
  const bool phiFactorial = c.profile->factorial ? in.oneIn(3) : in.oneIn(16);
  const bool resFactorial = in.oneIn(12) ? !phiFactorial : phiFactorial;
  const int64_t residual = c.alphaLength == 2 && !backward ? 0 : (phiFactorial ? factorial(c.n) : satMul(c.n, c.n));
  c.f = satAdd(satMul(2, c.n), residual);
  c.k = satMul(c.n, c.d);
  c.resShape = resFactorial ? cat(c.lead, {factorial(c.n)}) : cat(c.lead, {c.n, c.n});
  c.xDtype = in.oneIn(2) ? ACL_FLOAT16 : ACL_BF16;
  c.gamma = !in.oneIn(2);
  return c;
}

struct Outcome {
  aclnnStatus status;
  fuzz::RunFn run;
  Verdict verdict;
  std::vector<fuzz::View> outputs;
};

// Nulls one argument about once in 16 inputs (required or optional).
void maybeNullOne(fuzz::Input& in, std::deque<Arg>& args) {
  if (in.oneIn(16)) args[in.u8() % args.size()].t = nullptr;
}

Outcome forward(fuzz::Input& in, fuzz::World& world, bool v2, uint64_t* sizeArg, aclOpExecutor** executorArg) {
  const Choices c = decodeChoices(in, false);
  gradkit::rt::setSocOverride(c.profile->soc);
  const int64_t mode = v2 ? pickMode(in) : 0;
  const double normEps = pickEps(in), hcEps = pickEps(in);
  const uint8_t cm = in.u8();
  const int caches = cm < 128 ? 7 : (cm < 224 ? 0 : 1 + cm % 6);  // bits: invRms, hMix, hPre
  const bool hResGiven = c.alphaLength != 2 || !in.oneIn(2);

  Call call(in, world);
  Arg& x = call.add("x", c.xDtype, cat(c.lead, {c.n, c.d}), false);
  Arg& phi = call.add("phi", kF32, {c.f, c.k}, false);
  Arg& alpha = call.add("alpha", kF32, {c.alphaLength}, false);
  Arg& bias = call.add("bias", kF32, {c.f}, false);
  Arg& gamma = call.add("gammaOptional", kF32, {c.n, c.d}, false);
  Arg& hIn = call.add("hIn", c.xDtype, cat(c.lead, {c.d}), true);
  Arg& hPost = call.add("hPost", kF32, cat(c.lead, {c.n}), true);
  Arg& hRes = call.add("hRes", kF32, c.resShape, true);
  Arg& invRms = call.add("invRmsOptional", kF32, c.lead, true);
  Arg& hMix = call.add("hMixOptional", kF32, cat(c.lead, {c.f}), true);
  Arg& hPre = call.add("hPreOptional", kF32, cat(c.lead, {c.n}), true);
  if (!c.gamma) gamma.t = nullptr;
  if (!hResGiven) hRes.t = nullptr;
  if (!(caches & 1)) invRms.t = nullptr;
  if (!(caches & 2)) hMix.t = nullptr;
  if (!(caches & 4)) hPre.t = nullptr;
  maybeNullOne(in, call.args());

  // The model (docs/mhc.md "Checks, in order"), from the descriptors as created.
  Outcome out{};
  Verdict& verdict = out.verdict;
  const Limits& p = *c.profile;
  std::vector<int64_t> lead;
  int64_t n = 0, d = 0;
  if (v2 && (!p.hasV2 || (mode != 0 && mode != 1))) verdict.invalid = true;
  if (anyNull({&x, &phi, &alpha, &bias, &hIn, &hPost})) verdict.invalid = true;
  const bool alphaOk = alpha.t != nullptr && alpha.v.dims.size() == 1 && (alpha.v.dims[0] == 2 || alpha.v.dims[0] == 3);
  const bool threeAlpha = alphaOk && alpha.v.dims[0] == 3;
  if (!alphaOk) verdict.invalid = true;
  if (threeAlpha && hRes.t == nullptr) verdict.invalid = true;
  const int present = (invRms.t != nullptr) + (hMix.t != nullptr) + (hPre.t != nullptr);
  if (present != 0 && present != 3) verdict.invalid = true;
  hRes.used = threeAlpha;
  if (!verdict.invalid && judgeX(x, p, &lead, &n, &d, &verdict)) {
    const int64_t rows = phi.v.dims.empty() ? -1 : phi.v.dims[0];
    const int64_t residual = rows - 2 * n;
    const bool rowsOk = threeAlpha ? (residual == n * n || (p.factorial && residual == factorial(n))) : residual == 0;
    if (!rowsOk) verdict.invalid = true;
    expectTensor(phi, {rows, n * d}, kF32, &verdict);
    expectTensor(alpha, alpha.v.dims, kF32, &verdict);
    expectTensor(bias, {rows}, kF32, &verdict);
    if (gamma.t != nullptr) expectTensor(gamma, {n, d}, kF32, &verdict);
    expectTensor(hIn, cat(lead, {d}), x.dtype, &verdict);
    expectTensor(hPost, cat(lead, {n}), kF32, &verdict);
    if (threeAlpha) expectTensor(hRes, residual == n * n ? cat(lead, {n, n}) : cat(lead, {residual}), kF32, &verdict);
    if (present == 3) {
      expectTensor(invRms, lead, kF32, &verdict);
      expectTensor(hMix, cat(lead, {rows}), kF32, &verdict);
      expectTensor(hPre, cat(lead, {n}), kF32, &verdict);
    }
  }
  std::vector<Arg*> inputs, outputs;
  for (Arg& a : call.args()) {
    if (a.t == nullptr || !a.used) continue;
    (a.output ? outputs : inputs).push_back(&a);
  }
  if (!verdict.invalid) judgeMemory(world, inputs, outputs, nullptr, nullptr, &verdict);
  for (const Arg* a : outputs) out.outputs.push_back(a->v);

  world.snapshot();
  if (v2) {
    out.status = aclnnMhcPreV2GetWorkspaceSize(x.t, phi.t, alpha.t, bias.t, gamma.t, normEps, hcEps, mode, hIn.t,
                                               hPost.t, hRes.t, invRms.t, hMix.t, hPre.t, sizeArg, executorArg);
    out.run = aclnnMhcPreV2;
  } else {
    out.status = aclnnMhcPreGetWorkspaceSize(x.t, phi.t, alpha.t, bias.t, gamma.t, normEps, hcEps, hIn.t, hPost.t,
                                             hRes.t, invRms.t, hMix.t, hPre.t, sizeArg, executorArg);
    out.run = aclnnMhcPre;
  }
  return out;
}

Outcome backward(fuzz::Input& in, fuzz::World& world, bool v2, uint64_t* sizeArg, aclOpExecutor** executorArg) {
  const Choices c = decodeChoices(in, true);
  gradkit::rt::setSocOverride(c.profile->soc);
  const int64_t mode = v2 ? pickMode(in) : 0;
  const float hcEps = static_cast<float>(pickEps(in));
  const bool gradXPostGiven = !in.oneIn(2);
  const bool inPlace = gradXPostGiven && in.oneIn(4);
  const std::vector<int64_t> xShape = cat(c.lead, {c.n, c.d});

  Call call(in, world);
  Arg& x = call.add("x", c.xDtype, xShape, false);
  Arg& phi = call.add("phi", kF32, {c.f, c.k}, false);
  Arg& alpha = call.add("alpha", kF32, {c.alphaLength}, false);
  Arg& gradHIn = call.add("gradHIn", c.xDtype, cat(c.lead, {c.d}), false);
  Arg& gradHPost = call.add("gradHPost", kF32, cat(c.lead, {c.n}), false);
  Arg& gradHRes = call.add("gradHRes", kF32, c.resShape, false);
  Arg& invRms = call.add("invRms", kF32, c.lead, false);
  Arg& hMix = call.add("hMix", kF32, cat(c.lead, {c.f}), false);
  Arg& hPre = call.add("hPre", kF32, cat(c.lead, {c.n}), false);
  Arg& hPost = call.add("hPost", kF32, cat(c.lead, {c.n}), false);
  Arg& gamma = call.add("gammaOptional", kF32, {c.n, c.d}, false);
  Arg& gradXPost = call.add("gradXPostOptional", c.xDtype, xShape, false);
  Arg& gradX = call.add("gradX", c.xDtype, xShape, true);
  Arg& gradPhi = call.add("gradPhi", kF32, {c.f, c.k}, true);
  Arg& gradAlpha = call.add("gradAlpha", kF32, {3}, true);
  Arg& gradBias = call.add("gradBias", kF32, {c.f}, true);
  Arg& gradGamma = call.add("gradGamma", kF32, {c.n, c.d}, true);
  if (!c.gamma) gamma.t = nullptr;
  if (!gradXPostGiven) gradXPost.t = nullptr;
  if (inPlace && gradXPost.t != nullptr) {
    gradX.t = gradXPost.t;
    gradX.v = gradXPost.v;
    gradX.dtype = gradXPost.dtype;
    gradX.format = gradXPost.format;
  }
  maybeNullOne(in, call.args());

  Outcome out{};
  Verdict& verdict = out.verdict;
  const Limits& p = *c.profile;
  std::vector<int64_t> lead;
  int64_t n = 0, d = 0;
  gradGamma.used = gamma.t != nullptr;
  if (v2 && (!p.hasV2 || (mode != 0 && mode != 1))) verdict.invalid = true;
  if (anyNull({&x, &phi, &alpha, &gradHIn, &gradHPost, &gradHRes, &invRms, &hMix, &hPre, &hPost, &gradX, &gradPhi,
               &gradAlpha, &gradBias})) {
    verdict.invalid = true;
  }
  if (gamma.t != nullptr && gradGamma.t == nullptr) verdict.invalid = true;
  if (!verdict.invalid && judgeX(x, p, &lead, &n, &d, &verdict)) {
    int64_t residual = -1;
    if (gradHRes.v.dims == cat(lead, {n, n})) {
      residual = n * n;
    } else if (p.factorial && gradHRes.v.dims == cat(lead, {factorial(n)})) {
      residual = factorial(n);
    } else {
      verdict.invalid = true;
    }
    const int64_t rows = 2 * n + residual;
    expectTensor(gradHRes, gradHRes.v.dims, kF32, &verdict);
    expectTensor(phi, {rows, n * d}, kF32, &verdict);
    expectTensor(alpha, {3}, kF32, &verdict);
    expectTensor(gradHIn, cat(lead, {d}), x.dtype, &verdict);
    expectTensor(gradHPost, cat(lead, {n}), kF32, &verdict);
    expectTensor(invRms, lead, kF32, &verdict);
    expectTensor(hMix, cat(lead, {rows}), kF32, &verdict);
    expectTensor(hPre, cat(lead, {n}), kF32, &verdict);
    expectTensor(hPost, cat(lead, {n}), kF32, &verdict);
    if (gamma.t != nullptr) expectTensor(gamma, {n, d}, kF32, &verdict);
    if (gradXPost.t != nullptr) expectTensor(gradXPost, x.v.dims, x.dtype, &verdict);
    expectTensor(gradX, x.v.dims, x.dtype, &verdict);
    expectTensor(gradPhi, {rows, n * d}, kF32, &verdict);
    expectTensor(gradAlpha, {3}, kF32, &verdict);
    expectTensor(gradBias, {rows}, kF32, &verdict);
    if (gamma.t != nullptr) expectTensor(gradGamma, {n, d}, kF32, &verdict);
  }
  std::vector<Arg*> inputs, outputs;
  for (Arg& a : call.args()) {
    if (a.t == nullptr || !a.used) continue;
    (a.output ? outputs : inputs).push_back(&a);
  }
  if (!verdict.invalid) judgeMemory(world, inputs, outputs, &gradX, &gradXPost, &verdict);
  for (const Arg* a : outputs) out.outputs.push_back(a->v);

  world.snapshot();
  if (v2) {
    out.status = aclnnMhcPreBackwardV2GetWorkspaceSize(
        x.t, phi.t, alpha.t, gradHIn.t, gradHPost.t, gradHRes.t, invRms.t, hMix.t, hPre.t, hPost.t, gamma.t,
        gradXPost.t, hcEps, mode, gradX.t, gradPhi.t, gradAlpha.t, gradBias.t, gradGamma.t, sizeArg, executorArg);
    out.run = aclnnMhcPreBackwardV2;
  } else {
    out.status = aclnnMhcPreBackwardGetWorkspaceSize(
        x.t, phi.t, alpha.t, gradHIn.t, gradHPost.t, gradHRes.t, invRms.t, hMix.t, hPre.t, hPost.t, gamma.t,
        gradXPost.t, hcEps, gradX.t, gradPhi.t, gradAlpha.t, gradBias.t, gradGamma.t, sizeArg, executorArg);
    out.run = aclnnMhcPreBackward;
  }
  return out;
}

// MhcPost[Backward]'s tensors by role: streams [lead, N, D] in the first one's dtype (BF16 / FP16), square
// [lead, N, N] and weights [lead, N] FP32, hidden [lead, D] in the streams' dtype; hRes is optional on Ascend950 only.
enum class Role { Streams, Square, Hidden, Weights };
struct PostArg {
  const char* name;
  Role role;
  bool output;
};
constexpr PostArg kPostArgs[] = {{"x", Role::Streams, false},
                                 {"hRes", Role::Square, false},
                                 {"hOut", Role::Hidden, false},
                                 {"hPost", Role::Weights, false},
                                 {"out", Role::Streams, true}};
constexpr PostArg kPostBackwardArgs[] = {
    {"gradOutput", Role::Streams, false}, {"x", Role::Streams, false},      {"hRes", Role::Square, false},
    {"hOut", Role::Hidden, false},        {"hPost", Role::Weights, false},  {"gradX", Role::Streams, true},
    {"gradHRes", Role::Square, true},     {"gradHOut", Role::Hidden, true}, {"gradHPost", Role::Weights, true}};

std::vector<int64_t> postShape(Role role, const std::vector<int64_t>& lead, int64_t n, int64_t d) {
  switch (role) {
    case Role::Streams:
      return cat(lead, {n, d});
    case Role::Square:
      return cat(lead, {n, n});
    case Role::Hidden:
      return cat(lead, {d});
    default:
      return cat(lead, {n});
  }
}
int postDtype(Role role, int streams) { return role == Role::Square || role == Role::Weights ? kF32 : streams; }

Outcome post(fuzz::Input& in, fuzz::World& world, bool bwd, uint64_t* sizeArg, aclOpExecutor** executorArg) {
  const uint8_t pm = in.u8();
  const Limits& p = kProfiles[pm < 170 ? 0 : 1 + pm % 2];
  gradkit::rt::setSocOverride(p.soc);
  const bool bsnd = in.oneIn(2);
  std::vector<int64_t> decodedLead = {pickLead(in)};
  if (bsnd) decodedLead.push_back(pickLead(in));
  const int64_t decodedN = pickStreams(in), decodedD = pickHidden(in, p);
  // BF16 / FP16; sometimes FLOAT or INT16 for every streams and hidden tensor at once (one rule, not three, broken).
  const uint8_t dm = in.u8();
  const int xDtype = dm >= 240 ? (dm % 2 ? ACL_FLOAT : ACL_INT16) : (dm % 2 ? ACL_FLOAT16 : ACL_BF16);
  const bool hResGiven = !in.oneIn(4);
  const std::vector<PostArg> spec =
      bwd ? std::vector<PostArg>(std::begin(kPostBackwardArgs), std::end(kPostBackwardArgs))
          : std::vector<PostArg>(std::begin(kPostArgs), std::end(kPostArgs));
  Call call(in, world);
  std::vector<Arg*> a;
  for (const PostArg& s : spec) {
    a.push_back(
        &call.add(s.name, postDtype(s.role, xDtype), postShape(s.role, decodedLead, decodedN, decodedD), s.output));
  }
  Arg& hRes = *a[bwd ? 2 : 1];
  if (!hResGiven) hRes.t = nullptr;
  maybeNullOne(in, call.args());

  // The model (docs/mhc.md), from the descriptors as created; the first streams tensor sets lead, N, D and the dtype.
  Outcome out{};
  Verdict& verdict = out.verdict;
  for (const Arg* arg : a) {
    if (arg->t == nullptr && (arg != &hRes || !p.hasV2)) verdict.invalid = true;
  }
  std::vector<int64_t> lead;
  int64_t n = 0, d = 0;
  if (!verdict.invalid && judgeX(*a[0], p, &lead, &n, &d, &verdict, /*post=*/true)) {
    for (size_t i = 1; i < a.size(); ++i) {
      if (a[i]->t != nullptr) {
        expectTensor(*a[i], postShape(spec[i].role, lead, n, d), postDtype(spec[i].role, a[0]->dtype), &verdict);
      }
    }
  }
  std::vector<Arg*> inputs, outputs;
  for (Arg* arg : a) {
    if (arg->t != nullptr) (arg->output ? outputs : inputs).push_back(arg);
  }
  if (!verdict.invalid) judgeMemory(world, inputs, outputs, nullptr, nullptr, &verdict);
  for (const Arg* arg : outputs) out.outputs.push_back(arg->v);

  world.snapshot();
  if (bwd) {
    out.status = aclnnMhcPostBackwardGetWorkspaceSize(a[0]->t, a[1]->t, a[2]->t, a[3]->t, a[4]->t, a[5]->t, a[6]->t,
                                                      a[7]->t, a[8]->t, sizeArg, executorArg);
    out.run = aclnnMhcPostBackward;
  } else {
    out.status = aclnnMhcPostGetWorkspaceSize(a[0]->t, a[1]->t, a[2]->t, a[3]->t, a[4]->t, sizeArg, executorArg);
    out.run = aclnnMhcPost;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Input in(data, size);
  fuzz::World world;
  const uint8_t op =
      in.u8() % 6;  // 0 MhcPre, 1 MhcPreV2, 2 MhcPreBackward, 3 MhcPreBackwardV2, 4 MhcPost, 5 MhcPostBackward
  uint64_t workspaceSize = 0;
  aclOpExecutor* executor = nullptr;
  const uint8_t nulls = in.u8();
  uint64_t* sizeArg = nulls == 0xF1 ? nullptr : &workspaceSize;
  aclOpExecutor** executorArg = nulls == 0xF2 ? nullptr : &executor;
  Outcome out = op < 2   ? forward(in, world, op == 1, sizeArg, executorArg)
                : op < 4 ? backward(in, world, op == 3, sizeArg, executorArg)
                         : post(in, world, op == 5, sizeArg, executorArg);
  const bool mustFail = out.verdict.invalid || sizeArg == nullptr || executorArg == nullptr;
  if (!mustFail && !out.verdict.unsure && out.status != ACLNN_SUCCESS) {
    fuzz::finding("GetWorkspaceSize rejected a call the model finds valid");
  }
  fuzz::finish(world, out.status, workspaceSize, executor, out.run, out.outputs, mustFail);
  return 0;
}
