// The Dropout suite: cases/dropout.json through aclnnDropout, the output and the mask compared bit for bit with
// golden/dropout (DECISIONS.md: bit-exact gate), and the bandwidth bench.
//
// Case keys (besides the generic ones of harness/op_suite.h; the data seed comes from the name, as "seed" is an
// argument):
//   "input", "out":  tensor specs
//   "maskOut":       tensor spec, default UINT8 [ceil(n/128)*16] (a sentinel before the run, which must survive where
//                    aclnnDropout does not write the mask: eval, p == 0, p == 1)
//   "p":             drop probability, a number or "nan", "inf", "-inf", "-0" (default 0.5)
//   "train":         bool (default true)
//   "seed", "offset": int64 (defaults 0)
// Bench: bytes = n * (input + output element size) + 2 * n / 8 mask bytes (written, then read).
#include <cstdio>

#include "aclnnop/aclnn_dropout.h"
#include "golden/dropout.h"
#include "harness/op_suite.h"

namespace gradkit::cli {
namespace {

TensorRule maskRule() {
  TensorRule mask = outputRule("maskOut", [](const CaseInfo& info) {
    return TensorDefaults{ACL_UINT8, {maskBytesFor(info.numel)}, info.seed, ValueSpec{}};
  });
  mask.dumpName = "mask";
  mask.reportErrors = false;  // the row's errors are the output's
  return mask;
}

OpDescriptor dropout() {
  OpDescriptor d;
  d.name = "dropout";
  d.api = "aclnnDropout";
  d.seedFromCase = false;
  d.tensors = {inputRule("input"), outputRule("out"), maskRule()};
  d.run = aclnnDropout;
  d.bind = [](OpCase& c) {
    const double p = c.number("p", 0.5);
    const bool train = c.flag("train", true);
    const int64_t seed = c.integer("seed", 0), offset = c.integer("offset", 0);
    const int64_t n = c.spec("input").numel();
    OpCall call;
    call.plan = [&c, p, train, seed, offset](uint64_t* workspaceSize, aclOpExecutor** executor) {
      return aclnnDropoutGetWorkspaceSize(c.acl("input"), p, train, seed, offset, c.acl("out"), c.acl("maskOut"),
                                          workspaceSize, executor);
    };
    // The golden mask starts as the mask's initial bytes: where dropout does not write it, they must stay.
    call.golden = [&c, p, train, seed, offset, n] {
      golden::dropout(c.spec("input").dtype, c.spec("out").dtype, c.dense("input").data(), n, p, train, seed, offset,
                      c.golden("out").data(), c.golden("maskOut"));
    };
    call.work = [&c] {
      return Work{static_cast<double>(c.bytes("input") + c.bytes("out") + 2 * c.bytes("maskOut")), 0.0, false};
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
GRADKIT_REGISTER_OP_SUITE(dropout)
}  // namespace gradkit::cli
