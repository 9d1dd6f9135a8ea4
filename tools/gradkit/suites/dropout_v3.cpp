// The DropoutV3 suite: cases/dropout_v3.json through aclnnDropoutV3, the output and the mask compared bit for bit
// with golden/dropout_v3 (DECISIONS.md: bit-exact gate), and the bandwidth bench.
//
// Case keys (besides the generic ones of harness/op_suite.h; the data seed comes from the name, as "seed" is an
// argument):
//   "input", "out":  tensor specs
//   "maskOut":       tensor spec, default UINT8 [ceil(n/128)*16]
//   "p":             drop probability, a number or "nan", "inf", "-inf", "-0" (default 0.5)
//   "seed", "offset": int64 (defaults 0)
//   "noiseShape":    true passes a (reserved, rejected) optionalNoiseShape tensor
// Bench: bytes = n * (input + output element size) + n / 8 mask bytes.
#include <cstdio>

#include "aclnnop/aclnn_dropout_v3.h"
#include "golden/dropout_v3.h"
#include "harness/op_suite.h"

namespace gradkit::cli {
namespace {

OpDescriptor dropoutV3() {
  OpDescriptor d;
  d.name = "dropout_v3";
  d.api = "aclnnDropoutV3";
  d.seedFromCase = false;
  TensorRule mask = outputRule("maskOut", [](const CaseInfo& info) {
    return TensorDefaults{ACL_UINT8, {maskBytesFor(info.numel)}, info.seed, ValueSpec{}};
  });
  mask.dumpName = "mask";
  mask.reportErrors = false;  // the row's errors are the output's
  d.tensors = {inputRule("input"), outputRule("out"), mask};
  d.run = aclnnDropoutV3;
  d.bind = [](OpCase& c) {
    const double p = c.number("p", 0.5);
    const int64_t seed = c.integer("seed", 0), offset = c.integer("offset", 0);
    const bool noiseShape = c.flag("noiseShape", false);
    const int64_t n = c.spec("input").numel();
    OpCall call;
    call.plan = [&c, p, seed, offset, noiseShape](uint64_t* workspaceSize, aclOpExecutor** executor) {
      return aclnnDropoutV3GetWorkspaceSize(c.acl("input"), noiseShape ? c.acl("input") : nullptr, p, seed, offset,
                                            c.acl("out"), c.acl("maskOut"), workspaceSize, executor);
    };
    call.golden = [&c, p, seed, offset, n] {
      const std::vector<uint8_t> bits =
          golden::dropoutV3(c.spec("input").dtype, c.dense("input").data(), n, p, seed, offset, c.golden("out").data());
      c.golden("maskOut").assign(bits.begin(), bits.end());
    };
    call.work = [&c] {
      return Work{static_cast<double>(c.bytes("input") + c.bytes("out") + c.bytes("maskOut")), 0.0, false};
    };
    call.benchNote = [n](double seconds, const BenchContext& context, BenchRow& row) {
      char text[120];
      std::snprintf(text, sizeof text, "%.3g G elements/s (%d threads)", static_cast<double>(n) / seconds / 1e9,
                    context.threads);
      row.note = text;
    };
    return call;
  };
  return d;
}

}  // namespace
GRADKIT_REGISTER_OP_SUITE(dropoutV3)
}  // namespace gradkit::cli
