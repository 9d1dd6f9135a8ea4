// The MhcSinkhorn and MhcSinkhornBackward suites: cases/mhc_sinkhorn.json and cases/mhc_sinkhorn_backward.json,
// judged by the double benchmark against golden/mhc_sinkhorn in fp64, the naive computation being the same formulas
// in plain fp32. The saved steps (normOut, sumOut) are compared in the Ascend950 kernel's layout
// (ops/mhc/kernels/mhc_sinkhorn_kernel.h). The backward reads the fp64 golden's steps of the case's "x" rounded to
// fp32 and placed in that layout (what a forward saves), and is judged against the fp64 recurrence over those same
// values. The bench prints the copy-bandwidth roofline ratio (bytes: every tensor once; FLOPs about
// T (2 iters + 1) 2 n^2 forward, T (2 iters + 1) 4 n^2 backward) and PyTorch's time for the reference in fp32
// (tools/peers/mhc_sinkhorn.py).
//
// Case keys (besides name; dtype is always fp32): "layout" "TND" (default, "tokens") or "BSND" ("batch", "seq");
// "n" (default 4), "iters" (default 20), "eps" (default 1e-6); forward: "save" true (default) | false (normOut and
// sumOut nullptr); "soc".
#include <string>
#include <vector>

#include "aclnnop/aclnn_mhc_sinkhorn.h"
#include "aclnnop/aclnn_mhc_sinkhorn_backward.h"
#include "golden/mhc_sinkhorn.h"
#include "harness/case_keys.h"
#include "harness/case_values.h"
#include "harness/error.h"
#include "harness/op_suite.h"
#include "harness/peer.h"
#include "ops/mhc/kernels/mhc_sinkhorn_kernel.h"
#include "suites/mhc_suite_common.h"

namespace gradkit::cli {
namespace {

using kernels::kSinkhornColumns;

struct SinkhornCase : MhcTokens {
  int64_t n = 4, iters = 20;
  double eps = 1e-6;
  bool save = true;

  int64_t normElements() const { return 2 * iters * tokens * n * kSinkhornColumns; }
  int64_t sumElements() const { return 2 * iters * tokens * kSinkhornColumns; }
  kernels::SinkhornLayout layout() const { return {tokens, n, iters, kernels::ascend950SinkhornSplit(tokens, n)}; }
};

SinkhornCase parseSinkhornCase(const nlohmann::json& json) {
  SinkhornCase s;
  static_cast<MhcTokens&>(s) = parseMhcTokens(json, 0);  // 0 tokens: the backward's empty call
  s.n = integerKeyAtLeast(json, "n", 4, 1);
  s.iters = integerKeyAtLeast(json, "iters", 20, 0);
  s.eps = json.value("eps", 1e-6);
  s.save = json.value("save", true);
  return s;
}

std::function<TensorDefaults(const CaseInfo&)> sinkhornDefaults(const std::string& key) {
  return [key](const CaseInfo& info) {
    const SinkhornCase s = parseSinkhornCase(info.json);
    TensorDefaults t{ACL_FLOAT, {}, info.seed, uniformValues(-1.0, 1.0)};
    if (key == "x" || key == "output" || key == "gradOutput" || key == "out") {
      t.shape = s.shape({s.n, s.n});
      if (key == "x") t.values = uniformValues(-3.0, 3.0);
    } else if (key == "normOut") {
      t.shape = {s.normElements()};
    } else if (key == "sumOut") {
      t.shape = {s.sumElements()};
    } else {
      throw HarnessError("mHC Sinkhorn suites: no defaults for tensor '" + key + "'");
    }
    return t;
  };
}

/**
 * Calls pair(canonical, saved) for every saved value of every token and step: `canonical` indexes the golden's
 * unpadded steps (golden/mhc_sinkhorn.h), `saved` normOut / sumOut in the Ascend950 layout; `isNorm` says which.
 * sumOut's step 0 has no values (the softmax has no sum).
 */
template <class Pair>
void forEachSavedValue(const SinkhornCase& s, const Pair& pair) {
  const kernels::SinkhornLayout layout = s.layout();
  const int64_t n = s.n, t0 = s.tokens;
  for (int64_t t = 0; t < t0; ++t) {
    const kernels::SinkhornSpot spot = layout.spotOf(t);
    for (int64_t k = 0; k < 2 * s.iters; ++k) {
      for (int64_t r = 0; r < n; ++r) {
        for (int64_t c = 0; c < n; ++c) pair(true, ((k * t0 + t) * n + r) * n + c, layout.normRow(spot, k, r) + c);
      }
      for (int64_t i = 0; k > 0 && i < n; ++i) {
        pair(false, (k * t0 + t) * n + i, layout.stepSum(spot, k, i));
      }
    }
  }
}

/** Every step of `steps` at its place in the saved layout (padding and sumOut's step 0 zero). */
template <class Real>
void placeSteps(const SinkhornCase& s, const golden::SinkhornSteps<Real>& steps, std::vector<Real>& norm,
                std::vector<Real>& sum) {
  norm.assign(static_cast<size_t>(s.normElements()), Real(0));
  sum.assign(static_cast<size_t>(s.sumElements()), Real(0));
  forEachSavedValue(s, [&](bool isNorm, int64_t canonical, int64_t saved) {
    (isNorm ? norm : sum)[static_cast<size_t>(saved)] =
        (isNorm ? steps.norm : steps.sum)[static_cast<size_t>(canonical)];
  });
}

/** The steps a backward reads from normOut and sumOut (the values of their views), back in canonical order. */
template <class Real>
golden::SinkhornSteps<Real> stepsFromSaved(const SinkhornCase& s, const std::vector<double>& norm,
                                           const std::vector<double>& sum) {
  golden::SinkhornSteps<Real> steps;
  steps.norm.assign(static_cast<size_t>(2 * s.iters * s.tokens * s.n * s.n), Real(0));
  steps.sum.assign(static_cast<size_t>(2 * s.iters * s.tokens * s.n), Real(0));
  forEachSavedValue(s, [&](bool isNorm, int64_t canonical, int64_t saved) {
    (isNorm ? steps.norm : steps.sum)[static_cast<size_t>(canonical)] =
        static_cast<Real>((isNorm ? norm : sum)[static_cast<size_t>(saved)]);
  });
  return steps;
}

/** A case whose sizes the checks accept (a rejection case's golden is never asked for). */
bool validSizes(const SinkhornCase& s) {
  return s.tokens > 0 && (s.n == 4 || s.n == 6 || s.n == 8) && s.iters >= 1 && s.iters <= 100;
}

OpCall::Peer sinkhornPeer(const SinkhornCase& s, const char* mode) {
  OpCall::Peer peer;
  peer.script = "mhc_sinkhorn.py";
  peer.files = {{"x", "x"}};
  peer.args = {"--mode", mode, "--iters", std::to_string(s.iters), "--eps", std::to_string(s.eps)};
  if (!s.save) peer.args.push_back("--no-grad");
  peer.torch = currentTorchPython() ? PeerTorch::Current : PeerTorch::Debian;
  return peer;
}

OpDescriptor mhcSinkhorn() {
  OpDescriptor d;
  d.name = "mhc_sinkhorn";
  d.api = "aclnnMhcSinkhorn";
  d.needsShape = false;
  d.gate = Gate::kDoubleBenchmark;
  d.tensors.push_back(inputRule("x", sinkhornDefaults("x")));
  for (const char* key : {"output", "normOut", "sumOut"}) d.tensors.push_back(outputRule(key, sinkhornDefaults(key)));
  d.bind = [](OpCase& c) {
    const SinkhornCase s = parseSinkhornCase(c.json());
    OpCall call;
    call.plan = [&c, s](uint64_t* workspaceSize, aclOpExecutor** executor) {
      return aclnnMhcSinkhornGetWorkspaceSize(c.acl("x"), static_cast<float>(s.eps), s.iters, c.acl("output"),
                                              s.save ? c.acl("normOut") : nullptr, s.save ? c.acl("sumOut") : nullptr,
                                              workspaceSize, executor);
    };
    const auto golden = [&c, s](auto zero) {
      using Real = decltype(zero);
      const std::vector<Real> x = as<Real>(denseValues(c, "x"));
      const golden::SinkhornSteps<Real> steps =
          golden::mhcSinkhorn(x.data(), s.tokens, s.n, s.iters, static_cast<Real>(static_cast<float>(s.eps)));
      storeGolden(c, "output", steps.output);
      if (!s.save) return;  // normOut and sumOut keep their bytes
      std::vector<Real> norm, sum;
      placeSteps(s, steps, norm, sum);
      storeGolden(c, "normOut", norm);
      storeGolden(c, "sumOut", sum);
    };
    call.golden = [golden] { golden(0.0); };
    call.naive = [golden] { golden(0.0f); };
    call.work = [&c, s] {
      double bytes = static_cast<double>(c.bytes("x") + c.bytes("output"));
      if (s.save) bytes += static_cast<double>(c.bytes("normOut") + c.bytes("sumOut"));
      return Work{bytes, mhcSinkhornFlops(s.tokens, s.n, s.iters, false), false};
    };
    call.peer = sinkhornPeer(s, "forward");
    return call;
  };
  d.run = aclnnMhcSinkhorn;
  return d;
}

OpDescriptor mhcSinkhornBackward() {
  OpDescriptor d;
  d.name = "mhc_sinkhorn_backward";
  d.api = "aclnnMhcSinkhornBackward";
  d.needsShape = false;
  d.gate = Gate::kDoubleBenchmark;
  for (const char* key : {"x", "gradOutput", "normOut", "sumOut"}) {  // x only makes normOut and sumOut
    d.tensors.push_back(inputRule(key, sinkhornDefaults(key)));
  }
  d.tensors.push_back(outputRule("out", sinkhornDefaults("out")));
  d.bind = [](OpCase& c) {
    const SinkhornCase s = parseSinkhornCase(c.json());
    OpCall call;
    call.plan = [&c](uint64_t* workspaceSize, aclOpExecutor** executor) {
      return aclnnMhcSinkhornBackwardGetWorkspaceSize(c.acl("gradOutput"), c.acl("normOut"), c.acl("sumOut"),
                                                      c.acl("out"), workspaceSize, executor);
    };
    call.afterPlan = [&c, s] {  // what a forward of x saves, in fp32
      const auto elements = [&c](const char* key) {
        int64_t count = 1;
        for (int64_t dim : c.spec(key).shape) count *= dim;
        return count;
      };
      if (!validSizes(s) || elements("normOut") != s.normElements() || elements("sumOut") != s.sumElements()) {
        return;  // a rejection case: the call never runs
      }
      const std::vector<double> x = denseValues(c, "x");
      std::vector<double> norm, sum;
      placeSteps(s,
                 golden::mhcSinkhorn(x.data(), s.tokens, s.n, s.iters, static_cast<double>(static_cast<float>(s.eps))),
                 norm, sum);
      writeView(c, "normOut", norm);
      writeView(c, "sumOut", sum);
    };
    const auto golden = [&c, s](auto zero) {
      using Real = decltype(zero);
      const golden::SinkhornSteps<Real> steps =
          stepsFromSaved<Real>(s, denseValues(c, "normOut"), denseValues(c, "sumOut"));
      const std::vector<Real> gradOutput = as<Real>(denseValues(c, "gradOutput"));
      storeGolden(c, "out", golden::mhcSinkhornBackward(steps, gradOutput.data(), s.tokens, s.n, s.iters));
    };
    call.golden = [golden] { golden(0.0); };
    call.naive = [golden] { golden(0.0f); };
    call.computesNothing = s.tokens == 0;  // upstream accepts an empty call
    call.work = [&c, s] {
      const double bytes =
          static_cast<double>(c.bytes("gradOutput") + c.bytes("normOut") + c.bytes("sumOut") + c.bytes("out"));
      return Work{bytes, mhcSinkhornFlops(s.tokens, s.n, s.iters, true), false};
    };
    call.peer = sinkhornPeer(s, "backward");
    return call;
  };
  d.run = aclnnMhcSinkhornBackward;
  return d;
}

}  // namespace
GRADKIT_REGISTER_OP_SUITE(mhcSinkhorn)
GRADKIT_REGISTER_OP_SUITE(mhcSinkhornBackward)
}  // namespace gradkit::cli
