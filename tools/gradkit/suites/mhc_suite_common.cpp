#include "suites/mhc_suite_common.h"

#include <cmath>

#include "harness/case_keys.h"
#include "harness/case_values.h"
#include "harness/error.h"
#include "harness/peer.h"
#include "ops/mhc/kernels/mhc_sizes.h"

namespace gradkit::cli {

std::vector<int64_t> MhcTokens::shape(std::vector<int64_t> tail) const {
  std::vector<int64_t> dims = bsnd ? std::vector<int64_t>{batch, seq} : std::vector<int64_t>{tokens};
  dims.insert(dims.end(), tail.begin(), tail.end());
  return dims;
}

MhcTokens parseMhcTokens(const nlohmann::json& testCase, int64_t minimum) {
  MhcTokens t;
  const std::string layout = testCase.value("layout", std::string("TND"));
  if (layout != "TND" && layout != "BSND") throw HarnessError("'layout' must be \"TND\" or \"BSND\"");
  t.bsnd = layout == "BSND";
  if (t.bsnd) {
    t.batch = integerKeyAtLeast(testCase, "batch", 1, minimum);
    t.seq = integerKeyAtLeast(testCase, "seq", 1, minimum);
    t.tokens = t.batch * t.seq;
  } else {
    t.tokens = integerKeyAtLeast(testCase, "tokens", 1, minimum);
  }
  return t;
}

MhcCase parseMhcCase(const nlohmann::json& testCase) {
  MhcCase mhc;
  static_cast<MhcTokens&>(mhc) = parseMhcTokens(testCase, 1);
  mhc.streams = integerKeyAtLeast(testCase, "N", 4, 1);
  mhc.hidden = integerKeyAtLeast(testCase, "D", 64, 1);
  const std::string residual = testCase.value("residual", std::string("square"));
  if (residual == "square") {
    mhc.residual = mhc.streams * mhc.streams;
  } else if (residual == "factorial") {
    mhc.residual = kernels::mhcFactorial(mhc.streams);
  } else if (residual == "none") {
    mhc.residual = 0;
  } else {
    throw HarnessError("'residual' must be \"square\", \"factorial\" or \"none\"");
  }
  mhc.gamma = testCase.value("gammaOptional", true);
  mhc.caches = testCase.value("caches", true);
  mhc.gradXPost = testCase.value("gradXPostOptional", true);
  mhc.v2 = testCase.contains("opImplMode");
  mhc.opImplMode = testCase.value("opImplMode", int64_t{0});
  mhc.normEps = testCase.value("normEps", 1e-6);
  mhc.hcEps = testCase.value("hcEps", 1e-6);
  return mhc;
}

std::function<TensorDefaults(const CaseInfo&)> mhcDefaults(const std::string& key) {
  return [key](const CaseInfo& info) {
    const MhcCase mhc = parseMhcCase(info.json);
    const int64_t n = mhc.streams, d = mhc.hidden, f = mhc.fusion();
    TensorDefaults t{ACL_FLOAT, {}, info.seed, uniformValues(-1.0, 1.0)};
    // phi scaled so that hMix * invRms is of order one: the sigmoids then work in their sensitive range.
    const double phiScale = 1.0 / std::sqrt(static_cast<double>(mhc.width()));
    if (key == "x" || key == "gradX" || key == "gradXPost") {
      t.dtype = info.dtype;
      t.shape = mhc.shape({n, d});
      if (key == "x") t.values = uniformValues(-2.0, 2.0);
    } else if (key == "phi" || key == "gradPhi") {
      t.shape = {f, mhc.width()};
      if (key == "phi") t.values = uniformValues(-phiScale, phiScale);
    } else if (key == "alpha" || key == "gradAlpha") {
      t.shape = {key == "alpha" ? mhc.alphaLength() : 3};
      if (key == "alpha") t.values = uniformValues(0.5, 1.5);
    } else if (key == "bias" || key == "gradBias") {
      t.shape = {f};
    } else if (key == "gamma" || key == "gradGamma") {
      t.shape = {n, d};
      if (key == "gamma") t.values = uniformValues(0.5, 1.5);
    } else if (key == "hIn" || key == "gradHIn") {
      t.dtype = info.dtype;
      t.shape = mhc.shape({d});
    } else if (key == "hPost" || key == "hPre" || key == "gradHPost") {
      t.shape = mhc.shape({n});
    } else if (key == "hRes" || key == "gradHRes") {
      // N*N as [..,N,N]; N! (and the unused hRes of alpha of 2) flat.
      t.shape = mhc.residual == n * n ? mhc.shape({n, n}) : mhc.shape({mhc.residual == 0 ? n * n : mhc.residual});
    } else if (key == "invRms") {
      t.shape = mhc.shape({});
    } else if (key == "hMix") {
      t.shape = mhc.shape({f});
    } else {
      throw HarnessError("mHC suites: no defaults for tensor '" + key + "'");
    }
    return t;
  };
}

double bytesOf(OpCase& c, const std::vector<std::string>& keys) {
  double bytes = 0;
  for (const std::string& key : keys) bytes += static_cast<double>(c.bytes(key));
  return bytes;
}

double mhcPreFlops(const MhcCase& mhc, bool backward) {
  return (backward ? 4.0 : 2.0) * static_cast<double>(mhc.tokens) * static_cast<double>(mhc.fusion()) *
         static_cast<double>(mhc.width());
}

double mhcPostFlops(const MhcCase& mhc, bool backward) {
  return (backward ? 4.0 : 2.0) * static_cast<double>(mhc.tokens * mhc.streams * mhc.hidden * (mhc.streams + 1));
}

double mhcSinkhornFlops(int64_t tokens, int64_t n, int64_t iters, bool backward) {
  return (backward ? 4.0 : 2.0) * static_cast<double>(tokens * (2 * iters + 1) * n * n);
}

OpCall::Peer mhcTorchPeer(const MhcCase& mhc, const std::string& dtypeText) {
  OpCall::Peer peer;
  peer.script = "mhc_pre.py";
  peer.files = {{"x", "x"}, {"phi", "phi"}, {"alpha", "alpha"}};
  peer.args = {"--dtype", dtypeText, "--norm-eps", std::to_string(mhc.normEps), "--hc-eps", std::to_string(mhc.hcEps)};
  if (mhc.gamma) peer.files.push_back({"gamma", "gamma"});
  peer.torch = currentTorchPython() ? PeerTorch::Current : PeerTorch::Debian;
  return peer;
}

MhcPreSinkhornCase parseMhcPreSinkhornCase(const nlohmann::json& testCase) {
  MhcPreSinkhornCase s;
  static_cast<MhcCase&>(s) = parseMhcCase(testCase);
  s.residual = s.streams * s.streams;
  s.needBackward = testCase.value("needBackward", true);
  s.hcMult = testCase.value("hcMult", int64_t{4});
  s.iters = integerKeyAtLeast(testCase, "numIters", 20, 0);
  if (s.needBackward && !s.caches) throw HarnessError("'caches' false needs 'needBackward' false");
  return s;
}

std::function<TensorDefaults(const CaseInfo&)> mhcPreSinkhornDefaults(const std::string& key) {
  return [key](const CaseInfo& info) {
    const MhcPreSinkhornCase s = parseMhcPreSinkhornCase(info.json);
    const int64_t n = s.streams, c = s.hidden, f = s.fusion();
    const auto steps = [&s](std::vector<int64_t> tail) {
      std::vector<int64_t> shape = s.shape(std::move(tail));
      shape.insert(shape.begin(), 2 * s.iters);
      return shape;
    };
    TensorDefaults t{ACL_FLOAT, {}, info.seed, uniformValues(-1.0, 1.0)};
    if (key == "x" || key == "gradX") {
      t.dtype = info.dtype;
      t.shape = s.shape({n, c});
      if (key == "x") t.values = uniformValues(-2.0, 2.0);
    } else if (key == "hin" || key == "gradHin") {
      t.dtype = info.dtype;
      t.shape = s.shape({c});
    } else if (key == "phi" || key == "gradPhi") {
      t.shape = {f, s.width()};
      // hcBeforeNorm * invRms of order one: the sigmoids and the softmax work in their sensitive range.
      const double phiScale = 1.0 / std::sqrt(static_cast<double>(s.width()));
      if (key == "phi") t.values = uniformValues(-phiScale, phiScale);
    } else if (key == "alpha" || key == "gradAlpha") {
      t.shape = {3};
      if (key == "alpha") t.values = uniformValues(0.5, 1.5);
    } else if (key == "bias" || key == "gradBias") {
      t.shape = {f};
    } else if (key == "hPost" || key == "hPre" || key == "gradHPost") {
      t.shape = s.shape({n});
    } else if (key == "hRes") {
      t.shape = s.shape({n * n});
    } else if (key == "gradHRes") {
      t.shape = s.shape({n, n});
    } else if (key == "hcBeforeNorm") {
      t.shape = s.shape({f});
    } else if (key == "invRms") {
      t.shape = s.shape({1});
    } else if (key == "sumOut") {
      t.shape = steps({n});
    } else if (key == "normOut") {
      t.shape = steps({n, n});
    } else {
      throw HarnessError("mHC pre-Sinkhorn suites: no defaults for tensor '" + key + "'");
    }
    return t;
  };
}

template <class Real>
golden::MhcPreSinkhornOutputs<Real> mhcPreSinkhornGolden(OpCase& c, const MhcPreSinkhornCase& s) {
  const std::vector<Real> x = as<Real>(denseValues(c, "x")), phi = as<Real>(denseValues(c, "phi")),
                          alpha = as<Real>(denseValues(c, "alpha")), bias = as<Real>(denseValues(c, "bias"));
  golden::MhcPreInputs<Real> in;
  in.sizes = {s.tokens, s.streams, s.hidden, s.fusion()};
  in.x = x.data();
  in.phi = phi.data();
  in.alpha = alpha.data();
  in.bias = bias.data();
  in.normEps = static_cast<Real>(static_cast<float>(s.normEps));  // the kernels read the attributes as float
  in.hcEps = static_cast<Real>(static_cast<float>(s.hcEps));
  in.hf32 = true;  // the forward's matmul takes HF32 operands in every profile
  return golden::mhcPreSinkhorn(in, s.iters);
}

template golden::MhcPreSinkhornOutputs<double> mhcPreSinkhornGolden(OpCase&, const MhcPreSinkhornCase&);
template golden::MhcPreSinkhornOutputs<float> mhcPreSinkhornGolden(OpCase&, const MhcPreSinkhornCase&);

OpCall::Peer mhcPreSinkhornPeer(const MhcPreSinkhornCase& s, const std::string& dtypeText, bool backward) {
  OpCall::Peer peer;
  peer.script = "mhc_pre_sinkhorn.py";
  peer.files = {{"x", "x"}, {"phi", "phi"}, {"alpha", "alpha"}, {"bias", "bias"}};
  if (backward) {
    peer.files.insert(peer.files.end(), {{"gradHin", "gradHin"}, {"gradHPost", "gradHPost"}, {"gradHRes", "gradHRes"}});
  }
  peer.args = {"--dtype",    dtypeText,
               "--mode",     backward ? "backward" : "forward",
               "--norm-eps", std::to_string(s.normEps),
               "--hc-eps",   std::to_string(s.hcEps),
               "--iters",    std::to_string(s.iters)};
  if (!backward && !s.needBackward) peer.args.push_back("--no-grad");
  peer.torch = currentTorchPython() ? PeerTorch::Current : PeerTorch::Debian;
  return peer;
}

}  // namespace gradkit::cli
