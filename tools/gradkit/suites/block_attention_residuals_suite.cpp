#include "suites/block_attention_residuals_suite.h"

#include <cmath>
#include <cstdio>

#include "harness/case_keys.h"
#include "harness/case_values.h"
#include "harness/error.h"
#include "harness/peer.h"

namespace gradkit::cli {

BlockResidualsCase parseBlockResidualsCase(const nlohmann::json& testCase, bool grad) {
  BlockResidualsCase b;
  b.tokens = integerKeyAtLeast(testCase, "T", 8, 0);
  b.blocks = integerKeyAtLeast(testCase, "N", 4, 0);
  b.hidden = integerKeyAtLeast(testCase, "H", 64, 1);
  b.validBlockNum = testCase.value("validBlockNum", int64_t{-1});
  b.normEps = testCase.value("normEps", 1e-6);
  b.needBackward = testCase.value("needBackward", true);
  b.caches = testCase.value("caches", true);
  if (b.needBackward && !b.caches) throw HarnessError("'caches' false needs 'needBackward' false");
  const std::string proj =
      stringKeyOneOf(testCase, "projShape", "[H]", {"[H]", "[1,H]"}, " must be \"[H]\" or \"[1,H]\"");
  b.projRow = grad || proj == "[1,H]";
  return b;
}

std::function<TensorDefaults(const CaseInfo&)> blockResidualsDefaults(const std::string& key, bool grad) {
  return [key, grad](const CaseInfo& info) {
    const BlockResidualsCase b = parseBlockResidualsCase(info.json, grad);
    const int64_t t = b.tokens, n = b.blocks, h = b.hidden;
    TensorDefaults d{info.dtype, {}, info.seed, uniformValues(-1.0, 1.0)};
    if (key == "partialBlock" || key == "hiddenStates" || key == "gradHiddenStates" || key == "gradPartialBlock") {
      d.shape = {t, h};
      if (key == "partialBlock") d.values = uniformValues(-2.0, 2.0);
    } else if (key == "blockRes" || key == "gradBlockRes") {
      d.shape = {t, n, h};
      if (key == "blockRes") d.values = uniformValues(-2.0, 2.0);
    } else if (key == "projWeight" || key == "gradProjWeight") {
      d.shape = b.projRow ? std::vector<int64_t>{1, h} : std::vector<int64_t>{h};
      const double scale = 1.0 / std::sqrt(static_cast<double>(h));
      if (key == "projWeight") d.values = uniformValues(-scale, scale);
    } else if (key == "normWeight" || key == "gradNormWeight") {
      d.shape = {h};
      if (key == "normWeight") d.values = uniformValues(0.5, 1.5);
    } else if (key == "invNorm" || key == "probs") {
      d.dtype = ACL_FLOAT;
      d.shape = {t, n + 1};
    } else {
      throw HarnessError("block attention residuals suites: no defaults for tensor '" + key + "'");
    }
    return d;
  };
}

template <class Real>
golden::BlockResidualOutputs<Real> blockResidualsForward(OpCase& c, const BlockResidualsCase& b) {
  const std::vector<Real> partial = as<Real>(denseValues(c, "partialBlock")),
                          blockRes = as<Real>(denseValues(c, "blockRes")),
                          proj = as<Real>(denseValues(c, "projWeight")), norm = as<Real>(denseValues(c, "normWeight"));
  return golden::blockAttentionResiduals(b.sizes(), partial.data(), blockRes.data(), proj.data(), norm.data(),
                                         static_cast<Real>(static_cast<float>(b.normEps)));
}

template golden::BlockResidualOutputs<double> blockResidualsForward(OpCase&, const BlockResidualsCase&);
template golden::BlockResidualOutputs<float> blockResidualsForward(OpCase&, const BlockResidualsCase&);

double blockResidualsBytes(OpCase& c, const std::vector<std::string>& keys) {
  double bytes = 0.0;
  for (const std::string& key : keys) bytes += static_cast<double>(c.bytes(key));
  return bytes;
}

namespace {

std::string numberText(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.17g", value);
  return text;
}

}  // namespace

OpCall::Peer blockResidualsPeer(const BlockResidualsCase& b, const std::string& dtypeText, bool grad) {
  OpCall::Peer peer;
  peer.script = "block_attention_residuals.py";
  peer.files = {{"partialBlock", "partialBlock"},
                {"blockRes", "blockRes"},
                {"projWeight", "projWeight"},
                {"normWeight", "normWeight"}};
  if (grad) peer.files.push_back({"gradHiddenStates", "gradHiddenStates"});
  peer.args = {"--dtype", dtypeText, "--mode", grad ? "backward" : "forward", "--norm-eps", numberText(b.normEps)};
  if (!grad && !b.needBackward) peer.args.push_back("--no-grad");
  peer.torch = currentTorchPython() ? PeerTorch::Current : PeerTorch::Debian;
  return peer;
}

}  // namespace gradkit::cli
