#include "suites/masked_dropout_suite.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "base/dtype.h"
#include "harness/compare.h"
#include "harness/dump.h"
#include "harness/error.h"
#include "harness/host_tensor.h"
#include "harness/npy.h"
#include "harness/peer.h"
#include "harness/timing.h"
#include "harness/two_phase.h"
#include "harness/view_checks.h"

namespace gradkit::cli {
namespace {

using nlohmann::json;

constexpr unsigned char kOutSentinel = 0xA5;  // in every byte of the output's storage before the run

int64_t maskBytesFor(int64_t n) { return (n + 127) / 128 * 16; }

std::vector<int64_t> caseShape(const json& testCase) {
  if (!testCase.contains("shape") || !testCase["shape"].is_array()) throw HarnessError("case needs a 'shape' list");
  return testCase["shape"].get<std::vector<int64_t>>();
}

// The three tensor specs of a case, with the case's defaults.
struct Specs {
  TensorSpec input, mask, out;
};

Specs parseSpecs(const MaskedDropoutOp& op, const json& testCase, aclDataType dtype) {
  const std::vector<int64_t> shape = caseShape(testCase);
  const uint64_t seed =
      testCase.contains("seed") ? testCase["seed"].get<uint64_t>() : hashName(testCase["name"].get<std::string>());
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  auto tensor = [&](const std::string& name, const TensorDefaults& defaults) {
    return parseTensorSpec(testCase.contains(name) ? testCase[name] : json(), name, defaults);
  };
  ValueSpec data;  // [-2, 2): scaled results stay finite in every dtype
  data.lo = -2.0;
  data.hi = 2.0;
  ValueSpec bytes;  // every mask byte pattern
  bytes.lo = 0;
  bytes.hi = 255;
  return {tensor(op.inputKey, {dtype, shape, seed, data}), tensor("mask", {ACL_UINT8, {maskBytesFor(n)}, seed, bytes}),
          tensor(op.outputKey, {dtype, shape, seed, data})};
}

double parseAttribute(const MaskedDropoutOp& op, const json& testCase) {
  return testCase.contains(op.attributeKey) ? parseSpecialValue(testCase[op.attributeKey]) : op.attributeDefault;
}

}  // namespace

std::vector<VerifyRow> MaskedDropoutSuite::verify(const json& testCase, const VerifyContext& context) const {
  const std::string dtypeText = testCase.value("dtype", std::string("fp32"));
  const aclDataType dtype = parseDtypeOrThrow(dtypeText, "case dtype");
  const Specs specs = parseSpecs(op_, testCase, dtype);
  const double attribute = parseAttribute(op_, testCase);
  const int expectStatus = testCase.value("expect_status", 0);

  VerifyRow row;
  row.op = name();
  row.caseName = testCase["name"].get<std::string>();
  row.dtype = dtypeText;

  HostTensor input(specs.input);
  HostTensor mask(specs.mask);
  HostTensor out(specs.out, /*fill=*/false);
  out.fillBytes(kOutSentinel);
  const std::vector<unsigned char> inputBefore = input.host();
  const std::vector<unsigned char> maskBefore = mask.host();
  const std::vector<unsigned char> outBefore = out.host();
  const AclTensorPtr inputTensor = input.makeAclTensor();
  const AclTensorPtr maskTensor = mask.makeAclTensor();
  const AclTensorPtr outTensor = out.makeAclTensor();

  const PlanCall plan = [&](uint64_t* workspaceSize, aclOpExecutor** executor) {
    return op_.plan(inputTensor.get(), maskTensor.get(), attribute, outTensor.get(), workspaceSize, executor);
  };
  if (!runTwoPhase(op_.name, plan, op_.run, context.stream, expectStatus, {{&out, &outBefore}}, row)) {
    return {row};
  }
  input.download();
  mask.download();
  out.download();
  const bool inputsKept = input.host() == inputBefore && mask.host() == maskBefore;

  // An empty input computes nothing; so does an empty mask (DoMask's upstream quirk): the output stays untouched.
  const int64_t n = specs.input.numel();
  if (n == 0 || specs.mask.numel() == 0) {
    row.bitExact = out.host() == outBefore;
    row.passed = row.bitExact && inputsKept;
    if (!row.bitExact) appendNote(row, "the output was written although nothing is computed");
    if (!inputsKept) appendNote(row, "an input was modified");
    return {row};
  }

  // The golden runs on dense copies of the inputs as generated (the mask in its logical row-major byte order).
  const aclDataType outDtype = specs.out.dtype;
  const std::vector<unsigned char> inputDense = gatherDense(input.geometry(), inputBefore.data(), input.elementSize());
  const std::vector<unsigned char> maskDense = gatherDense(mask.geometry(), maskBefore.data(), 1);
  std::vector<unsigned char> golden(static_cast<size_t>(n) * dtypeSize(outDtype));
  op_.golden(specs.input.dtype, outDtype, inputDense.data(), maskDense.data(), attribute, golden.data(), n);
  const std::vector<unsigned char> ours = out.dense();

  const Comparison comparison = compareElements(outDtype, ours.data(), golden.data(), n);
  const int64_t outside = changedBytesOutsideView(out, outBefore);
  row.bitExact = comparison.bitExact();
  row.maxAbsErr = comparison.maxAbsErr;
  row.maxRelErr = comparison.maxRelErr;
  row.passed = row.bitExact && outside == 0 && inputsKept;
  if (!row.bitExact) {
    const size_t size = dtypeSize(outDtype);
    const auto at = static_cast<size_t>(comparison.firstMismatch);
    row.note = std::to_string(comparison.mismatches) + " of " + std::to_string(n) + " elements differ; first at " +
               std::to_string(at) + ": ours " + hexBytes(ours.data() + at * size, size) + ", golden " +
               hexBytes(golden.data() + at * size, size);
  }
  if (outside > 0) appendNote(row, std::to_string(outside) + " writes outside the output's view");
  if (!inputsKept) appendNote(row, "an input was modified");

  if (context.dumpDir) {
    dumpCase(*context.dumpDir, name(), row.caseName, testCase,
             {{op_.inputKey, specs.input.dtype, specs.input.shape, inputDense.data()},
              {"mask", ACL_UINT8, {static_cast<int64_t>(maskDense.size())}, maskDense.data()},
              {"golden_" + op_.outputKey, outDtype, specs.out.shape, golden.data()},
              {"ours_" + op_.outputKey, outDtype, specs.out.shape, ours.data()}});
  }
  return {row};
}

BenchRow MaskedDropoutSuite::bench(const json& benchCase, const BenchContext& context) const {
  const std::string dtypeText = benchCase.value("dtype", std::string("fp32"));
  const aclDataType dtype = parseDtypeOrThrow(dtypeText, "bench dtype");
  const Specs specs = parseSpecs(op_, benchCase, dtype);
  for (const TensorSpec* spec : {&specs.input, &specs.mask, &specs.out}) {
    if (!spec->isContiguous()) throw HarnessError("bench cases are contiguous; '" + spec->name + "' is not");
  }
  const double attribute = parseAttribute(op_, benchCase);
  // Construction fills and uploads the inputs, and fillBytes writes all of the output: every page is faulted in.
  HostTensor input(specs.input);
  HostTensor mask(specs.mask);
  HostTensor out(specs.out, /*fill=*/false);
  out.fillBytes(0);
  const AclTensorPtr inputTensor = input.makeAclTensor();
  const AclTensorPtr maskTensor = mask.makeAclTensor();
  const AclTensorPtr outTensor = out.makeAclTensor();

  // The timed unit is what a caller pays: both phases and the wait for the stream.
  auto runOnce = [&] {
    uint64_t workspaceSize = 0;
    aclOpExecutor* executor = nullptr;
    aclnnStatus status =
        op_.plan(inputTensor.get(), maskTensor.get(), attribute, outTensor.get(), &workspaceSize, &executor);
    if (status != ACLNN_SUCCESS || workspaceSize != 0) {
      throw HarnessError("GetWorkspaceSize returned " + std::to_string(status) + " with workspace " +
                         std::to_string(workspaceSize) + ": " + recentErrorText());
    }
    status = op_.run(nullptr, 0, executor, context.stream);
    const aclError sync = aclrtSynchronizeStream(context.stream);
    if (status != ACLNN_SUCCESS || sync != ACL_SUCCESS) {
      throw HarnessError("run returned " + std::to_string(status) + ", sync " + std::to_string(sync) + ": " +
                         recentErrorText());
    }
  };
  const double seconds = minSeconds(context.repeat, runOnce);

  const int64_t n = specs.input.numel();
  const double bytes = static_cast<double>(n) * static_cast<double>(dtypeSize(dtype) + dtypeSize(specs.out.dtype)) +
                       static_cast<double>(n) / 8.0;
  BenchRow row =
      makeBenchRow(name(), benchCase["name"].get<std::string>(), dtypeText, seconds, Work{bytes, 0.0, false}, context);

  // A fast wrong result is no result: the output must still match the golden.
  out.download();
  std::vector<unsigned char> golden(out.host().size());
  op_.golden(dtype, specs.out.dtype, input.host().data(), mask.host().data(), attribute, golden.data(), n);
  const Comparison comparison = compareElements(specs.out.dtype, out.host().data(), golden.data(), n);
  if (!comparison.bitExact()) row.note = std::to_string(comparison.mismatches) + " elements differ from the golden";

  if (context.peer) {
    TempDir dir;
    writeNpy(dir.path() / "grad.npy", dtype, specs.input.shape, input.host().data());
    writeNpy(dir.path() / "mask.npy", ACL_UINT8, specs.mask.shape, mask.host().data());
    char scale[40];
    std::snprintf(scale, sizeof scale, "%.17g", op_.peerScale(attribute));
    std::string error;
    row.peerSeconds = runPeer(peerScript("dropout_v3_grad.py"),
                              {"--dir", dir.path().string(), "--dtype", dtypeText, "--scale", scale, "--threads",
                               std::to_string(context.threads), "--repeat", std::to_string(context.repeat)},
                              error, PeerTorch::Current);
    if (!row.peerSeconds) row.note += (row.note.empty() ? "" : "; ") + error;
  }
  return row;
}

}  // namespace gradkit::cli
