// The ThresholdBackward suite: cases/threshold_backward.json through aclnnThresholdBackward, compared bit for
// bit with golden/threshold_backward (DECISIONS.md: bit-exact gate), and the bandwidth bench with PyTorch as
// the peer.
//
// Case keys (besides name, dtype, shape, seed; see harness/tensor_spec.h for the tensor keys):
//   "gradOutput", "self", "out": tensor specs (out's values are ignored: its storage starts as a sentinel);
//                    the case shape is every tensor's default, so a broadcast case gives gradOutput or self
//                    its own "shape"
//   "threshold":     {"dtype": "int32", "value": 0} (the default); value may be "nan", "inf", "-0", ...
//   "expect_status": the status GetWorkspaceSize must return (default 0: success, then compare)
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_threshold_backward.h"
#include "base/dtype.h"
#include "golden/threshold_backward.h"
#include "harness/compare.h"
#include "harness/dump.h"
#include "harness/error.h"
#include "harness/host_tensor.h"
#include "harness/npy.h"
#include "harness/peer.h"
#include "harness/suite.h"
#include "harness/timing.h"
#include "harness/two_phase.h"
#include "harness/view_checks.h"

namespace gradkit::cli {
namespace {

using nlohmann::json;

constexpr unsigned char kOutSentinel = 0xA5;  // in every byte of out's storage before the run

// Default values: the sign of self decides, so small ranges give many zeros; gradients span the whole type
// so that extreme values must be copied bit for bit.
ValueSpec defaultValues(aclDataType dtype, bool isSelf) {
  ValueSpec values;
  switch (dtype) {
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
      values.lo = -2.0;
      values.hi = 2.0;
      break;
  }
  return values;
}

struct ThresholdSpec {
  aclDataType dtype = ACL_INT32;
  double value = 0.0;
};

ThresholdSpec parseThreshold(const json& testCase) {
  ThresholdSpec threshold;
  if (!testCase.contains("threshold")) return threshold;
  const json& spec = testCase["threshold"];
  if (!spec.is_object()) throw HarnessError("'threshold' must be {\"dtype\": ..., \"value\": ...}");
  if (spec.contains("dtype")) threshold.dtype = parseDtypeOrThrow(spec["dtype"].get<std::string>(), "threshold");
  if (spec.contains("value")) threshold.value = parseSpecialValue(spec["value"]);
  return threshold;
}

std::vector<int64_t> caseShape(const json& testCase) {
  if (!testCase.contains("shape") || !testCase["shape"].is_array()) {
    throw HarnessError("case needs a 'shape' list");
  }
  return testCase["shape"].get<std::vector<int64_t>>();
}

// The three tensor specs of a case, with the case's defaults.
struct Specs {
  TensorSpec grad, self, out;
};

Specs parseSpecs(const json& testCase, aclDataType dtype) {
  const std::vector<int64_t> shape = caseShape(testCase);
  const uint64_t seed =
      testCase.contains("seed") ? testCase["seed"].get<uint64_t>() : hashName(testCase["name"].get<std::string>());
  auto tensor = [&](const char* name, bool isSelf) {
    const TensorDefaults defaults{dtype, shape, seed, defaultValues(dtype, isSelf)};
    return parseTensorSpec(testCase.contains(name) ? testCase[name] : json(), name, defaults);
  };
  return {tensor("gradOutput", false), tensor("self", true), tensor("out", false)};
}

// The threshold for the peer's command line: integers as integers (PyTorch reads an int Scalar differently).
std::string formatThreshold(const ThresholdSpec& threshold) {
  const bool integer = threshold.dtype != ACL_FLOAT && threshold.dtype != ACL_FLOAT16 && threshold.dtype != ACL_BF16 &&
                       threshold.dtype != ACL_DOUBLE;
  if (integer) return std::to_string(static_cast<int64_t>(threshold.value));
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", threshold.value);
  return text;
}

class ThresholdBackwardSuite : public Suite {
 public:
  std::string name() const override { return "threshold_backward"; }

  std::vector<VerifyRow> verify(const json& testCase, const VerifyContext& context) const override {
    const std::string dtypeText = testCase.value("dtype", std::string("fp32"));
    const aclDataType dtype = parseDtypeOrThrow(dtypeText, "case dtype");
    const Specs specs = parseSpecs(testCase, dtype);
    const ThresholdSpec threshold = parseThreshold(testCase);
    const int expectStatus = testCase.value("expect_status", 0);

    VerifyRow row;
    row.op = name();
    row.caseName = testCase["name"].get<std::string>();
    row.dtype = dtypeText;

    HostTensor grad(specs.grad);
    HostTensor self(specs.self);
    HostTensor out(specs.out, /*fill=*/false);
    out.fillBytes(kOutSentinel);
    const std::vector<unsigned char> gradBefore = grad.host();
    const std::vector<unsigned char> selfBefore = self.host();
    const std::vector<unsigned char> outBefore = out.host();

    const AclTensorPtr gradTensor = grad.makeAclTensor();
    const AclTensorPtr selfTensor = self.makeAclTensor();
    const AclTensorPtr outTensor = out.makeAclTensor();
    const AclScalarPtr thresholdScalar = makeAclScalar(threshold.dtype, threshold.value);

    const PlanCall plan = [&](uint64_t* workspaceSize, aclOpExecutor** executor) {
      return aclnnThresholdBackwardGetWorkspaceSize(gradTensor.get(), selfTensor.get(), thresholdScalar.get(),
                                                    outTensor.get(), workspaceSize, executor);
    };
    if (!runTwoPhase("aclnnThresholdBackward", plan, aclnnThresholdBackward, context.stream, expectStatus,
                     {{&out, &outBefore}}, row)) {
      return {row};
    }
    grad.download();
    self.download();
    out.download();

    // The golden runs on dense copies of the inputs as generated.
    const int64_t n = specs.out.numel();
    const std::vector<unsigned char> gradDense = gatherDense(grad.geometry(), gradBefore.data(), grad.elementSize());
    const std::vector<unsigned char> selfDense = gatherDense(self.geometry(), selfBefore.data(), self.elementSize());
    std::vector<unsigned char> golden(static_cast<size_t>(n) * out.elementSize());
    golden::thresholdBackward(dtype, gradDense.data(), specs.grad.shape, selfDense.data(), specs.self.shape,
                              threshold.dtype, threshold.value, golden.data(), specs.out.shape);
    const std::vector<unsigned char> ours = out.dense();

    const Comparison comparison = compareElements(dtype, ours.data(), golden.data(), n);
    const int64_t outside = changedBytesOutsideView(out, outBefore);
    const bool inputsKept = grad.host() == gradBefore && self.host() == selfBefore;
    row.bitExact = comparison.bitExact();
    row.maxAbsErr = comparison.maxAbsErr;
    row.maxRelErr = comparison.maxRelErr;
    row.passed = row.bitExact && outside == 0 && inputsKept;
    if (!row.bitExact) {
      const size_t size = dtypeSize(dtype);
      const auto at = static_cast<size_t>(comparison.firstMismatch);
      row.note = std::to_string(comparison.mismatches) + " of " + std::to_string(n) + " elements differ; first at " +
                 std::to_string(at) + ": ours " + hexBytes(ours.data() + at * size, size) + ", golden " +
                 hexBytes(golden.data() + at * size, size);
    }
    if (outside > 0)
      row.note += (row.note.empty() ? "" : "; ") + std::to_string(outside) + " writes outside out's view";
    if (!inputsKept) row.note += (row.note.empty() ? "" : "; ") + std::string("an input was modified");

    if (context.dumpDir) {
      dumpCase(*context.dumpDir, name(), row.caseName, testCase,
               {{"gradOutput", dtype, specs.grad.shape, gradDense.data()},
                {"self", dtype, specs.self.shape, selfDense.data()},
                {"golden_out", dtype, specs.out.shape, golden.data()},
                {"ours_out", dtype, specs.out.shape, ours.data()}});
    }
    return {row};
  }

  BenchRow bench(const json& benchCase, const BenchContext& context) const override {
    const std::string dtypeText = benchCase.value("dtype", std::string("fp32"));
    const aclDataType dtype = parseDtypeOrThrow(dtypeText, "bench dtype");
    Specs specs = parseSpecs(benchCase, dtype);
    for (TensorSpec* spec : {&specs.grad, &specs.self, &specs.out}) {
      if (!spec->isContiguous()) throw HarnessError("bench cases are contiguous; '" + spec->name + "' is not");
    }
    // Construction fills and uploads every input, and fillBytes writes all of out: all pages are faulted in.
    HostTensor grad(specs.grad);
    HostTensor self(specs.self);
    HostTensor out(specs.out, /*fill=*/false);
    out.fillBytes(0);
    const AclTensorPtr gradTensor = grad.makeAclTensor();
    const AclTensorPtr selfTensor = self.makeAclTensor();
    const AclTensorPtr outTensor = out.makeAclTensor();
    const ThresholdSpec thresholdSpec = parseThreshold(benchCase);
    const AclScalarPtr threshold = makeAclScalar(thresholdSpec.dtype, thresholdSpec.value);

    // The timed unit is what a caller pays: both phases and the wait for the stream.
    auto runOnce = [&] {
      uint64_t workspaceSize = 0;
      aclOpExecutor* executor = nullptr;
      aclnnStatus status = aclnnThresholdBackwardGetWorkspaceSize(gradTensor.get(), selfTensor.get(), threshold.get(),
                                                                  outTensor.get(), &workspaceSize, &executor);
      if (status != ACLNN_SUCCESS || workspaceSize != 0) {
        throw HarnessError("GetWorkspaceSize returned " + std::to_string(status) + " with workspace " +
                           std::to_string(workspaceSize) + ": " + recentErrorText());
      }
      status = aclnnThresholdBackward(nullptr, 0, executor, context.stream);
      const aclError sync = aclrtSynchronizeStream(context.stream);
      if (status != ACLNN_SUCCESS || sync != ACL_SUCCESS) {
        throw HarnessError("run returned " + std::to_string(status) + ", sync " + std::to_string(sync) + ": " +
                           recentErrorText());
      }
    };
    const double seconds = minSeconds(context.repeat, runOnce);

    // Each input is read once (a broadcast input is small and stays in cache) and out written once.
    const int64_t n = specs.out.numel();
    const double elementBytes = static_cast<double>(dtypeSize(dtype));
    const double bytes = elementBytes * static_cast<double>(specs.grad.numel() + specs.self.numel() + n);
    BenchRow row = makeBenchRow(name(), benchCase["name"].get<std::string>(), dtypeText, seconds,
                                Work{bytes, 0.0, false}, context);

    // A fast wrong result is no result: the output must still match the golden.
    out.download();
    std::vector<unsigned char> golden(out.host().size());
    golden::thresholdBackward(dtype, grad.host().data(), specs.grad.shape, self.host().data(), specs.self.shape,
                              thresholdSpec.dtype, thresholdSpec.value, golden.data(), specs.out.shape);
    const Comparison comparison = compareElements(dtype, out.host().data(), golden.data(), n);
    if (!comparison.bitExact()) row.note = std::to_string(comparison.mismatches) + " elements differ from the golden";

    if (context.peer) timePeer(specs, grad, self, dtypeText, thresholdSpec, context, row);
    return row;
  }

 private:
  // PyTorch's threshold_backward with out= on the same data, in a child process.
  static void timePeer(const Specs& specs, const HostTensor& grad, const HostTensor& self, const std::string& dtype,
                       const ThresholdSpec& threshold, const BenchContext& context, BenchRow& row) {
    TempDir dir;
    writeNpy(dir.path() / "gradOutput.npy", specs.grad.dtype, specs.grad.shape, grad.host().data());
    writeNpy(dir.path() / "self.npy", specs.self.dtype, specs.self.shape, self.host().data());
    std::string error;
    row.peerSeconds =
        runPeer(peerScript("threshold_backward.py"),
                {"--dir", dir.path().string(), "--dtype", dtype, "--threshold", formatThreshold(threshold), "--threads",
                 std::to_string(context.threads), "--repeat", std::to_string(context.repeat)},
                error);
    if (!row.peerSeconds) row.note += (row.note.empty() ? "" : "; ") + error;
  }
};

}  // namespace
}  // namespace gradkit::cli

namespace gradkit::cli {
GRADKIT_REGISTER_SUITE(ThresholdBackwardSuite)
}  // namespace gradkit::cli
