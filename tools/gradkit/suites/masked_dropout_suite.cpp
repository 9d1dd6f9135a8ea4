#include "suites/masked_dropout_suite.h"

#include <cstdio>

#include "base/dtype.h"

namespace gradkit::cli {

OpDescriptor maskedDropoutDescriptor(MaskedDropoutOp op) {
  OpDescriptor d;
  d.name = op.name;
  d.api = op.api;
  d.tensors = {
      inputRule(op.inputKey),
      inputRule("mask",
                [](const CaseInfo& info) {  // every mask byte pattern
                  return TensorDefaults{ACL_UINT8, {maskBytesFor(info.numel)}, info.seed, uniformValues(0, 255)};
                }),
      outputRule(op.outputKey)};
  d.run = op.run;
  d.bind = [op](OpCase& c) {
    const double attribute = c.number(op.attributeKey, op.attributeDefault);
    const int64_t n = c.spec(op.inputKey).numel();
    OpCall call;
    call.plan = [&c, op, attribute](uint64_t* workspaceSize, aclOpExecutor** executor) {
      return op.plan(c.acl(op.inputKey), c.acl("mask"), attribute, c.acl(op.outputKey), workspaceSize, executor);
    };
    call.computesNothing = n == 0 || c.spec("mask").numel() == 0;
    call.golden = [&c, op, attribute, n] {
      op.golden(c.spec(op.inputKey).dtype, c.spec(op.outputKey).dtype, c.dense(op.inputKey).data(),
                c.dense("mask").data(), attribute, c.golden(op.outputKey).data(), n);
    };
    call.work = [&c, op, n] {
      return Work{static_cast<double>(c.bytes(op.inputKey) + c.bytes(op.outputKey)) + static_cast<double>(n) / 8.0, 0.0,
                  false};
    };
    char scale[40];
    std::snprintf(scale, sizeof scale, "%.17g", op.peerScale(attribute));
    call.peer = OpCall::Peer{"dropout_v3_grad.py",
                             {{op.inputKey, "grad"}, {"mask", "mask"}},
                             {"--dtype", c.info().dtypeText, "--scale", scale},
                             PeerTorch::Current};
    return call;
  };
  return d;
}

}  // namespace gradkit::cli
