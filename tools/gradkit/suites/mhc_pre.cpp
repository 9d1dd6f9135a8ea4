// The MhcPre suite: cases/mhc_pre.json through aclnnMhcPre (aclnnMhcPreV2 when the case gives "opImplMode"),
// judged by the double benchmark (DECISIONS.md: matmul ops) against golden/mhc_pre in fp64, with the same formulas
// in plain fp32 as the naive computation; the bench prints the roofline ratio (FLOPs 2*T*F*K on the fp32 GEMM peak;
// bytes x + hIn + the small outputs) and the PyTorch forward's time. Case keys: suites/mhc_suite_common.h.
#include <memory>
#include <string>
#include <vector>

#include "aclnnop/aclnn_mhc_pre.h"
#include "aclnnop/aclnn_mhc_pre_v2.h"
#include "golden/mhc_pre.h"
#include "harness/case_values.h"
#include "harness/op_suite.h"
#include "suites/mhc_suite_common.h"

namespace gradkit::cli {
namespace {

// 3.2's T of HiFloat32 (opImplMode 1 matmuls): the absolute floor of the fp32 outputs they feed.
constexpr double kHf32Threshold = 0x1.0p-11;

const std::vector<std::string> kOutputs = {"hIn", "hPost", "hRes", "invRms", "hMix", "hPre"};

template <class Real>
void runGolden(OpCase& c, const MhcCase& mhc) {
  const std::vector<Real> x = as<Real>(denseValues(c, "x")), phi = as<Real>(denseValues(c, "phi")),
                          alpha = as<Real>(denseValues(c, "alpha")), bias = as<Real>(denseValues(c, "bias")),
                          gamma = as<Real>(denseValues(c, "gamma"));
  golden::MhcPreInputs<Real> in;
  in.sizes = {mhc.tokens, mhc.streams, mhc.hidden, mhc.fusion()};
  in.x = x.data();
  in.phi = phi.data();
  in.alpha = alpha.data();
  in.alphaLength = mhc.alphaLength();
  in.bias = bias.data();
  in.gamma = mhc.gamma ? gamma.data() : nullptr;
  in.normEps = static_cast<Real>(static_cast<float>(mhc.normEps));  // the op reads its attributes as float
  in.hcEps = static_cast<Real>(static_cast<float>(mhc.hcEps));
  in.hf32 = mhc.opImplMode == 1;
  const golden::MhcPreOutputs<Real> out = golden::mhcPre(in);
  storeGolden(c, "hIn", out.hIn);
  storeGolden(c, "hPost", out.hPost);
  if (mhc.residual != 0) storeGolden(c, "hRes", out.hRes);
  if (mhc.caches) {
    storeGolden(c, "invRms", out.invRms);
    storeGolden(c, "hMix", out.hMix);
    storeGolden(c, "hPre", out.hPre);
  }
}

OpDescriptor mhcPre() {
  OpDescriptor d;
  d.name = "mhc_pre";
  d.api = "aclnnMhcPre";
  d.needsShape = false;
  d.gate = Gate::kDoubleBenchmark;
  d.tensors = {inputRule("x", mhcDefaults("x")), inputRule("phi", mhcDefaults("phi")),
               inputRule("alpha", mhcDefaults("alpha")), inputRule("bias", mhcDefaults("bias")),
               inputRule("gamma", mhcDefaults("gamma"))};
  for (const std::string& key : kOutputs) d.tensors.push_back(outputRule(key, mhcDefaults(key)));
  d.bind = [](OpCase& c) {
    const MhcCase mhc = parseMhcCase(c.json());
    OpCall call;
    if (mhc.v2) call.run = aclnnMhcPreV2;
    call.plan = [&c, mhc](uint64_t* workspaceSize, aclOpExecutor** executor) {
      aclTensor* gamma = mhc.gamma ? c.acl("gamma") : nullptr;
      aclTensor* hRes = mhc.residual != 0 ? c.acl("hRes") : nullptr;
      aclTensor* invRms = mhc.caches ? c.acl("invRms") : nullptr;
      aclTensor* hMix = mhc.caches ? c.acl("hMix") : nullptr;
      aclTensor* hPre = mhc.caches ? c.acl("hPre") : nullptr;
      if (mhc.v2) {
        return aclnnMhcPreV2GetWorkspaceSize(c.acl("x"), c.acl("phi"), c.acl("alpha"), c.acl("bias"), gamma,
                                             mhc.normEps, mhc.hcEps, mhc.opImplMode, c.acl("hIn"), c.acl("hPost"), hRes,
                                             invRms, hMix, hPre, workspaceSize, executor);
      }
      return aclnnMhcPreGetWorkspaceSize(c.acl("x"), c.acl("phi"), c.acl("alpha"), c.acl("bias"), gamma, mhc.normEps,
                                         mhc.hcEps, c.acl("hIn"), c.acl("hPost"), hRes, invRms, hMix, hPre,
                                         workspaceSize, executor);
    };
    call.golden = [&c, mhc] { runGolden<double>(c, mhc); };
    call.naive = [&c, mhc] { runGolden<float>(c, mhc); };
    if (mhc.opImplMode == 1) call.computeThreshold = kHf32Threshold;
    call.work = [&c, mhc] {
      double bytes = static_cast<double>(c.bytes("x") + c.bytes("hIn") + c.bytes("hPost") + c.bytes("phi"));
      if (mhc.residual != 0) bytes += static_cast<double>(c.bytes("hRes"));
      if (mhc.caches) bytes += static_cast<double>(c.bytes("invRms") + c.bytes("hMix") + c.bytes("hPre"));
      return Work{bytes, mhcPreFlops(mhc, false), false};
    };
    OpCall::Peer peer = mhcTorchPeer(mhc, c.info().dtypeText);
    peer.args.insert(peer.args.end(), {"--mode", "forward"});
    call.peer = peer;
    return call;
  };
  d.run = aclnnMhcPre;  // V2 cases run through aclnnMhcPreV2 (OpCall::run)
  return d;
}

}  // namespace
GRADKIT_REGISTER_OP_SUITE(mhcPre)
}  // namespace gradkit::cli
