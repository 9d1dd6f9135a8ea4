// Descriptor-based suites: an operator describes its case once (named tensors with roles and default rules,
// attributes, the call, the golden, the gate, the bench work and peer) and OpSuite drives it through
// `gradkit verify` (values vs golden, writes outside the outputs' views, untouched inputs, expected rejections with
// their status and message, --dump) and `gradkit bench` (timing, bytes/FLOPs, golden check, PyTorch peer).
//
// A suite file is a function returning an OpDescriptor, registered with GRADKIT_REGISTER_OP_SUITE:
//
//   OpDescriptor d;
//   d.name = "my_op";  d.api = "aclnnMyOp";
//   d.tensors = {inputRule("self"), outputRule("out")};           // case keys; defaults: case dtype, case shape
//   d.run = aclnnMyOp;
//   d.bind = [](OpCase& c) {                               // once per case, after the tensors exist
//     const double alpha = c.number("alpha", 1.0);         // attributes from the case (captured below)
//     OpCall call;
//     call.plan = [&c, alpha](uint64_t* ws, aclOpExecutor** ex) {
//       return aclnnMyOpGetWorkspaceSize(c.acl("self"), alpha, c.acl("out"), ws, ex); };
//     call.golden = [&c, alpha] { golden::myOp(c.dense("self").data(), alpha, c.golden("out").data(), ...); };
//     call.work = [&c] { return Work{double(c.bytes("self") + c.bytes("out")), 0.0, false}; };
//     return call;
//   };
//
// Generic case keys: "name", "dtype" (default fp32), "shape" (required unless needsShape is false), "seed" (the
// data seed when seedFromCase; else the data seed is derived from the name), "expect_status" (the status
// GetWorkspaceSize must return; 0: success, then compare), "expect_message" (a fragment, or a list of fragments,
// the rejection's message must contain), "soc" (the SoC profile the case runs under, harness/case_soc.h; default: the
// process's), and one tensor spec per tensor key (harness/tensor_spec.h).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/host_tensor.h"
#include "harness/metrics.h"
#include "harness/peer.h"
#include "harness/suite.h"
#include "harness/timing.h"
#include "harness/two_phase.h"

namespace gradkit::cli {

/** What the op does with a tensor. */
enum class Role {
  kInput,   // generated from its spec; must keep its bytes
  kOutput,  // starts as a sentinel (verify) or zeros (bench); compared with the golden, no writes outside its view
  kInOut,   // generated from its spec, then compared like an output (the golden starts from its values)
};

/** What a tensor's defaults are, given the case. */
struct CaseInfo {
  explicit CaseInfo(const nlohmann::json& testCase) : json(testCase) {}
  const nlohmann::json& json;
  std::string name;
  std::string dtypeText;  // the case's "dtype" (default "fp32")
  aclDataType dtype = ACL_FLOAT;
  std::vector<int64_t> shape;  // the case's "shape" (empty when absent)
  int64_t numel = 1;           // product of shape (may be negative for a negative dim)
  uint64_t seed = 0;           // the data seed
};

/** One named tensor of the case. */
struct TensorRule {
  std::string key;  // the case key of its spec; names it in notes and (unless dumpName) in dump files
  Role role = Role::kInput;
  std::string dumpName;  // dump file stem when not the key ("mask" for "maskOut")
  /** Its defaults; when absent: the case dtype, the case shape, the data seed, values uniform in [-2, 2). */
  std::function<TensorDefaults(const CaseInfo&)> defaults;
  unsigned char sentinel = 0xA5;  // every byte of an output's storage before a verify run
  bool reportErrors = true;       // an output whose errors the row's max abs/rel err report
};

TensorRule inputRule(std::string key, std::function<TensorDefaults(const CaseInfo&)> defaults = {});
TensorRule outputRule(std::string key, std::function<TensorDefaults(const CaseInfo&)> defaults = {});
TensorRule inOutRule(std::string key, std::function<TensorDefaults(const CaseInfo&)> defaults = {});

/** How outputs are judged. */
enum class Gate {
  kBitExact,         // every output bit equals the golden's
  kDoubleBenchmark,  // spec 3.4: our error vs the fp64 golden against the error of OpCall::naive (per output)
};

class OpCase;

/** The case's call, bound by OpDescriptor::bind: closures that capture the case's parsed attributes. */
struct OpCall {
  /** The first phase (GetWorkspaceSize with the case's tensors and attributes); the descriptor's run is second. */
  std::function<aclnnStatus(uint64_t* workspaceSize, aclOpExecutor** executor)> plan;
  /** Optional: this case's second phase instead of the descriptor's, for an op whose versions have their own entry
   *  points (an executor runs only through the entry point of the GetWorkspaceSize that made it). */
  RunCall run;
  /** Optional, after every plan: stores values the run must read (not GetWorkspaceSize). */
  std::function<void()> afterPlan;
  /** Instead of plan + run: a plain call on the tensors' storage (internal building blocks). */
  std::function<void()> direct;
  /** Fills OpCase::golden(key) of every output (pre-sized, pre-filled with the output's dense initial bytes). */
  std::function<void()> golden;
  /** Gate::kDoubleBenchmark: fills OpCase::golden(key) with the naive same-dtype computation. */
  std::function<void()> naive;
  /** Gate::kDoubleBenchmark: the 3.2 threshold T of the computation when coarser than an output's dtype (HiFloat32
   *  matmuls: 2^-11); 0 keeps each output dtype's T for the absolute floor. */
  double computeThreshold = 0.0;
  /** Instead of the descriptor's gate: decides row.passed, bitExact, errors and note (outputs downloaded). */
  std::function<void(VerifyRow& row)> judge;
  /** Optional, after the gate (outputs downloaded, golden buffers holding OpCall::golden's values): metrics reported
   *  beside the gate into row.extra (verify) or the bench note, never changing the verdict. */
  std::function<void(VerifyRow& row)> report;
  /** The op computes nothing for this case (e.g. an empty mask): outputs must keep their bytes; no golden. */
  bool computesNothing = false;

  // bench
  /** Bytes and FLOPs one run must move (default: every tensor's bytes once). */
  std::function<Work()> work;
  /** Optional, after timing: adds to the row's note (elements/s, a memset comparison, ...). */
  std::function<void(double seconds, const BenchContext& context, BenchRow& row)> benchNote;
  /** Optional timed unit instead of plan + run + synchronize: `runs` calls per invocation. */
  struct BenchUnit {
    std::function<void()> run;
    int runs = 1;
    std::string note;
  };
  std::function<BenchUnit()> benchUnit;
  /** The PyTorch peer, when the op has one. */
  struct Peer {
    std::string script;                                      // tools/peers/<script>
    std::vector<std::pair<std::string, std::string>> files;  // tensor key -> .npy file stem in --dir
    std::vector<std::string> args;                           // besides --dir, --threads, --repeat
    PeerTorch torch = PeerTorch::Debian;
  };
  std::optional<Peer> peer;
};

/** An operator's suite, as data. */
struct OpDescriptor {
  std::string name;  // suite name, e.g. "threshold_backward"
  std::string api;   // for notes, e.g. "aclnnThresholdBackward"
  std::vector<TensorRule> tensors;
  /** The second phase, aclnnXxx. */
  RunCall run;
  std::function<OpCall(OpCase& c)> bind;
  Gate gate = Gate::kBitExact;
  BenchmarkLevel level = kLevelL2;  // Gate::kDoubleBenchmark
  bool needsShape = true;           // the case must have a "shape" list
  bool seedFromCase = true;         // the case's "seed" seeds the data (false where "seed" is an attribute)
  std::string rowDtype;             // the dtype column when not the case's dtype ("uint8" for a mask generator)
};

/** One case being run: its parsed info, tensors and golden buffers. */
class OpCase {
 public:
  OpCase(const OpDescriptor& descriptor, const nlohmann::json& testCase, bool bench);
  ~OpCase();
  OpCase(const OpCase&) = delete;
  OpCase& operator=(const OpCase&) = delete;

  const CaseInfo& info() const { return info_; }
  const nlohmann::json& json() const { return info_.json; }
  bool bench() const { return bench_; }

  HostTensor& tensor(const std::string& key);
  const TensorSpec& spec(const std::string& key);
  /** The tensor's aclTensor (created for every tensor). */
  aclTensor* acl(const std::string& key);
  /** Bytes of the tensor's view (numel * element size). */
  int64_t bytes(const std::string& key);
  /** The view's elements as they were before the run (dense, row-major): the golden's inputs. */
  const std::vector<unsigned char>& dense(const std::string& key);
  /** An output's golden buffer (dense); the golden writes it, and may resize it (then the case fails). */
  std::vector<unsigned char>& golden(const std::string& key);

  // Attributes from the case JSON.
  /** A number or "nan", "inf", "-inf", "-0". */
  double number(const std::string& key, double fallback) const;
  int64_t integer(const std::string& key, int64_t fallback) const;
  bool flag(const std::string& key, bool fallback) const;
  aclDataType dtypeAttr(const std::string& key, aclDataType fallback) const;

  /** Scalars and int arrays owned by the case. */
  aclScalar* scalar(aclDataType dtype, double value);
  aclIntArray* intArray(const std::vector<int64_t>& values);

  // For OpSuite.
  struct Entry;
  std::vector<Entry>& entries() { return entries_; }
  /** Records every tensor's host bytes as the "before" state. */
  void snapshot();

 private:
  Entry& entry(const std::string& key);
  CaseInfo info_;
  bool bench_ = false;
  std::vector<Entry> entries_;
  std::vector<std::shared_ptr<void>> owned_;
};

struct OpCase::Entry {
  TensorRule rule;
  std::unique_ptr<HostTensor> tensor;
  AclTensorPtr acl;
  std::vector<unsigned char> before;  // storage bytes before the run
  std::optional<std::vector<unsigned char>> denseBefore;
  std::vector<unsigned char> golden;
};

/** A Suite driven by an OpDescriptor. */
class OpSuite : public Suite {
 public:
  explicit OpSuite(OpDescriptor descriptor);
  std::string name() const override { return descriptor_.name; }
  std::vector<VerifyRow> verify(const nlohmann::json& testCase, const VerifyContext& context) const override;
  BenchRow bench(const nlohmann::json& benchCase, const BenchContext& context) const override;

 private:
  OpDescriptor descriptor_;
};

/** Registers the suite of the descriptor `makeDescriptor()` returns when the program starts. */
#define GRADKIT_REGISTER_OP_SUITE(makeDescriptor)                                               \
  namespace {                                                                                   \
  [[maybe_unused]] const bool registered_##makeDescriptor = [] {                                \
    ::gradkit::cli::registerSuite(std::make_unique<::gradkit::cli::OpSuite>(makeDescriptor())); \
    return true;                                                                                \
  }();                                                                                          \
  }

/** Values uniform in [lo, hi] (integers: every value equally likely). */
inline ValueSpec uniformValues(double lo, double hi) {
  ValueSpec values;
  values.lo = lo;
  values.hi = hi;
  return values;
}

/** Packed dropout masks: ceil(n / 128) * 16 bytes for n elements. */
inline int64_t maskBytesFor(int64_t n) { return (n + 127) / 128 * 16; }

}  // namespace gradkit::cli
