// The ThresholdBackward suite: cases/threshold_backward.json through aclnnThresholdBackward, compared bit for
// bit with golden/threshold_backward (DECISIONS.md: bit-exact gate), and the bandwidth bench with PyTorch as
// the peer.
//
// Case keys (besides the generic ones of harness/op_suite.h):
//   "gradOutput", "self", "out": tensor specs; the case shape is every tensor's default, so a broadcast case
//                    gives gradOutput or self its own "shape"
//   "threshold":     {"dtype": "int32", "value": 0} (the default); value may be "nan", "inf", "-0", ...
// Bench: each input read once (a broadcast input is small and stays in cache), out written once.
#include <cstdio>
#include <string>

#include "aclnnop/aclnn_threshold_backward.h"
#include "golden/threshold_backward.h"
#include "harness/error.h"
#include "harness/op_suite.h"

namespace gradkit::cli {
namespace {

// The sign of self decides, so small ranges give many zeros; gradients span the whole type so that extreme
// values must be copied bit for bit.
std::function<TensorDefaults(const CaseInfo&)> defaultsFor(bool isSelf) {
  return [isSelf](const CaseInfo& info) {
    ValueSpec values;  // floats: [-2, 2)
    switch (info.dtype) {
      case ACL_INT8:
        values.lo = isSelf ? -3 : -128;
        values.hi = isSelf ? 3 : 127;
        break;
      case ACL_UINT8:
        values.lo = 0;
        values.hi = isSelf ? 3 : 255;
        break;
      case ACL_INT32:
        values.lo = isSelf ? -3 : -2147483648.0;
        values.hi = isSelf ? 3 : 2147483647.0;
        break;
      case ACL_INT64:
        values.lo = isSelf ? -3 : -0x1.0p62;
        values.hi = isSelf ? 3 : 0x1.0p62;
        break;
      default:
        break;
    }
    return TensorDefaults{info.dtype, info.shape, info.seed, values};
  };
}

// The threshold for the peer's command line: integers as integers (PyTorch reads an int Scalar differently).
std::string peerThreshold(aclDataType dtype, double value) {
  if (dtype != ACL_FLOAT && dtype != ACL_FLOAT16 && dtype != ACL_BF16 && dtype != ACL_DOUBLE) {
    return std::to_string(static_cast<int64_t>(value));
  }
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", value);
  return text;
}

OpDescriptor thresholdBackward() {
  OpDescriptor d;
  d.name = "threshold_backward";
  d.api = "aclnnThresholdBackward";
  d.tensors = {inputRule("gradOutput", defaultsFor(false)), inputRule("self", defaultsFor(true)),
               outputRule("out", defaultsFor(false))};
  d.run = aclnnThresholdBackward;
  d.bind = [](OpCase& c) {
    aclDataType thresholdDtype = ACL_INT32;
    double value = 0.0;
    if (c.json().contains("threshold")) {
      const nlohmann::json& spec = c.json()["threshold"];
      if (!spec.is_object()) throw HarnessError("'threshold' must be {\"dtype\": ..., \"value\": ...}");
      if (spec.contains("dtype")) thresholdDtype = parseDtypeOrThrow(spec["dtype"].get<std::string>(), "threshold");
      if (spec.contains("value")) value = parseSpecialValue(spec["value"]);
    }
    aclScalar* threshold = c.scalar(thresholdDtype, value);
    OpCall call;
    call.plan = [&c, threshold](uint64_t* workspaceSize, aclOpExecutor** executor) {
      return aclnnThresholdBackwardGetWorkspaceSize(c.acl("gradOutput"), c.acl("self"), threshold, c.acl("out"),
                                                    workspaceSize, executor);
    };
    call.golden = [&c, thresholdDtype, value] {
      golden::thresholdBackward(c.info().dtype, c.dense("gradOutput").data(), c.spec("gradOutput").shape,
                                c.dense("self").data(), c.spec("self").shape, thresholdDtype, value,
                                c.golden("out").data(), c.spec("out").shape);
    };
    call.peer = OpCall::Peer{"threshold_backward.py",
                             {{"gradOutput", "gradOutput"}, {"self", "self"}},
                             {"--dtype", c.info().dtypeText, "--threshold", peerThreshold(thresholdDtype, value)}};
    return call;
  };
  return d;
}

}  // namespace
GRADKIT_REGISTER_OP_SUITE(thresholdBackward)
}  // namespace gradkit::cli
