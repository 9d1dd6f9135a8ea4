// The DropoutV3 suite: cases/dropout_v3.json through aclnnDropoutV3, the output and the mask compared bit for bit
// with golden/dropout_v3 (DECISIONS.md: bit-exact gate), and the bandwidth bench.
//
// Case keys (besides name, dtype, shape; see harness/tensor_spec.h for the tensor keys):
//   "input", "out":  tensor specs (out's dtype defaults to the case dtype; its values are ignored: its storage
//                    starts as a sentinel)
//   "maskOut":       tensor spec, default UINT8 [ceil(n/128)*16] (a sentinel as well)
//   "p":             drop probability, a number or "nan", "inf", "-inf", "-0" (default 0.5)
//   "seed", "offset": int64 (defaults 0)
//   "noiseShape":    true passes a (reserved, rejected) optionalNoiseShape tensor
//   "expect_status": the status GetWorkspaceSize must return (default 0: success, then compare)
// Bench: contiguous tensors; bytes = n * (input + output element size) + n / 8 mask bytes.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_dropout_v3.h"
#include "base/dtype.h"
#include "golden/dropout_v3.h"
#include "harness/compare.h"
#include "harness/dump.h"
#include "harness/error.h"
#include "harness/host_tensor.h"
#include "harness/suite.h"
#include "harness/timing.h"
#include "harness/two_phase.h"
#include "harness/view_checks.h"

namespace gradkit::cli {
namespace {

using nlohmann::json;

constexpr unsigned char kSentinel = 0xA5;  // in every byte of out's and maskOut's storage before the run

int64_t maskBytesFor(int64_t n) { return (n + 127) / 128 * 16; }

struct Args {
  double p = 0.5;
  int64_t seed = 0;
  int64_t offset = 0;
  bool noiseShape = false;
};

Args parseArgs(const json& testCase) {
  Args args;
  if (testCase.contains("p")) args.p = parseSpecialValue(testCase["p"]);
  args.seed = testCase.value("seed", int64_t{0});
  args.offset = testCase.value("offset", int64_t{0});
  args.noiseShape = testCase.value("noiseShape", false);
  return args;
}

struct Specs {
  TensorSpec input, out, mask;
};

Specs parseSpecs(const json& testCase, aclDataType dtype) {
  if (!testCase.contains("shape") || !testCase["shape"].is_array()) throw HarnessError("case needs a 'shape' list");
  const std::vector<int64_t> shape = testCase["shape"].get<std::vector<int64_t>>();
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  const uint64_t seed = hashName(testCase["name"].get<std::string>());
  ValueSpec data;  // [-2, 2): scaled results stay finite in every dtype unless p is close to 1
  auto tensor = [&](const char* name, const TensorDefaults& defaults) {
    return parseTensorSpec(testCase.contains(name) ? testCase[name] : json(), name, defaults);
  };
  return {tensor("input", {dtype, shape, seed, data}), tensor("out", {dtype, shape, seed, data}),
          tensor("maskOut", {ACL_UINT8, {maskBytesFor(n)}, seed, ValueSpec{}})};
}

class DropoutV3Suite : public Suite {
 public:
  std::string name() const override { return "dropout_v3"; }

  std::vector<VerifyRow> verify(const json& testCase, const VerifyContext& context) const override {
    const std::string dtypeText = testCase.value("dtype", std::string("fp32"));
    const aclDataType dtype = parseDtypeOrThrow(dtypeText, "case dtype");
    const Specs specs = parseSpecs(testCase, dtype);
    const Args args = parseArgs(testCase);
    const int expectStatus = testCase.value("expect_status", 0);

    VerifyRow row;
    row.op = name();
    row.caseName = testCase["name"].get<std::string>();
    row.dtype = dtypeText;

    HostTensor input(specs.input);
    HostTensor out(specs.out, /*fill=*/false);
    HostTensor mask(specs.mask, /*fill=*/false);
    out.fillBytes(kSentinel);
    mask.fillBytes(kSentinel);
    const std::vector<unsigned char> inputBefore = input.host();
    const std::vector<unsigned char> outBefore = out.host();
    const std::vector<unsigned char> maskBefore = mask.host();
    const AclTensorPtr inputTensor = input.makeAclTensor();
    const AclTensorPtr outTensor = out.makeAclTensor();
    const AclTensorPtr maskTensor = mask.makeAclTensor();

    const PlanCall plan = [&](uint64_t* workspaceSize, aclOpExecutor** executor) {
      return aclnnDropoutV3GetWorkspaceSize(inputTensor.get(), args.noiseShape ? inputTensor.get() : nullptr, args.p,
                                            args.seed, args.offset, outTensor.get(), maskTensor.get(), workspaceSize,
                                            executor);
    };
    if (!runTwoPhase("aclnnDropoutV3", plan, aclnnDropoutV3, context.stream, expectStatus,
                     {{&out, &outBefore}, {&mask, &maskBefore}}, row)) {
      return {row};
    }
    input.download();
    out.download();
    mask.download();

    const int64_t n = specs.input.numel();
    const std::vector<unsigned char> inputDense =
        gatherDense(input.geometry(), inputBefore.data(), input.elementSize());
    std::vector<unsigned char> golden(static_cast<size_t>(n) * dtypeSize(dtype));
    const std::vector<uint8_t> goldenMask =
        golden::dropoutV3(dtype, inputDense.data(), n, args.p, args.seed, args.offset, golden.data());
    const std::vector<unsigned char> ours = out.dense();
    const std::vector<unsigned char> oursMask = mask.dense();

    const Comparison comparison = compareElements(dtype, ours.data(), golden.data(), n);
    const auto maskCount = static_cast<int64_t>(goldenMask.size());
    const Comparison maskComparison = compareElements(ACL_UINT8, oursMask.data(), goldenMask.data(), maskCount);
    const int64_t outside = changedBytesOutsideView(out, outBefore) + changedBytesOutsideView(mask, maskBefore);
    const bool inputKept = input.host() == inputBefore;
    row.bitExact = comparison.bitExact() && maskComparison.bitExact();
    row.maxAbsErr = comparison.maxAbsErr;
    row.maxRelErr = comparison.maxRelErr;
    row.passed = row.bitExact && outside == 0 && inputKept;
    if (!comparison.bitExact()) {
      const size_t size = dtypeSize(dtype);
      const auto at = static_cast<size_t>(comparison.firstMismatch);
      appendNote(row, std::to_string(comparison.mismatches) + " of " + std::to_string(n) +
                          " elements differ; first at " + std::to_string(at) + ": ours " +
                          hexBytes(ours.data() + at * size, size) + ", golden " +
                          hexBytes(golden.data() + at * size, size));
    }
    if (!maskComparison.bitExact()) {
      const auto at = static_cast<size_t>(maskComparison.firstMismatch);
      appendNote(row, std::to_string(maskComparison.mismatches) + " mask bytes differ; first at " + std::to_string(at) +
                          ": ours " + hexBytes(oursMask.data() + at, 1) + ", golden " +
                          hexBytes(goldenMask.data() + at, 1));
    }
    if (outside > 0) appendNote(row, std::to_string(outside) + " bytes written outside out's or maskOut's view");
    if (!inputKept) appendNote(row, "the input was modified");

    if (context.dumpDir) {
      dumpCase(*context.dumpDir, name(), row.caseName, testCase,
               {{"input", dtype, specs.input.shape, inputDense.data()},
                {"golden_out", dtype, specs.out.shape, golden.data()},
                {"ours_out", dtype, specs.out.shape, ours.data()},
                {"golden_mask", ACL_UINT8, {maskCount}, goldenMask.data()},
                {"ours_mask", ACL_UINT8, {maskCount}, oursMask.data()}});
    }
    return {row};
  }

  BenchRow bench(const json& benchCase, const BenchContext& context) const override {
    const std::string dtypeText = benchCase.value("dtype", std::string("fp32"));
    const aclDataType dtype = parseDtypeOrThrow(dtypeText, "bench dtype");
    const Specs specs = parseSpecs(benchCase, dtype);
    for (const TensorSpec* spec : {&specs.input, &specs.out, &specs.mask}) {
      if (!spec->isContiguous()) throw HarnessError("bench cases are contiguous; '" + spec->name + "' is not");
    }
    const Args args = parseArgs(benchCase);
    // Construction fills and uploads the input, and fillBytes writes the outputs: every page is faulted in.
    HostTensor input(specs.input);
    HostTensor out(specs.out, /*fill=*/false);
    HostTensor mask(specs.mask, /*fill=*/false);
    out.fillBytes(0);
    mask.fillBytes(0);
    const AclTensorPtr inputTensor = input.makeAclTensor();
    const AclTensorPtr outTensor = out.makeAclTensor();
    const AclTensorPtr maskTensor = mask.makeAclTensor();

    auto runOnce = [&] {
      uint64_t workspaceSize = 0;
      aclOpExecutor* executor = nullptr;
      aclnnStatus status = aclnnDropoutV3GetWorkspaceSize(inputTensor.get(), nullptr, args.p, args.seed, args.offset,
                                                          outTensor.get(), maskTensor.get(), &workspaceSize, &executor);
      if (status != ACLNN_SUCCESS || workspaceSize != 0) {
        throw HarnessError("GetWorkspaceSize returned " + std::to_string(status) + " with workspace " +
                           std::to_string(workspaceSize) + ": " + recentErrorText());
      }
      status = aclnnDropoutV3(nullptr, 0, executor, context.stream);
      const aclError sync = aclrtSynchronizeStream(context.stream);
      if (status != ACLNN_SUCCESS || sync != ACL_SUCCESS) {
        throw HarnessError("run returned " + std::to_string(status) + ", sync " + std::to_string(sync) + ": " +
                           recentErrorText());
      }
    };
    const double seconds = minSeconds(context.repeat, runOnce);

    const int64_t n = specs.input.numel();
    const double bytes =
        static_cast<double>(n) * 2.0 * static_cast<double>(dtypeSize(dtype)) + static_cast<double>(specs.mask.numel());
    BenchRow row = makeBenchRow(name(), benchCase["name"].get<std::string>(), dtypeText, seconds,
                                Work{bytes, 0.0, false}, context);
    char text[120];
    std::snprintf(text, sizeof text, "%.3g G elements/s (%d threads)", static_cast<double>(n) / seconds / 1e9,
                  context.threads);
    row.note = text;

    // A fast wrong result is no result.
    out.download();
    mask.download();
    std::vector<unsigned char> golden(out.host().size());
    const std::vector<uint8_t> goldenMask =
        golden::dropoutV3(dtype, input.host().data(), n, args.p, args.seed, args.offset, golden.data());
    const Comparison comparison = compareElements(dtype, out.host().data(), golden.data(), n);
    if (!comparison.bitExact()) row.note += "; " + std::to_string(comparison.mismatches) + " elements differ";
    if (std::memcmp(mask.host().data(), goldenMask.data(), goldenMask.size()) != 0) row.note += "; the mask differs";
    return row;
  }
};

}  // namespace
}  // namespace gradkit::cli

namespace gradkit::cli {
GRADKIT_REGISTER_SUITE(DropoutV3Suite)
}  // namespace gradkit::cli
