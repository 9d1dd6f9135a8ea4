// The FlashAttentionScore and FlashAttentionScoreGrad suites (cases/flash_attention_score*.json; keys:
// suites/flash_attention_suite.h): each case through the entry point it names, judged against golden/flash_attention
// (flash_attention_suite_judge.cpp). The backward's attentionIn and statistics are the golden forward's, rounded as the
// op takes them, so that only the backward is measured ("auto": our forward's). The backward's entry "seed_cases"
// runs the seed's six cases (suites/flash_attention_seed_case.cpp).
// Bench: GFLOP/s with FLOPs 2 * (D + D_V) (forward) or 6 * D + 4 * D_V (backward) per unmasked (i, j) pair and head,
// the roofline ratio on the GEMM peak of the query's dtype, the peak RSS of the timed runs, and PyTorch's
// scaled_dot_product_attention (its flash kernel; the math path for dropout and pse); a backward row's "compare_to"
// divides its time by an earlier row's of the run (the FP8 rows by the bf16 one).
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tile_path.h"
#include "harness/nested_case_files.h"
#include "harness/peer.h"
#include "harness/process_memory.h"
#include "harness/rows.h"
#include "suites/flash_attention_suite.h"

namespace gradkit::cli {
namespace {

// The PyTorch peer (tools/peers/flash_attention.py): SDPA's flash path, or its math path for dropout and pse.
OpCall::Peer torchPeer(const FaCase& fc, const std::string& dtypeText, bool backward) {
  OpCall::Peer peer{"flash_attention.py", {{"query", "q"}, {"key", "k"}, {"value", "v"}}, {}, PeerTorch::Debian};
  if (backward) peer.files.push_back({"dy", "dy"});
  if (fc.dropout == "mask") peer.files.push_back({"dropMask", "drop_mask"});
  if (fc.hasPse()) peer.files.push_back({"pse", "pse"});
  peer.args = {"--dtype",     dtypeText,
               "--mode",      backward ? "backward" : "forward",
               "--layout",    fc.layoutName,
               "--heads",     std::to_string(fc.n1),
               "--kv-heads",  std::to_string(fc.n2),
               "--scale",     formatNumberAs("%.17g", fc.scale),
               "--keep-prob", formatNumberAs("%.17g", fc.keepProb),
               "--pse",       fc.pse,
               "--pse-type",  std::to_string(fc.pseType)};
  if (fc.hasMask() && (fc.sparseMode == 2 || (fc.sparseMode == 3 && fc.s1 == fc.s2))) peer.args.push_back("--causal");
  if (currentTorchPython()) peer.torch = PeerTorch::Current;
  return peer;
}

// The bench's work, note and peer; the last thing bind does, so that the RSS window covers only the timed runs.
void addBench(OpCase& c, const FaCase& fc, bool backward, OpCall& call) {
  static std::map<std::string, double> backwardSeconds;  // by case name, for a later row's "compare_to"
  auto pairs = std::make_shared<double>(faUnmaskedPairs(c, fc));
  call.work = [&c, fc, pairs, backward] {
    double bytes = 0.0;
    for (const char* key : {"query", "key", "value", "softmaxMax", "softmaxSum"})
      bytes += static_cast<double>(c.bytes(key));
    for (const char* key : backward ? std::vector<const char*>{"dy", "attentionIn", "dq", "dk", "dv"}
                                    : std::vector<const char*>{"attentionOut"}) {
      bytes += static_cast<double>(c.bytes(key));
    }
    const double flopsPerPair = static_cast<double>(backward ? 6 * fc.d + 4 * fc.dv : 2 * (fc.d + fc.dv));
    // bf16 products: bf16 inputs, and fp8 codes where they ride the pairs kernel (kernels/fa_fp8_backward.cpp).
    const bool bf16Products =
        c.spec("query").dtype == ACL_BF16 || (fc.fp8 && chooseTilePath(ACL_BF16).tileSums == GemmSums::Bf16Pairs);
    return Work{bytes, flopsPerPair * *pairs, bf16Products};
  };
  if (fc.peer && !fc.tnd() && !fc.fp8) call.peer = torchPeer(fc, c.info().dtypeText, backward);
  const std::string name = c.info().name, compareTo = backward ? c.json().value("compare_to", std::string()) : "";
  auto rss = std::make_shared<RssWindow>();
  call.benchNote = [fc, pairs, rss, name, compareTo, backward](double seconds, const BenchContext&, BenchRow& row) {
    if (backward) backwardSeconds[name] = seconds;
    const double all = static_cast<double>(fc.n1) * static_cast<double>(fc.s1) * static_cast<double>(fc.s2);
    const int64_t heads = fc.checkedHeads();
    std::string note = "FLOPs count unmasked pairs (" + formatNumber(100.0 * *pairs / all) + "%)";
    note += heads == 0 ? "; not golden-checked"
                       : "; golden-checked on " + std::to_string(heads) + " of " + std::to_string(fc.n1) + " heads";
    // The harness holds every tensor twice (host copy and device storage) and snapshots; the growth during the
    // timed runs is what the op itself took.
    if (const std::string memory = rss->note(); !memory.empty()) note += "; " + memory;
    if (!compareTo.empty()) {
      const auto other = backwardSeconds.find(compareTo);
      note += other == backwardSeconds.end() || other->second <= 0.0
                  ? "; " + compareTo + " not timed before this row"
                  : "; time / " + compareTo + "'s time in this run: " + formatNumber(seconds / other->second);
    }
    row.note += (row.note.empty() ? "" : "; ") + note;
  };
}

// Either direction's suite: the inputs the case derives (backward: attentionIn and the statistics too), the entry
// point the case names (its plan and run), the golden and the verdict.
OpDescriptor flashAttentionSuite(bool backward) {
  OpDescriptor d;
  d.name = backward ? "flash_attention_score_grad" : "flash_attention_score";
  d.api = backward ? "aclnnFlashAttentionScoreGrad" : "aclnnFlashAttentionScore";
  d.needsShape = false;
  d.gate = Gate::kDoubleBenchmark;
  d.tensors = faTensorRules(backward);
  d.bind = [backward](OpCase& c) {
    const FaCase fc = parseFaCase(c.json(), backward);
    writeDerivedInputs(c, fc);
    if (backward && !fc.expectsRejection) {
      if (fc.fp8) writeFp8Inputs(c, fc);
      if (fc.autoForward) {
        writeOurForward(c, fc);
      } else {
        writeGoldenForward(c, fc, faGoldenForward(c, fc));
      }
    }
    OpCall call = faCall(c, fc, backward);
    faBindVerdict(c, fc, backward, call);
    if (c.bench()) addBench(c, fc, backward, call);
    return call;
  };
  return d;
}

[[maybe_unused]] const bool registered = [] {
  registerSuite(std::make_unique<OpSuite>(flashAttentionSuite(/*backward=*/false)));
  registerSuite(withNestedCaseFiles(std::make_unique<OpSuite>(flashAttentionSuite(/*backward=*/true)), "seed_cases",
                                    runFlashAttentionSeedCases));
  return true;
}();

}  // namespace
}  // namespace gradkit::cli
