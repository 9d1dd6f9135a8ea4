// The MhcPreSinkhornBackward suite: cases/mhc_pre_sinkhorn_backward.json through aclnnMhcPreSinkhornBackward, judged
// by the double benchmark (DECISIONS.md: matmul ops) against golden::mhcPreSinkhornBackward in fp64, with the same
// formulas in plain fp32 as the naive computation. The saved tensors the backward reads (hPre, hcBeforeNorm, invRms,
// sumOut, normOut) are the fp64 golden forward's (golden::mhcPreSinkhorn, HF32 operands) of the case's x, phi, alpha
// and bias, rounded to fp32: one context feeds both, as mhc_pre_backward.cpp does. The backward's matmuls take HF32
// operands in the A2/A3 profiles (the golden's hf32 and HiFloat32's absolute floor there) and fp32 ones in Ascend950.
// The bench prints the roofline ratio (FLOPs 4*T*F*K, the two matmuls, on the fp32 GEMM peak; bytes: every tensor
// read or written once) and PyTorch's forward + backward time (tools/peers/mhc_pre_sinkhorn.py).
//
// Case keys (besides name, dtype "bf16" | "fp16"; suites/mhc_suite_common.h, MhcPreSinkhornCase):
//   "layout":   "TND" (default; the Ascend950 profile only) with "tokens", or "BSND" with "batch" and "seq"
//   "N", "D":   n (default 4; up to 8 in the Ascend950 profile) and c (a multiple of 128 below 100000)
//   "numIters": default 20: the steps 2 numIters of sumOut and normOut (upstream's tiling accepts 20 only)
//   "hcEps", "normEps": default 1e-6 (normEps only feeds the saved invRms)
//   "soc":      the profile (default: the process's, Ascend950 unless GRADKIT_SOC says)
// and a tensor spec per tensor key (e.g. "gradHRes": {"shape": [2, 8, 16]} for the flat [lead, n*n] form).
#include <string>
#include <vector>

#include "aclnnop/aclnn_mhc_pre_sinkhorn_backward.h"
#include "golden/mhc_pre_sinkhorn.h"
#include "harness/case_values.h"
#include "harness/op_suite.h"
#include "runtime/runtime.h"
#include "suites/mhc_suite_common.h"

namespace gradkit::cli {
namespace {

// 3.2's T of HiFloat32 (the A2/A3 backward's matmul operands): the absolute floor of the fp32 outputs they feed.
constexpr double kHf32Threshold = 0x1.0p-11;

const std::vector<std::string> kInputs = {"gradHin", "gradHPost", "gradHRes",     "x",      "phi",    "alpha",
                                          "bias",    "hPre",      "hcBeforeNorm", "invRms", "sumOut", "normOut"};
const std::vector<std::string> kOutputs = {"gradX", "gradPhi", "gradAlpha", "gradBias"};

/** Fills the saved tensors with the fp64 golden forward of the case's x, phi, alpha and bias. */
void writeSavedTensors(OpCase& c, const MhcPreSinkhornCase& s) {
  const golden::MhcPreSinkhornOutputs<double> out = mhcPreSinkhornGolden<double>(c, s);
  writeView(c, "hPre", out.pre.hPre);
  writeView(c, "hcBeforeNorm", out.pre.hMix);
  writeView(c, "invRms", out.pre.invRms);
  writeView(c, "sumOut", out.sum);
  writeView(c, "normOut", out.norm);
}

template <class Real>
void runGolden(OpCase& c, const MhcPreSinkhornCase& s, bool hf32) {
  const CaseInputs<Real> input(c, kInputs);
  golden::MhcPreSinkhornBackwardInputs<Real> in;
  in.sizes = {s.tokens, s.streams, s.hidden, s.fusion()};
  in.iters = s.iters;
  in.x = input("x");
  in.phi = input("phi");
  in.alpha = input("alpha");
  in.bias = input("bias");
  in.gradHIn = input("gradHin");
  in.gradHPost = input("gradHPost");
  in.gradHRes = input("gradHRes");  // [lead, n, n] and [lead, n*n] hold the same dense values
  in.hPre = input("hPre");
  in.hMix = input("hcBeforeNorm");
  in.invRms = input("invRms");
  in.norm = input("normOut");
  in.sum = input("sumOut");
  in.hcEps = static_cast<Real>(static_cast<float>(s.hcEps));
  in.hf32 = hf32;
  const golden::MhcPreBackwardOutputs<Real> out = golden::mhcPreSinkhornBackward(in);
  storeGolden(c, "gradX", out.gradX);
  storeGolden(c, "gradPhi", out.gradPhi);
  storeGolden(c, "gradAlpha", out.gradAlpha);
  storeGolden(c, "gradBias", out.gradBias);
}

OpDescriptor mhcPreSinkhornBackward() {
  OpDescriptor d;
  d.name = "mhc_pre_sinkhorn_backward";
  d.api = "aclnnMhcPreSinkhornBackward";
  d.needsShape = false;
  d.gate = Gate::kDoubleBenchmark;
  for (const std::string& key : kInputs) d.tensors.push_back(inputRule(key, mhcPreSinkhornDefaults(key)));
  for (const std::string& key : kOutputs) d.tensors.push_back(outputRule(key, mhcPreSinkhornDefaults(key)));
  d.bind = [](OpCase& c) {
    const MhcPreSinkhornCase s = parseMhcPreSinkhornCase(c.json());
    // A rejection case never runs: its sizes may be ones the golden cannot take.
    if (c.json().value("expect_status", 0) == 0) writeSavedTensors(c, s);
    const bool hf32 = rt::currentSoc() != rt::Soc::Ascend950;  // the case's "soc" applies while it binds
    OpCall call;
    call.plan = [&c, s](uint64_t* workspaceSize, aclOpExecutor** executor) {
      return aclnnMhcPreSinkhornBackwardGetWorkspaceSize(
          c.acl("gradHin"), c.acl("gradHPost"), c.acl("gradHRes"), c.acl("x"), c.acl("phi"), c.acl("alpha"),
          c.acl("bias"), c.acl("hPre"), c.acl("hcBeforeNorm"), c.acl("invRms"), c.acl("sumOut"), c.acl("normOut"),
          s.hcEps, c.acl("gradX"), c.acl("gradPhi"), c.acl("gradAlpha"), c.acl("gradBias"), workspaceSize, executor);
    };
    call.golden = [&c, s, hf32] { runGolden<double>(c, s, hf32); };
    call.naive = [&c, s, hf32] { runGolden<float>(c, s, hf32); };
    if (hf32) call.computeThreshold = kHf32Threshold;
    call.work = [&c, s] {
      double bytes = 0.0;
      for (const std::string& key : kInputs) bytes += static_cast<double>(c.bytes(key));
      for (const std::string& key : kOutputs) bytes += static_cast<double>(c.bytes(key));
      const double flops =
          4.0 * static_cast<double>(s.tokens) * static_cast<double>(s.fusion()) * static_cast<double>(s.width());
      return Work{bytes, flops, false};
    };
    call.peer = mhcPreSinkhornPeer(s, c.info().dtypeText, true);
    return call;
  };
  d.run = aclnnMhcPreSinkhornBackward;
  return d;
}

}  // namespace
GRADKIT_REGISTER_OP_SUITE(mhcPreSinkhornBackward)
}  // namespace gradkit::cli
