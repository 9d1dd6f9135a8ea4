// The DropoutGenMask and DropoutGenMaskV2 suites: cases/dropout_gen_mask.json and cases/dropout_gen_mask_v2.json
// through the public API, the mask compared byte for byte with golden/dropout_gen_mask (its own Philox4x32-10;
// DECISIONS.md: bit-exact gate), and the generation bench.
//
// Case keys (besides name and shape):
//   "shape":         the data tensor's shape (the aclIntArray argument); [] is one element
//   "prob":          drop probability, a number or "nan", "inf", "-inf", "-0" (default 0.5)
//   "seed":          int64 (default 0)
//   "offset":        int64 (default 0)
//   "probDataType":  V2 only, a dtype name (default "fp32")
//   "out":           tensor spec of the mask (default UINT8 [ceil(n/128)*16]; its values are ignored: the storage
//                    starts as a sentinel)
//   "expect_status": the status GetWorkspaceSize must return (default 0: success, then compare)
// Bench: contiguous out; the timed unit is both phases plus the wait. The row counts the n/8 mask bytes written
// (so its GB/s and roofline ratio are those of the mask bytes); the note gives G elements/s and the time of a
// parallel memset of the same bytes measured in the same run: "memset/ours" = memset time / our time, i.e. the
// fraction of pure store speed that mask generation reaches.
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_dropout_gen_mask.h"
#include "core/parallel.h"
#include "golden/dropout_gen_mask.h"
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

constexpr unsigned char kOutSentinel = 0xA5;

int64_t maskBytesFor(int64_t n) { return (n + 127) / 128 * 16; }

/** The scalar arguments of one case. */
struct GenMaskArgs {
  std::vector<int64_t> shape;
  int64_t n = 1;
  double prob = 0.5;
  int64_t seed = 0;
  int64_t offset = 0;
  aclDataType probDataType = ACL_FLOAT;
};

GenMaskArgs parseArgs(const json& testCase) {
  GenMaskArgs args;
  if (!testCase.contains("shape") || !testCase["shape"].is_array()) throw HarnessError("case needs a 'shape' list");
  args.shape = testCase["shape"].get<std::vector<int64_t>>();
  for (int64_t d : args.shape) args.n *= d;
  if (testCase.contains("prob")) args.prob = parseSpecialValue(testCase["prob"]);
  args.seed = testCase.value("seed", int64_t{0});
  args.offset = testCase.value("offset", int64_t{0});
  if (testCase.contains("probDataType")) {
    args.probDataType = parseDtypeOrThrow(testCase["probDataType"].get<std::string>(), "probDataType");
  }
  return args;
}

TensorSpec maskSpec(const json& testCase, const GenMaskArgs& args) {
  const TensorDefaults defaults{ACL_UINT8, {maskBytesFor(args.n < 0 ? 0 : args.n)}, 0, ValueSpec{}};
  return parseTensorSpec(testCase.contains("out") ? testCase["out"] : json(), "out", defaults);
}

struct AclIntArrayDeleter {
  void operator()(aclIntArray* array) const { aclDestroyIntArray(array); }
};
using AclIntArrayPtr = std::unique_ptr<aclIntArray, AclIntArrayDeleter>;

AclIntArrayPtr makeShape(const std::vector<int64_t>& dims) {
  aclIntArray* array = aclCreateIntArray(dims.data(), dims.size());
  if (array == nullptr) throw HarnessError("aclCreateIntArray failed: " + recentErrorText());
  return AclIntArrayPtr(array);
}

/** Shared by both versions; `v2` picks the entry points (and the probDataType argument). */
class GenMaskSuiteBase : public Suite {
 public:
  explicit GenMaskSuiteBase(bool v2) : v2_(v2) {}
  std::string name() const override { return v2_ ? "dropout_gen_mask_v2" : "dropout_gen_mask"; }

  std::vector<VerifyRow> verify(const json& testCase, const VerifyContext& context) const override {
    const GenMaskArgs args = parseArgs(testCase);
    const TensorSpec spec = maskSpec(testCase, args);
    const int expectStatus = testCase.value("expect_status", 0);
    VerifyRow row;
    row.op = name();
    row.caseName = testCase["name"].get<std::string>();
    row.dtype = "uint8";

    HostTensor out(spec, /*fill=*/false);
    out.fillBytes(kOutSentinel);
    const std::vector<unsigned char> before = out.host();
    const AclTensorPtr outTensor = out.makeAclTensor();
    const AclIntArrayPtr shape = makeShape(args.shape);

    const PlanCall planCall = [&](uint64_t* workspaceSize, aclOpExecutor** executor) {
      return plan(args, shape.get(), outTensor.get(), workspaceSize, executor);
    };
    const RunCall runCall = [this](void* workspace, uint64_t size, aclOpExecutor* executor, aclrtStream stream) {
      return run(workspace, size, executor, stream);
    };
    if (!runTwoPhase(v2_ ? "aclnnDropoutGenMaskV2" : "aclnnDropoutGenMask", planCall, runCall, context.stream,
                     expectStatus, {{&out, &before}}, row)) {
      return {row};
    }
    out.download();

    const std::vector<uint8_t> golden = golden::dropoutGenMask(args.n, args.prob, args.seed, args.offset);
    const std::vector<unsigned char> ours = out.dense();
    const auto count = static_cast<int64_t>(golden.size());
    const Comparison comparison = compareElements(ACL_UINT8, ours.data(), golden.data(), count);
    const int64_t outside = changedBytesOutsideView(out, before);
    row.bitExact = comparison.bitExact() && static_cast<int64_t>(ours.size()) == count;
    row.maxAbsErr = comparison.maxAbsErr;
    row.passed = row.bitExact && outside == 0;
    if (!comparison.bitExact()) {
      const auto at = static_cast<size_t>(comparison.firstMismatch);
      char text[96];
      std::snprintf(text, sizeof text, "%lld of %lld mask bytes differ; first at byte %zu: ours %02x, golden %02x",
                    static_cast<long long>(comparison.mismatches), static_cast<long long>(count), at, ours[at],
                    golden[at]);
      row.note = text;
    }
    if (outside > 0) row.note += (row.note.empty() ? "" : "; ") + std::to_string(outside) + " writes outside out";
    if (context.dumpDir) {
      dumpCase(*context.dumpDir, name(), row.caseName, testCase,
               {{"golden_mask", ACL_UINT8, {count}, golden.data()}, {"ours_mask", ACL_UINT8, {count}, ours.data()}});
    }
    return {row};
  }

  BenchRow bench(const json& benchCase, const BenchContext& context) const override {
    const GenMaskArgs args = parseArgs(benchCase);
    const TensorSpec spec = maskSpec(benchCase, args);
    if (!spec.isContiguous()) throw HarnessError("bench cases are contiguous; 'out' is not");
    HostTensor out(spec, /*fill=*/false);
    out.fillBytes(0);  // faults every page in
    const AclTensorPtr outTensor = out.makeAclTensor();
    const AclIntArrayPtr shape = makeShape(args.shape);

    auto runOnce = [&] {
      uint64_t workspaceSize = 0;
      aclOpExecutor* executor = nullptr;
      aclnnStatus status = plan(args, shape.get(), outTensor.get(), &workspaceSize, &executor);
      if (status != ACLNN_SUCCESS || workspaceSize != 0) {
        throw HarnessError("GetWorkspaceSize returned " + std::to_string(status) + " with workspace " +
                           std::to_string(workspaceSize) + ": " + recentErrorText());
      }
      status = run(nullptr, 0, executor, context.stream);
      const aclError sync = aclrtSynchronizeStream(context.stream);
      if (status != ACLNN_SUCCESS || sync != ACL_SUCCESS) {
        throw HarnessError("run returned " + std::to_string(status) + ", sync " + std::to_string(sync) + ": " +
                           recentErrorText());
      }
    };
    const double seconds = minSeconds(context.repeat, runOnce);
    const int64_t bytes = spec.numel();
    BenchRow row = makeBenchRow(name(), benchCase["name"].get<std::string>(), "uint8", seconds,
                                Work{static_cast<double>(bytes), 0.0, false}, context);

    // The same bytes written by memset, in parallel chunks as the op's own fills.
    auto* mask = static_cast<unsigned char*>(out.deviceData());
    std::vector<unsigned char> keep(mask, mask + bytes);
    const double memsetSeconds = minSeconds(context.repeat, [&] {
      parallelFor(bytes, int64_t{1} << 18, [&](int64_t begin, int64_t end) {
        std::memset(mask + begin, begin & 0xFF, static_cast<size_t>(end - begin));
      });
    });
    std::memcpy(mask, keep.data(), static_cast<size_t>(bytes));

    const double elementsPerSecond = static_cast<double>(args.n) / seconds;
    char text[200];
    std::snprintf(text, sizeof text,
                  "%.3g G elements/s (%.3g per thread, %d threads); memset of the same %lld bytes %.3g s, "
                  "memset/ours = %.3g",
                  elementsPerSecond / 1e9, elementsPerSecond / 1e9 / context.threads, context.threads,
                  static_cast<long long>(bytes), memsetSeconds, memsetSeconds / seconds);
    row.note = text;

    // A fast wrong result is no result.
    out.download();
    const std::vector<uint8_t> golden = golden::dropoutGenMask(args.n, args.prob, args.seed, args.offset);
    if (std::memcmp(out.host().data(), golden.data(), golden.size()) != 0) row.note += "; mask differs from the golden";
    return row;
  }

 private:
  aclnnStatus plan(const GenMaskArgs& args, const aclIntArray* shape, aclTensor* out, uint64_t* workspaceSize,
                   aclOpExecutor** executor) const {
    if (v2_) {
      return aclnnDropoutGenMaskV2GetWorkspaceSize(shape, args.prob, args.seed, args.offset, args.probDataType, out,
                                                   workspaceSize, executor);
    }
    return aclnnDropoutGenMaskGetWorkspaceSize(shape, args.prob, args.seed, args.offset, out, workspaceSize, executor);
  }

  aclnnStatus run(void* workspace, uint64_t size, aclOpExecutor* executor, aclrtStream stream) const {
    return v2_ ? aclnnDropoutGenMaskV2(workspace, size, executor, stream)
               : aclnnDropoutGenMask(workspace, size, executor, stream);
  }

  bool v2_;
};

class DropoutGenMaskSuite : public GenMaskSuiteBase {
 public:
  DropoutGenMaskSuite() : GenMaskSuiteBase(false) {}
};

class DropoutGenMaskV2Suite : public GenMaskSuiteBase {
 public:
  DropoutGenMaskV2Suite() : GenMaskSuiteBase(true) {}
};

}  // namespace
}  // namespace gradkit::cli

namespace gradkit::cli {
GRADKIT_REGISTER_SUITE(DropoutGenMaskSuite)
GRADKIT_REGISTER_SUITE(DropoutGenMaskV2Suite)
}  // namespace gradkit::cli
