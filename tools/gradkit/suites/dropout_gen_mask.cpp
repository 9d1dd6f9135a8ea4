// The DropoutGenMask, DropoutGenMaskV2 and DropoutGenMaskV2Tensor suites: cases/dropout_gen_mask.json,
// cases/dropout_gen_mask_v2.json and cases/dropout_gen_mask_v2_tensor.json through the public API, the mask compared
// byte for byte with golden/dropout_gen_mask (its own Philox4x32-10; DECISIONS.md: bit-exact gate), and the generation
// bench.
//
// Case keys (besides name and shape):
//   "shape":         the data tensor's shape (the aclIntArray argument); [] is one element
//   "prob":          drop probability, a number or "nan", "inf", "-inf", "-0" (default 0.5)
//   "seed":          int64 (default 0)
//   "offset":        int64 (default 0)
//   "probDataType":  V2 and V2Tensor, a dtype name (default "fp32")
//   V2Tensor only: "seed" is the value stored in "seedTensor" and "offsetTensorValue" (default 0) the value stored
//   in "offsetTensor" (tensor specs, defaults INT64 [1]); "offset" is the scalar added to it. Both tensors hold a
//   sentinel when GetWorkspaceSize runs and get their values only afterwards, before the run, so every case proves
//   that the values are read when the executor runs. "nullSeedTensor" / "nullOffsetTensor": pass nullptr.
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
#include <utility>
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
  int64_t offsetTensorValue = 0;  // V2Tensor
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
  args.offsetTensorValue = testCase.value("offsetTensorValue", int64_t{0});
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

enum class Version { kV1, kV2, kV2Tensor };

constexpr unsigned char kScalarSentinel = 0x5A;  // seed/offset tensors' bytes until GetWorkspaceSize has returned

/** The seed and offset device tensors of a V2Tensor case (absent for the other versions). */
struct ScalarTensors {
  std::unique_ptr<HostTensor> seed, offset;
  AclTensorPtr seedTensor, offsetTensor;
  bool nullSeed = false, nullOffset = false;

  ScalarTensors(const json& testCase, Version version) {
    if (version != Version::kV2Tensor) return;
    auto spec = [&](const char* key) {
      return parseTensorSpec(testCase.contains(key) ? testCase[key] : json(), key,
                             TensorDefaults{ACL_INT64, {1}, 0, ValueSpec{}});
    };
    seed = std::make_unique<HostTensor>(spec("seedTensor"), /*fill=*/false);
    offset = std::make_unique<HostTensor>(spec("offsetTensor"), /*fill=*/false);
    seed->fillBytes(kScalarSentinel);
    offset->fillBytes(kScalarSentinel);
    seedTensor = seed->makeAclTensor();
    offsetTensor = offset->makeAclTensor();
    nullSeed = testCase.value("nullSeedTensor", false);
    nullOffset = testCase.value("nullOffsetTensor", false);
  }

  const aclTensor* seedArg() const { return nullSeed ? nullptr : seedTensor.get(); }
  const aclTensor* offsetArg() const { return nullOffset ? nullptr : offsetTensor.get(); }

  /** Stores the case's values in the first element of each view (an INT32 seed gets the low 32 bits). */
  void store(const GenMaskArgs& args) {
    if (!seed) return;
    put(*seed, args.seed);
    put(*offset, args.offsetTensorValue);
  }

 private:
  static void put(HostTensor& tensor, int64_t value) {
    const size_t size = tensor.elementSize();
    if (tensor.storageElements() == 0 || (size != 4 && size != 8)) return;  // a rejected case: nothing to store
    unsigned char* at = tensor.host().data() + static_cast<size_t>(tensor.spec().offset) * size;
    if (size == 4) {
      const auto low = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(value)));
      std::memcpy(at, &low, 4);
    } else {
      std::memcpy(at, &value, 8);
    }
    tensor.upload();
  }
};

/** The (seed, offset) the mask must come from. */
std::pair<int64_t, int64_t> streamArgs(const GenMaskArgs& args, const json& testCase, Version version) {
  if (version != Version::kV2Tensor) return {args.seed, args.offset};
  int64_t seed = args.seed;
  const bool int32Seed = testCase.contains("seedTensor") && testCase["seedTensor"].contains("dtype") &&
                         testCase["seedTensor"]["dtype"].get<std::string>() == "int32";
  if (int32Seed) seed = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(seed)));
  return {seed, golden::dropoutGenMaskTensorOffset(args.offsetTensorValue, args.offset)};
}

/** Shared by the three versions; `version` picks the entry points and their extra arguments. */
class GenMaskSuiteBase : public Suite {
 public:
  explicit GenMaskSuiteBase(Version version) : version_(version) {}
  std::string name() const override {
    switch (version_) {
      case Version::kV1:
        return "dropout_gen_mask";
      case Version::kV2:
        return "dropout_gen_mask_v2";
      case Version::kV2Tensor:
        break;
    }
    return "dropout_gen_mask_v2_tensor";
  }

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
    ScalarTensors scalars(testCase, version_);

    const PlanCall planCall = [&](uint64_t* workspaceSize, aclOpExecutor** executor) {
      const aclnnStatus status = plan(args, scalars, shape.get(), outTensor.get(), workspaceSize, executor);
      scalars.store(args);  // only now: the run must read them
      return status;
    };
    const RunCall runCall = [this](void* workspace, uint64_t size, aclOpExecutor* executor, aclrtStream stream) {
      return run(workspace, size, executor, stream);
    };
    if (!runTwoPhase(apiName(), planCall, runCall, context.stream, expectStatus, {{&out, &before}}, row)) {
      return {row};
    }
    out.download();

    const auto [seed, offset] = streamArgs(args, testCase, version_);
    const std::vector<uint8_t> golden = golden::dropoutGenMask(args.n, args.prob, seed, offset);
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
    ScalarTensors scalars(benchCase, version_);
    scalars.store(args);

    auto runOnce = [&] {
      uint64_t workspaceSize = 0;
      aclOpExecutor* executor = nullptr;
      aclnnStatus status = plan(args, scalars, shape.get(), outTensor.get(), &workspaceSize, &executor);
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
    const auto [seed, offset] = streamArgs(args, benchCase, version_);
    const std::vector<uint8_t> golden = golden::dropoutGenMask(args.n, args.prob, seed, offset);
    if (std::memcmp(out.host().data(), golden.data(), golden.size()) != 0) row.note += "; mask differs from the golden";
    return row;
  }

 private:
  const char* apiName() const {
    switch (version_) {
      case Version::kV1:
        return "aclnnDropoutGenMask";
      case Version::kV2:
        return "aclnnDropoutGenMaskV2";
      case Version::kV2Tensor:
        break;
    }
    return "aclnnDropoutGenMaskV2Tensor";
  }

  aclnnStatus plan(const GenMaskArgs& args, const ScalarTensors& scalars, const aclIntArray* shape, aclTensor* out,
                   uint64_t* workspaceSize, aclOpExecutor** executor) const {
    switch (version_) {
      case Version::kV1:
        return aclnnDropoutGenMaskGetWorkspaceSize(shape, args.prob, args.seed, args.offset, out, workspaceSize,
                                                   executor);
      case Version::kV2:
        return aclnnDropoutGenMaskV2GetWorkspaceSize(shape, args.prob, args.seed, args.offset, args.probDataType, out,
                                                     workspaceSize, executor);
      case Version::kV2Tensor:
        break;
    }
    return aclnnDropoutGenMaskV2TensorGetWorkspaceSize(shape, args.prob, scalars.seedArg(), scalars.offsetArg(),
                                                       args.offset, args.probDataType, out, workspaceSize, executor);
  }

  aclnnStatus run(void* workspace, uint64_t size, aclOpExecutor* executor, aclrtStream stream) const {
    switch (version_) {
      case Version::kV1:
        return aclnnDropoutGenMask(workspace, size, executor, stream);
      case Version::kV2:
        return aclnnDropoutGenMaskV2(workspace, size, executor, stream);
      case Version::kV2Tensor:
        break;
    }
    return aclnnDropoutGenMaskV2Tensor(workspace, size, executor, stream);
  }

  Version version_;
};

class DropoutGenMaskSuite : public GenMaskSuiteBase {
 public:
  DropoutGenMaskSuite() : GenMaskSuiteBase(Version::kV1) {}
};

class DropoutGenMaskV2Suite : public GenMaskSuiteBase {
 public:
  DropoutGenMaskV2Suite() : GenMaskSuiteBase(Version::kV2) {}
};

class DropoutGenMaskV2TensorSuite : public GenMaskSuiteBase {
 public:
  DropoutGenMaskV2TensorSuite() : GenMaskSuiteBase(Version::kV2Tensor) {}
};

}  // namespace
}  // namespace gradkit::cli

namespace gradkit::cli {
GRADKIT_REGISTER_SUITE(DropoutGenMaskSuite)
GRADKIT_REGISTER_SUITE(DropoutGenMaskV2Suite)
GRADKIT_REGISTER_SUITE(DropoutGenMaskV2TensorSuite)
}  // namespace gradkit::cli
