// The MhcPreBackward suite: cases/mhc_pre_backward.json through aclnnMhcPreBackward (aclnnMhcPreBackwardV2 when the
// case gives "opImplMode"), judged by the double benchmark (DECISIONS.md: matmul ops) against golden/mhc_pre in
// fp64, with the same formulas in plain fp32 as the naive computation. The caches the backward reads (invRms, hMix,
// hPre, hPost) are the fp64 golden forward's, rounded to fp32, on the case's x, phi, alpha, gamma and a bias drawn
// from the case seed: one context feeds both. The bench prints the roofline ratio (FLOPs 4*T*F*K, the two matmuls,
// on the fp32 GEMM peak; bytes x + gradHIn + gradXPost + gradX + the rest once) and PyTorch's forward + backward
// time. Case keys: suites/mhc_suite_common.h.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "aclnnop/aclnn_mhc_pre_backward.h"
#include "aclnnop/aclnn_mhc_pre_backward_v2.h"
#include "golden/mhc_pre.h"
#include "harness/case_values.h"
#include "harness/error.h"
#include "harness/op_suite.h"
#include "suites/mhc_suite_common.h"

namespace gradkit::cli {
namespace {

// 3.2's T of HiFloat32 (opImplMode 1 matmuls): the absolute floor of the fp32 outputs they feed.
constexpr double kHf32Threshold = 0x1.0p-11;

const std::vector<std::string> kInputs = {"x",      "phi",  "alpha", "gradHIn", "gradHPost", "gradHRes",
                                          "invRms", "hMix", "hPre",  "hPost",   "gamma",     "gradXPost"};
const std::vector<std::string> kOutputs = {"gradX", "gradPhi", "gradAlpha", "gradBias", "gradGamma"};

// Fills invRms, hMix, hPre and hPost with the fp64 golden forward of the case's inputs.
void writeForwardCaches(OpCase& c, const MhcCase& mhc) {
  std::mt19937 rng(static_cast<uint32_t>(c.info().seed) ^ 0x6d686362u);
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> bias(static_cast<size_t>(mhc.fusion()));
  for (double& b : bias) b = static_cast<float>(uniform(rng));
  const std::vector<double> x = denseValues(c, "x"), phi = denseValues(c, "phi"), alpha = denseValues(c, "alpha"),
                            gamma = denseValues(c, "gamma");
  golden::MhcPreInputs<double> in;
  in.sizes = {mhc.tokens, mhc.streams, mhc.hidden, mhc.fusion()};
  in.x = x.data();
  in.phi = phi.data();
  in.alpha = alpha.data();
  in.bias = bias.data();
  in.gamma = mhc.gamma ? gamma.data() : nullptr;
  in.normEps = static_cast<float>(mhc.normEps);
  in.hcEps = static_cast<float>(mhc.hcEps);
  const golden::MhcPreOutputs<double> out = golden::mhcPre(in);
  writeView(c, "invRms", out.invRms);
  writeView(c, "hMix", out.hMix);
  writeView(c, "hPre", out.hPre);
  writeView(c, "hPost", out.hPost);
}

template <class Real>
void runGolden(OpCase& c, const MhcCase& mhc) {
  const CaseInputs<Real> input(c, kInputs);
  golden::MhcPreBackwardInputs<Real> in;
  in.sizes = {mhc.tokens, mhc.streams, mhc.hidden, mhc.fusion()};
  in.x = input("x");
  in.phi = input("phi");
  in.alpha = input("alpha");
  in.gradHIn = input("gradHIn");
  in.gradHPost = input("gradHPost");
  in.gradHRes = input("gradHRes");
  in.invRms = input("invRms");
  in.hMix = input("hMix");
  in.hPre = input("hPre");
  in.hPost = input("hPost");
  in.gamma = mhc.gamma ? input("gamma") : nullptr;
  in.gradXPost = mhc.gradXPost ? input("gradXPost") : nullptr;
  in.hcEps = static_cast<Real>(static_cast<float>(mhc.hcEps));
  in.hf32 = mhc.opImplMode == 1;
  const golden::MhcPreBackwardOutputs<Real> out = golden::mhcPreBackward(in);
  storeGolden(c, "gradX", out.gradX);
  storeGolden(c, "gradPhi", out.gradPhi);
  storeGolden(c, "gradAlpha", out.gradAlpha);
  storeGolden(c, "gradBias", out.gradBias);
  if (mhc.gamma) storeGolden(c, "gradGamma", out.gradGamma);  // else it must keep its bytes
}

OpDescriptor mhcPreBackward() {
  OpDescriptor d;
  d.name = "mhc_pre_backward";
  d.api = "aclnnMhcPreBackward";
  d.needsShape = false;
  d.gate = Gate::kDoubleBenchmark;
  for (const std::string& key : kInputs) d.tensors.push_back(inputRule(key, mhcDefaults(key)));
  for (const std::string& key : kOutputs) d.tensors.push_back(outputRule(key, mhcDefaults(key)));
  d.bind = [](OpCase& c) {
    const MhcCase mhc = parseMhcCase(c.json());
    if (mhc.residual == 0) throw HarnessError("mhc_pre_backward: 'residual' \"none\" is forward only");
    writeForwardCaches(c, mhc);
    OpCall call;
    if (mhc.v2) call.run = aclnnMhcPreBackwardV2;
    call.plan = [&c, mhc](uint64_t* workspaceSize, aclOpExecutor** executor) {
      const aclTensor* gamma = mhc.gamma ? c.acl("gamma") : nullptr;
      const aclTensor* gradXPost = mhc.gradXPost ? c.acl("gradXPost") : nullptr;
      const auto hcEps = static_cast<float>(mhc.hcEps);
      if (mhc.v2) {
        return aclnnMhcPreBackwardV2GetWorkspaceSize(
            c.acl("x"), c.acl("phi"), c.acl("alpha"), c.acl("gradHIn"), c.acl("gradHPost"), c.acl("gradHRes"),
            c.acl("invRms"), c.acl("hMix"), c.acl("hPre"), c.acl("hPost"), gamma, gradXPost, hcEps, mhc.opImplMode,
            c.acl("gradX"), c.acl("gradPhi"), c.acl("gradAlpha"), c.acl("gradBias"), c.acl("gradGamma"), workspaceSize,
            executor);
      }
      return aclnnMhcPreBackwardGetWorkspaceSize(
          c.acl("x"), c.acl("phi"), c.acl("alpha"), c.acl("gradHIn"), c.acl("gradHPost"), c.acl("gradHRes"),
          c.acl("invRms"), c.acl("hMix"), c.acl("hPre"), c.acl("hPost"), gamma, gradXPost, hcEps, c.acl("gradX"),
          c.acl("gradPhi"), c.acl("gradAlpha"), c.acl("gradBias"), c.acl("gradGamma"), workspaceSize, executor);
    };
    call.golden = [&c, mhc] { runGolden<double>(c, mhc); };
    call.naive = [&c, mhc] { runGolden<float>(c, mhc); };
    if (mhc.opImplMode == 1) call.computeThreshold = kHf32Threshold;
    call.work = [&c, mhc] {
      double bytes = 0.0;
      for (const std::string& key : kInputs) {
        if ((key == "gamma" && !mhc.gamma) || (key == "gradXPost" && !mhc.gradXPost)) continue;
        bytes += static_cast<double>(c.bytes(key));
      }
      for (const std::string& key : kOutputs) {
        if (key != "gradGamma" || mhc.gamma) bytes += static_cast<double>(c.bytes(key));
      }
      return Work{bytes, mhcPreFlops(mhc, true), false};
    };
    OpCall::Peer peer = mhcTorchPeer(mhc, c.info().dtypeText);
    peer.args.insert(peer.args.end(), {"--mode", "backward"});
    call.peer = peer;
    return call;
  };
  d.run = aclnnMhcPreBackward;  // V2 cases run through aclnnMhcPreBackwardV2 (OpCall::run)
  return d;
}

}  // namespace
GRADKIT_REGISTER_OP_SUITE(mhcPreBackward)
}  // namespace gradkit::cli
