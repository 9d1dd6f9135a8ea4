#include "suites/mhc_suite_common.h"

#include <cmath>

#include "harness/case_keys.h"
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

OpCall::Peer mhcTorchPeer(const MhcCase& mhc, const std::string& dtypeText) {
  OpCall::Peer peer;
  peer.script = "mhc_pre.py";
  peer.files = {{"x", "x"}, {"phi", "phi"}, {"alpha", "alpha"}};
  peer.args = {"--dtype", dtypeText, "--norm-eps", std::to_string(mhc.normEps), "--hc-eps", std::to_string(mhc.hcEps)};
  if (mhc.gamma) peer.files.push_back({"gamma", "gamma"});
  peer.torch = currentTorchPython() ? PeerTorch::Current : PeerTorch::Debian;
  return peer;
}

}  // namespace gradkit::cli
