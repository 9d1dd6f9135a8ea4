// The MhcPreSinkhorn suite: cases/mhc_pre_sinkhorn.json through aclnnMhcPreSinkhorn, judged by the double benchmark
// (DECISIONS.md: matmul ops) against golden/mhc_pre_sinkhorn in fp64, with the same formulas in plain fp32 as the
// naive computation. The matmul takes HF32 operands in every profile (the golden's hf32 = true), so the fp32 outputs
// have HiFloat32's absolute floor, as MhcPreV2's opImplMode 1 cases. Every output is compared: hin, hPost, hRes and,
// with needBackward, hPre, hcBeforeNorm, invRms, sumOut [2 numIters, lead, n] and normOut [2 numIters, lead, n, n]
// (dense, step-major); without it they must keep their bytes. The bench prints the roofline ratio (FLOPs 2*T*F*K on
// the fp32 GEMM peak; bytes: every tensor read or written once) and PyTorch's time for the reference
// (tools/peers/mhc_pre_sinkhorn.py: the forward, recording autograd's graph when needBackward).
//
// Case keys (besides name, dtype "bf16" | "fp16"; suites/mhc_suite_common.h, MhcPreSinkhornCase):
//   "layout":       "TND" (default; the Ascend950 profile only) with "tokens", or "BSND" with "batch" and "seq"
//   "N", "D":       n (default 4; x's dim -2) and c (x's last dim)
//   "hcMult":       the attribute (default 4; the only value upstream accepts), "numIters" (default 20, likewise)
//   "needBackward": true (default) | false
//   "caches":       true (default) | false (hPre, hcBeforeNorm, invRms, sumOut, normOut = nullptr; needBackward false)
//   "normEps", "hcEps": default 1e-6
//   "soc":          the profile (default: the process's, Ascend950 unless GRADKIT_SOC says)
// and a tensor spec per tensor key (e.g. "x": {"permute": [1, 0, 2]}) to override its view or values.
#include <string>
#include <vector>

#include "aclnnop/aclnn_mhc_pre_sinkhorn.h"
#include "golden/mhc_pre_sinkhorn.h"
#include "harness/case_values.h"
#include "harness/op_suite.h"
#include "suites/mhc_suite_common.h"

namespace gradkit::cli {
namespace {

// 3.2's T of HiFloat32 (the forward's matmul operands): the absolute floor of the fp32 outputs they feed.
constexpr double kHf32Threshold = 0x1.0p-11;

const std::vector<std::string> kInputs = {"x", "phi", "alpha", "bias"};
const std::vector<std::string> kOutputs = {"hin",          "hPost",  "hRes",   "hPre",
                                           "hcBeforeNorm", "invRms", "sumOut", "normOut"};
const std::vector<std::string> kSaved = {"hPre", "hcBeforeNorm", "invRms", "sumOut", "normOut"};

template <class Real>
void runGolden(OpCase& c, const MhcPreSinkhornCase& s) {
  const golden::MhcPreSinkhornOutputs<Real> out = mhcPreSinkhornGolden<Real>(c, s);
  storeGolden(c, "hin", out.pre.hIn);
  storeGolden(c, "hPost", out.pre.hPost);
  storeGolden(c, "hRes", out.hRes);
  if (!s.needBackward) return;  // the saved tensors keep their bytes
  storeGolden(c, "hPre", out.pre.hPre);
  storeGolden(c, "hcBeforeNorm", out.pre.hMix);
  storeGolden(c, "invRms", out.pre.invRms);
  storeGolden(c, "sumOut", out.sum);
  storeGolden(c, "normOut", out.norm);
}

OpDescriptor mhcPreSinkhorn() {
  OpDescriptor d;
  d.name = "mhc_pre_sinkhorn";
  d.api = "aclnnMhcPreSinkhorn";
  d.needsShape = false;
  d.gate = Gate::kDoubleBenchmark;
  for (const std::string& key : kInputs) d.tensors.push_back(inputRule(key, mhcPreSinkhornDefaults(key)));
  for (const std::string& key : kOutputs) d.tensors.push_back(outputRule(key, mhcPreSinkhornDefaults(key)));
  d.bind = [](OpCase& c) {
    const MhcPreSinkhornCase s = parseMhcPreSinkhornCase(c.json());
    OpCall call;
    call.plan = [&c, s](uint64_t* workspaceSize, aclOpExecutor** executor) {
      const auto saved = [&c, s](const char* key) { return s.caches ? c.acl(key) : nullptr; };
      return aclnnMhcPreSinkhornGetWorkspaceSize(
          c.acl("x"), c.acl("phi"), c.acl("alpha"), c.acl("bias"), s.hcMult, s.iters, s.hcEps, s.normEps,
          s.needBackward, c.acl("hin"), c.acl("hPost"), c.acl("hRes"), saved("hPre"), saved("hcBeforeNorm"),
          saved("invRms"), saved("sumOut"), saved("normOut"), workspaceSize, executor);
    };
    call.golden = [&c, s] { runGolden<double>(c, s); };
    call.naive = [&c, s] { runGolden<float>(c, s); };
    call.computeThreshold = kHf32Threshold;
    call.work = [&c, s] {
      double bytes = 0.0;
      for (const std::string& key : kInputs) bytes += static_cast<double>(c.bytes(key));
      for (const char* key : {"hin", "hPost", "hRes"}) bytes += static_cast<double>(c.bytes(key));
      if (s.needBackward) {
        for (const std::string& key : kSaved) bytes += static_cast<double>(c.bytes(key));
      }
      const double flops =
          2.0 * static_cast<double>(s.tokens) * static_cast<double>(s.fusion()) * static_cast<double>(s.width());
      return Work{bytes, flops, false};
    };
    call.peer = mhcPreSinkhornPeer(s, c.info().dtypeText, false);
    return call;
  };
  d.run = aclnnMhcPreSinkhorn;
  return d;
}

}  // namespace
GRADKIT_REGISTER_OP_SUITE(mhcPreSinkhorn)
}  // namespace gradkit::cli
