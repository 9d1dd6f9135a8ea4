#include "harness/op_suite.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "acl/acl.h"
#include "base/dtype.h"
#include "harness/case_soc.h"
#include "harness/compare.h"
#include "harness/dump.h"
#include "harness/elements.h"
#include "harness/error.h"
#include "harness/npy.h"
#include "harness/view_checks.h"

namespace gradkit::cli {

using nlohmann::json;

namespace {

TensorRule makeRule(std::string key, Role role, std::function<TensorDefaults(const CaseInfo&)> defaults) {
  TensorRule result;
  result.key = std::move(key);
  result.role = role;
  result.defaults = std::move(defaults);
  return result;
}

bool isOutput(const TensorRule& rule) { return rule.role != Role::kInput; }

std::string dumpStem(const TensorRule& rule) { return rule.dumpName.empty() ? rule.key : rule.dumpName; }

CaseInfo parseInfo(const OpDescriptor& descriptor, const json& testCase) {
  CaseInfo info(testCase);
  info.name = testCase.at("name").get<std::string>();
  info.dtypeText = testCase.value("dtype", std::string("fp32"));
  info.dtype = parseDtypeOrThrow(info.dtypeText, "case dtype");
  if (testCase.contains("shape") && testCase["shape"].is_array()) {
    info.shape = testCase["shape"].get<std::vector<int64_t>>();
  } else if (descriptor.needsShape) {
    throw HarnessError("case needs a 'shape' list");
  }
  for (int64_t d : info.shape) info.numel *= d;
  info.seed =
      descriptor.seedFromCase && testCase.contains("seed") ? testCase["seed"].get<uint64_t>() : hashName(info.name);
  return info;
}

struct AclIntArrayDeleter {
  void operator()(aclIntArray* array) const { aclDestroyIntArray(array); }
};

// "N of M elements differ; first at i: ours 0x.., golden 0x.." for output `key`.
std::string mismatchNote(const std::string& key, const Comparison& comparison, aclDataType dtype,
                         const std::vector<unsigned char>& ours, const std::vector<unsigned char>& golden) {
  const size_t size = dtypeSize(dtype);
  const auto at = static_cast<size_t>(comparison.firstMismatch);
  return key + ": " + std::to_string(comparison.mismatches) + " of " + std::to_string(comparison.count) +
         " elements differ; first at " + std::to_string(at) + ": ours " + hexBytes(ours.data() + at * size, size) +
         ", golden " + hexBytes(golden.data() + at * size, size);
}

std::vector<double> widen(aclDataType dtype, const std::vector<unsigned char>& data) {
  const auto n = static_cast<int64_t>(data.size() / dtypeSize(dtype));
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = loadAsDouble(dtype, data.data(), i);
  return values;
}

constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;

// 64-bit FNV-1a of `bytes`, continuing from `hash`.
uint64_t fnv1a(uint64_t hash, const std::vector<unsigned char>& bytes) {
  for (const unsigned char byte : bytes) hash = (hash ^ byte) * 0x100000001b3ull;
  return hash;
}

std::string hexDigest(uint64_t hash) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

// Fills every output's golden buffer with its dense initial bytes (sentinel, zeros, or in-out values).
void resetGolden(OpCase& c) {
  for (OpCase::Entry& e : c.entries()) {
    if (isOutput(e.rule)) e.golden = c.dense(e.rule.key);
  }
}

// Compares every output with its golden under the bit-exact gate (or the double benchmark); fills the row.
void gateOutputs(const OpDescriptor& descriptor, OpCase& c, const OpCall& call, VerifyRow& row) {
  bool bitExact = true;
  bool passed = true;
  std::map<std::string, std::vector<unsigned char>> goldens;
  std::map<std::string, std::vector<unsigned char>> naives;
  if (descriptor.gate == Gate::kDoubleBenchmark) {
    if (!call.naive) throw HarnessError(descriptor.name + ": the double-benchmark gate needs OpCall::naive");
    resetGolden(c);
    call.naive();
    for (OpCase::Entry& e : c.entries()) {
      if (isOutput(e.rule)) naives[e.rule.key] = e.golden;
    }
    resetGolden(c);
    call.golden();
  }
  for (OpCase::Entry& e : c.entries()) {
    if (!isOutput(e.rule)) continue;
    const aclDataType dtype = e.tensor->spec().dtype;
    const std::vector<unsigned char> ours = e.tensor->dense();
    if (ours.size() != e.golden.size()) {
      bitExact = passed = false;
      appendNote(row, e.rule.key + ": golden has " + std::to_string(e.golden.size()) + " bytes, ours " +
                          std::to_string(ours.size()));
      continue;
    }
    const auto n = static_cast<int64_t>(ours.size() / dtypeSize(dtype));
    const Comparison comparison = compareElements(dtype, ours.data(), e.golden.data(), n);
    bitExact = bitExact && comparison.bitExact();
    if (e.rule.reportErrors) {
      row.maxAbsErr = std::max(row.maxAbsErr, comparison.maxAbsErr);
      row.maxRelErr = std::max(row.maxRelErr, comparison.maxRelErr);
    }
    if (descriptor.gate == Gate::kBitExact) {
      if (!comparison.bitExact()) appendNote(row, mismatchNote(e.rule.key, comparison, dtype, ours, e.golden));
      continue;
    }
    const std::vector<double> oursWide = widen(dtype, ours), goldenWide = widen(dtype, e.golden),
                              naiveWide = widen(dtype, naives[e.rule.key]);
    const DoubleBenchmark verdict = doubleBenchmark(oursWide.data(), naiveWide.data(), goldenWide.data(), n, dtype,
                                                    descriptor.level, call.computeThreshold);
    if (!verdict.passed) {
      passed = false;
      appendNote(row, e.rule.key + ": " + verdict.reason);
    }
  }
  row.bitExact = bitExact;
  row.passed = descriptor.gate == Gate::kBitExact ? bitExact : passed;
}

void dump(const VerifyContext& context, const OpDescriptor& descriptor, OpCase& c, const std::string& caseName) {
  std::vector<std::vector<unsigned char>> ours;  // keeps the buffers alive until written
  std::vector<DumpTensor> tensors;
  for (OpCase::Entry& e : c.entries()) {
    if (e.rule.role != Role::kOutput)
      tensors.push_back({dumpStem(e.rule), e.tensor->spec().dtype, e.tensor->spec().shape, c.dense(e.rule.key).data()});
  }
  ours.reserve(c.entries().size());
  for (OpCase::Entry& e : c.entries()) {
    if (!isOutput(e.rule)) continue;
    const TensorSpec& spec = e.tensor->spec();
    ours.push_back(e.tensor->dense());
    // A golden whose size is not the view's is dumped flat.
    std::vector<int64_t> goldenShape = spec.shape;
    if (e.golden.size() != ours.back().size()) {
      goldenShape = {static_cast<int64_t>(e.golden.size() / dtypeSize(spec.dtype))};
    }
    tensors.push_back({"golden_" + dumpStem(e.rule), spec.dtype, goldenShape, e.golden.data()});
    tensors.push_back({"ours_" + dumpStem(e.rule), spec.dtype, spec.shape, ours.back().data()});
  }
  dumpCase(*context.dumpDir, descriptor.name, caseName, c.json(), tensors);
}

// Checks the rejection's message against the case's "expect_message" fragments.
void checkExpectedMessage(const json& testCase, VerifyRow& row) {
  if (!testCase.contains("expect_message")) return;
  const json& expected = testCase["expect_message"];
  const std::vector<std::string> fragments = expected.is_array()
                                                 ? expected.get<std::vector<std::string>>()
                                                 : std::vector<std::string>{expected.get<std::string>()};
  for (const std::string& fragment : fragments) {
    if (row.note.find(fragment) == std::string::npos) {
      row.passed = row.bitExact = false;
      appendNote(row, "the message lacks \"" + fragment + "\"");
    }
  }
}

}  // namespace

TensorRule inputRule(std::string key, std::function<TensorDefaults(const CaseInfo&)> defaults) {
  return makeRule(std::move(key), Role::kInput, std::move(defaults));
}
TensorRule outputRule(std::string key, std::function<TensorDefaults(const CaseInfo&)> defaults) {
  return makeRule(std::move(key), Role::kOutput, std::move(defaults));
}
TensorRule inOutRule(std::string key, std::function<TensorDefaults(const CaseInfo&)> defaults) {
  return makeRule(std::move(key), Role::kInOut, std::move(defaults));
}

OpCase::OpCase(const OpDescriptor& descriptor, const nlohmann::json& testCase, bool bench)
    : info_(parseInfo(descriptor, testCase)), bench_(bench) {
  entries_.reserve(descriptor.tensors.size());
  for (const TensorRule& rule : descriptor.tensors) {
    const TensorDefaults defaults =
        rule.defaults ? rule.defaults(info_) : TensorDefaults{info_.dtype, info_.shape, info_.seed, ValueSpec{}};
    const TensorSpec spec =
        parseTensorSpec(testCase.contains(rule.key) ? testCase[rule.key] : nlohmann::json(), rule.key, defaults);
    if (bench && !spec.isContiguous()) throw HarnessError("bench cases are contiguous; '" + spec.name + "' is not");
    Entry& e = entries_.emplace_back();
    e.rule = rule;
    const bool generated = rule.role != Role::kOutput;
    e.tensor = std::make_unique<HostTensor>(spec, generated);
    // Outputs start as a sentinel in verify; in bench, zeros (writing them faults every page in).
    if (!generated) e.tensor->fillBytes(bench ? 0 : rule.sentinel);
  }
  for (Entry& e : entries_) e.acl = e.tensor->makeAclTensor();
}

OpCase::~OpCase() = default;

OpCase::Entry& OpCase::entry(const std::string& key) {
  for (Entry& e : entries_) {
    if (e.rule.key == key) return e;
  }
  throw HarnessError("no tensor '" + key + "' in the suite");
}

HostTensor& OpCase::tensor(const std::string& key) { return *entry(key).tensor; }
const TensorSpec& OpCase::spec(const std::string& key) { return entry(key).tensor->spec(); }
aclTensor* OpCase::acl(const std::string& key) { return entry(key).acl.get(); }
int64_t OpCase::bytes(const std::string& key) {
  const TensorSpec& s = spec(key);
  return s.numel() * static_cast<int64_t>(dtypeSize(s.dtype));
}

const std::vector<unsigned char>& OpCase::dense(const std::string& key) {
  Entry& e = entry(key);
  if (!e.denseBefore) {
    const std::vector<unsigned char>& storage = e.before.empty() ? e.tensor->host() : e.before;
    e.denseBefore = gatherDense(e.tensor->geometry(), storage.data(), e.tensor->elementSize());
  }
  return *e.denseBefore;
}

std::vector<unsigned char>& OpCase::golden(const std::string& key) { return entry(key).golden; }

double OpCase::number(const std::string& key, double fallback) const {
  return info_.json.contains(key) ? parseSpecialValue(info_.json[key]) : fallback;
}
int64_t OpCase::integer(const std::string& key, int64_t fallback) const { return info_.json.value(key, fallback); }
bool OpCase::flag(const std::string& key, bool fallback) const { return info_.json.value(key, fallback); }
aclDataType OpCase::dtypeAttr(const std::string& key, aclDataType fallback) const {
  return info_.json.contains(key) ? parseDtypeOrThrow(info_.json[key].get<std::string>(), key) : fallback;
}

aclScalar* OpCase::scalar(aclDataType dtype, double value) {
  std::shared_ptr<aclScalar> owned(makeAclScalar(dtype, value).release(), AclScalarDeleter{});
  owned_.push_back(owned);
  return owned.get();
}

aclIntArray* OpCase::intArray(const std::vector<int64_t>& values) {
  aclIntArray* array = aclCreateIntArray(values.data(), values.size());
  if (array == nullptr) throw HarnessError("aclCreateIntArray failed: " + recentErrorText());
  owned_.push_back(std::shared_ptr<aclIntArray>(array, AclIntArrayDeleter{}));
  return array;
}

void OpCase::snapshot() {
  for (Entry& e : entries_) {
    e.before = e.tensor->host();
    e.denseBefore.reset();
  }
}

OpSuite::OpSuite(OpDescriptor descriptor) : descriptor_(std::move(descriptor)) {}

std::vector<VerifyRow> OpSuite::verify(const json& testCase, const VerifyContext& context) const {
  const std::shared_ptr<void> soc = applyCaseSoc(testCase);
  OpCase c(descriptor_, testCase, /*bench=*/false);
  VerifyRow row;
  row.op = descriptor_.name;
  row.caseName = c.info().name;
  row.dtype = descriptor_.rowDtype.empty() ? c.info().dtypeText : descriptor_.rowDtype;
  const OpCall call = descriptor_.bind(c);
  c.snapshot();

  if (call.direct) {
    call.direct();
  } else {
    const PlanCall plan = [&](uint64_t* workspaceSize, aclOpExecutor** executor) {
      const aclnnStatus status = call.plan(workspaceSize, executor);
      if (call.afterPlan) {
        call.afterPlan();
        c.snapshot();  // the values stored now are the inputs as the run reads them
      }
      return status;
    };
    std::vector<WatchedOutput> watched;
    for (OpCase::Entry& e : c.entries()) {
      if (isOutput(e.rule)) watched.push_back({e.tensor.get(), &e.before});
    }
    if (!runTwoPhase(descriptor_.api, plan, call.run ? call.run : descriptor_.run, context.stream,
                     testCase.value("expect_status", 0), watched, row)) {
      checkExpectedMessage(testCase, row);
      return {row};
    }
  }

  bool inputsKept = true;
  int64_t outside = 0;
  uint64_t digest = kFnvOffset;
  for (OpCase::Entry& e : c.entries()) {
    e.tensor->download();
    if (!isOutput(e.rule)) {
      inputsKept = inputsKept && e.tensor->host() == e.before;
    } else {
      outside += changedBytesOutsideView(*e.tensor, e.before);
      digest = fnv1a(digest, e.tensor->host());
    }
  }
  row.outputDigest = hexDigest(digest);

  if (call.computesNothing) {
    bool untouched = true;
    for (OpCase::Entry& e : c.entries()) {
      if (isOutput(e.rule)) untouched = untouched && e.tensor->host() == e.before;
    }
    row.bitExact = untouched;
    row.passed = untouched && inputsKept;
    if (!untouched) appendNote(row, "an output was written although nothing is computed");
  } else if (context.digestOnly) {
    row.passed = outside == 0 && inputsKept;
    appendNote(row, "digest only: no golden, no precision gate");
  } else {
    // The double benchmark's gate computes the golden itself (after the naive computation).
    if (call.judge || descriptor_.gate != Gate::kDoubleBenchmark) {
      resetGolden(c);
      call.golden();
    }
    if (call.judge) {
      call.judge(row);
    } else {
      gateOutputs(descriptor_, c, call, row);
    }
    if (call.report) call.report(row);
    row.passed = row.passed && outside == 0 && inputsKept;
    if (context.dumpDir) dump(context, descriptor_, c, row.caseName);
  }
  if (outside > 0) appendNote(row, std::to_string(outside) + " bytes written outside an output's view");
  if (!inputsKept) appendNote(row, "an input was modified");
  return {row};
}

BenchRow OpSuite::bench(const json& benchCase, const BenchContext& context) const {
  const std::shared_ptr<void> soc = applyCaseSoc(benchCase);
  OpCase c(descriptor_, benchCase, /*bench=*/true);
  const OpCall call = descriptor_.bind(c);
  if (call.afterPlan) call.afterPlan();
  c.snapshot();

  // The timed unit is what a caller pays: both phases and the wait for the stream (the workspace allocated once).
  OpCall::BenchUnit unit;
  void* workspace = nullptr;
  uint64_t workspaceCapacity = 0;
  if (call.benchUnit) {
    unit = call.benchUnit();
  } else if (call.direct) {
    unit.run = call.direct;
  } else {
    unit.run = [&] {
      uint64_t workspaceSize = 0;
      aclOpExecutor* executor = nullptr;
      aclnnStatus status = call.plan(&workspaceSize, &executor);
      if (status != ACLNN_SUCCESS) {
        throw HarnessError("GetWorkspaceSize returned " + std::to_string(status) + ": " + recentErrorText());
      }
      if (workspaceSize > workspaceCapacity) {
        if (workspace != nullptr) aclrtFree(workspace);
        workspace = nullptr;
        if (aclrtMalloc(&workspace, workspaceSize, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) {
          aclDestroyAclOpExecutor(executor);
          throw HarnessError("aclrtMalloc of a " + std::to_string(workspaceSize) + "-byte workspace failed");
        }
        workspaceCapacity = workspaceSize;
      }
      status = (call.run ? call.run : descriptor_.run)(workspace, workspaceSize, executor, context.stream);
      const aclError sync = aclrtSynchronizeStream(context.stream);
      if (status != ACLNN_SUCCESS || sync != ACL_SUCCESS) {
        throw HarnessError("run returned " + std::to_string(status) + ", sync " + std::to_string(sync) + ": " +
                           recentErrorText());
      }
    };
  }
  double seconds = 0.0;
  try {
    seconds = minSeconds(context.repeat, unit.run) / unit.runs;
  } catch (...) {
    if (workspace != nullptr) aclrtFree(workspace);
    throw;
  }
  if (workspace != nullptr) aclrtFree(workspace);

  Work work;
  if (call.work) {
    work = call.work();
  } else {
    for (OpCase::Entry& e : c.entries()) work.bytes += static_cast<double>(c.bytes(e.rule.key));
  }
  const std::string dtype = descriptor_.rowDtype.empty() ? c.info().dtypeText : descriptor_.rowDtype;
  BenchRow row = makeBenchRow(descriptor_.name, c.info().name, dtype, seconds, work, context);
  auto note = [&row](const std::string& text) { row.note += (row.note.empty() ? "" : "; ") + text; };
  note(unit.note);
  if (call.benchNote) call.benchNote(seconds, context, row);

  // A fast wrong result is no result: the outputs must still meet the gate.
  for (OpCase::Entry& e : c.entries()) e.tensor->download();
  if (!call.computesNothing) {
    resetGolden(c);
    call.golden();
    VerifyRow verdict;
    if (call.judge) {
      call.judge(verdict);
    } else {
      gateOutputs(descriptor_, c, call, verdict);
    }
    if (!verdict.passed) note("WRONG RESULT: " + verdict.note);
    if (call.report) {
      call.report(verdict);
      if (!verdict.extra.empty()) note(verdict.extra);
    }
  }

  if (context.peer && call.peer) {
    TempDir dir;
    for (const auto& [key, stem] : call.peer->files) {
      writeNpy(dir.path() / (stem + ".npy"), c.spec(key).dtype, c.spec(key).shape, c.dense(key).data());
    }
    std::vector<std::string> args{"--dir", dir.path().string()};
    args.insert(args.end(), call.peer->args.begin(), call.peer->args.end());
    for (const std::string& arg : peerComputeArgs(c.json())) args.push_back(arg);
    for (const std::string& arg : {std::string("--threads"), std::to_string(context.threads), std::string("--repeat"),
                                   std::to_string(context.repeat)}) {
      args.push_back(arg);
    }
    std::string error;
    row.peerSeconds = runPeer(peerScript(call.peer->script), args, error, call.peer->torch);
    if (!row.peerSeconds) note(error);
  }
  return row;
}

}  // namespace gradkit::cli
