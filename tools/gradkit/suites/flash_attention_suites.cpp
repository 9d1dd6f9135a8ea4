// The FlashAttentionScore and FlashAttentionScoreGrad suites: cases/flash_attention_score.json and
// cases/flash_attention_score_grad.json through the entry point each case names (suites/flash_attention_suite.h),
// judged against golden/flash_attention's fp64 forward / backward with the same code in float as the naive computation
// (flash_attention_suite_judge.cpp). Mask, pse and drop mask are the case's own tensors, read back by the golden;
// the compressed templates of sparse modes 2-4 and 6-8 carry upstream's content, which the op must ignore.
//
// Forward: attention out under the double benchmark at L2, the softmax statistics with fully masked rows bit-exact and
// the rest at L0. Backward: dq, dk, dv under the double benchmark at L2; attentionIn and the statistics are the fp64
// golden forward's, rounded as the op takes them (io dtype, fp32) and laid out as the entry point reads them, so that
// only the backward is measured; with "auto" our own forward (the same family's entry point) writes them and the
// golden is the fp64 forward + backward chain (the naive one the float chain). FP8 cases (GradV4) are judged against
// the FP8 golden chain. The entry "seed_cases" of the backward suite runs the seed's six cases
// (suites/flash_attention_seed.h).
//
// The bench prints GFLOP/s with FLOPs 2 * (D + D_V) (forward) or 6 * D + 4 * D_V (backward) per unmasked (i, j) pair
// and head, the roofline ratio on the GEMM peak of the query's dtype, the peak RSS of the timed runs, and PyTorch's
// scaled_dot_product_attention (its flash kernel; the math path for dropout and pse). The backward bench key
// "compare_to" names an earlier bench row of the run whose time this row's is divided by (the FP8 row against the bf16
// one).
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "aclnnop/aclnn_flash_attention_score.h"
#include "aclnnop/aclnn_flash_attention_score_grad.h"
#include "harness/error.h"
#include "harness/peer.h"
#include "harness/process_memory.h"
#include "harness/rows.h"
#include "harness/two_phase.h"
#include "harness/view_checks.h"
#include "suites/flash_attention_seed.h"
#include "suites/flash_attention_suite.h"
#include "suites/mhc_suite_common.h"

namespace gradkit::cli {
namespace {

// Each backward bench row's timed seconds by case name, for the "compare_to" ratio of a later row of the same run.
std::map<std::string, double>& benchSeconds() {
  static std::map<std::string, double> seconds;
  return seconds;
}

// The PyTorch peer (tools/peers/flash_attention.py): SDPA's flash path, or its math path for dropout and pse.
OpCall::Peer torchPeer(const FaCase& fc, const std::string& dtypeText, bool backward) {
  OpCall::Peer peer;
  peer.script = "flash_attention.py";
  peer.files = {{"query", "q"}, {"key", "k"}, {"value", "v"}};
  if (backward) peer.files.push_back({"dy", "dy"});
  if (fc.dropout == "mask") peer.files.push_back({"dropMask", "drop_mask"});
  if (fc.hasPse()) peer.files.push_back({"pse", "pse"});
  const auto exact = [](double value) {
    std::ostringstream text;
    text.precision(17);
    text << value;
    return text.str();
  };
  const bool causal = fc.hasMask() && (fc.sparseMode == 2 || (fc.sparseMode == 3 && fc.s1 == fc.s2));
  peer.args = {"--dtype",     dtypeText,
               "--mode",      backward ? "backward" : "forward",
               "--layout",    fc.layoutName,
               "--heads",     std::to_string(fc.n1),
               "--kv-heads",  std::to_string(fc.n2),
               "--scale",     exact(fc.scale),
               "--keep-prob", exact(fc.keepProb),
               "--pse",       fc.pse,
               "--pse-type",  std::to_string(fc.pseType)};
  if (causal) peer.args.push_back("--causal");
  peer.torch = currentTorchPython() ? PeerTorch::Current : PeerTorch::Debian;
  return peer;
}

// The bench's work (the bytes of `keys`, FLOPs per unmasked pair), note and peer; the last thing bind does, so that
// the RSS window covers only the timed runs.
void addBench(OpCase& c, const FaCase& fc, bool backward, OpCall& call) {
  auto pairs = std::make_shared<double>(faUnmaskedPairs(c, fc));
  call.work = [&c, fc, pairs, backward] {
    const std::vector<std::string> keys =
        backward ? std::vector<std::string>{"query",      "key",        "value", "dy", "attentionIn",
                                            "softmaxMax", "softmaxSum", "dq",    "dk", "dv"}
                 : std::vector<std::string>{"query", "key", "value", "attentionOut", "softmaxMax", "softmaxSum"};
    double bytes = 0.0;
    for (const std::string& key : keys) bytes += static_cast<double>(c.bytes(key));
    const double flopsPerPair =
        backward ? static_cast<double>(6 * fc.d + 4 * fc.dv) : 2.0 * static_cast<double>(fc.d + fc.dv);
    return Work{bytes, flopsPerPair * *pairs, c.spec("query").dtype == ACL_BF16};
  };
  const std::string name = c.info().name, compareTo = backward ? c.json().value("compare_to", std::string()) : "";
  const int64_t heads = fc.checkedHeads();
  if (fc.peer && !fc.tnd() && !fc.fp8) call.peer = torchPeer(fc, c.info().dtypeText, backward);
  auto rss = std::make_shared<RssWindow>();
  call.benchNote = [fc, pairs, heads, rss, name, compareTo, backward](double seconds, const BenchContext&,
                                                                      BenchRow& row) {
    if (backward) benchSeconds()[name] = seconds;
    const double all = static_cast<double>(fc.n1) * static_cast<double>(fc.s1) * static_cast<double>(fc.s2);
    std::string note = "FLOPs count unmasked pairs (" + formatNumber(100.0 * *pairs / all) + "%)";
    note += heads == 0 ? "; not golden-checked"
                       : "; golden-checked on " + std::to_string(heads) + " of " + std::to_string(fc.n1) + " heads";
    // The harness holds every tensor twice (host copy and device storage) and snapshots; the growth during the
    // timed runs is what the op itself took.
    if (const std::string memory = rss->note(); !memory.empty()) note += "; " + memory;
    if (!compareTo.empty()) {
      const auto other = benchSeconds().find(compareTo);
      note += other == benchSeconds().end() || other->second <= 0.0
                  ? "; " + compareTo + " not timed before this row"
                  : "; time / " + compareTo + "'s time in this run: " + formatNumber(seconds / other->second);
    }
    row.note += (row.note.empty() ? "" : "; ") + note;
  };
}

// The call both suites make: the entry point, the golden of the checked heads (the full one stored for --dump) and
// the verdict; `golden` and `judge` fill in the direction's part.
template <class Values>
OpCall checkedCall(OpCase& c, const FaCase& fc, const FaEntryCall& entry, std::shared_ptr<void> soc,
                   std::function<Values()> golden, std::function<void(const Values&, VerifyRow&)> judge) {
  const int64_t heads = fc.checkedHeads();
  auto values = std::make_shared<Values>();
  OpCall call;
  call.plan = [plan = entry.plan, soc](uint64_t* ws, aclOpExecutor** ex) { return plan(ws, ex); };
  call.run = entry.run;
  call.golden = [heads, values, golden] {
    if (heads > 0) *values = golden();
  };
  call.judge = [heads, values, judge](VerifyRow& row) {
    if (heads > 0) return judge(*values, row);
    row.passed = true;
    appendNote(row, "not checked against the golden (check_heads 0)");
  };
  return call;
}

OpDescriptor flashAttentionScore() {
  OpDescriptor d;
  d.name = "flash_attention_score";
  d.api = "aclnnFlashAttentionScore";
  d.needsShape = false;
  d.gate = Gate::kDoubleBenchmark;
  d.tensors = faTensorRules(/*backward=*/false);
  d.bind = [](OpCase& c) {
    const FaCase fc = parseFaCase(c.json(), /*backward=*/false);
    const std::shared_ptr<void> soc = applyCaseSoc(c.json());
    writeDerivedInputs(c, fc);
    const int64_t heads = fc.checkedHeads();
    OpCall call = checkedCall<FaForwardValues>(
        c, fc, faForwardCall(c, fc, "attentionOut"), soc,
        [&c, fc, heads] {
          const FaForwardValues golden = faForward<double>(c, fc, heads);
          if (heads == fc.n1) faStoreGolden(c, faForwardOutputs(fc, golden, golden, "attentionOut"));
          return golden;
        },
        [&c, fc, heads](const FaForwardValues& golden, VerifyRow& row) {
          faJudge(c, faForwardOutputs(fc, golden, faForward<float>(c, fc, heads), "attentionOut"), row);
        });
    if (c.bench()) addBench(c, fc, /*backward=*/false, call);
    return call;
  };
  d.run = aclnnFlashAttentionScoreV2;
  return d;
}

OpDescriptor flashAttentionScoreGrad() {
  OpDescriptor d;
  d.name = "flash_attention_score_grad";
  d.api = "aclnnFlashAttentionScoreGrad";
  d.needsShape = false;
  d.gate = Gate::kDoubleBenchmark;
  d.tensors = faTensorRules(/*backward=*/true);
  d.bind = [](OpCase& c) {
    const FaCase fc = parseFaCase(c.json(), /*backward=*/true);
    const std::shared_ptr<void> soc = applyCaseSoc(c.json());
    writeDerivedInputs(c, fc);
    if (fc.fp8 && !fc.expectsRejection) writeFp8Inputs(c, fc);
    if (!fc.expectsRejection) {
      if (fc.autoForward) {
        writeOurForward(c, fc);
      } else {
        writeGoldenForward(c, fc, faGoldenForward(c, fc));
      }
    }
    const int64_t heads = fc.checkedHeads();
    OpCall call = checkedCall<FaBackwardValues>(
        c, fc, faBackwardCall(c, fc), soc,
        [&c, fc, heads] {
          const FaBackwardValues golden = faGoldenBackward(c, fc, heads);
          if (heads == fc.n1) faStoreGolden(c, faBackwardOutputs(fc, golden, golden));
          return golden;
        },
        [&c, fc, heads](const FaBackwardValues& golden, VerifyRow& row) {
          if (fc.fp8) return faFp8Judge(c, fc, golden, row);
          faJudge(c, faBackwardOutputs(fc, golden, faBackward<float>(c, fc, heads)), row);
        });
    if (c.bench()) addBench(c, fc, /*backward=*/true, call);
    return call;
  };
  d.run = aclnnFlashAttentionScoreGradV2;
  return d;
}

[[maybe_unused]] const bool registered = [] {
  registerSuite(std::make_unique<OpSuite>(flashAttentionScore()));
  registerSuite(withFlashAttentionSeedCases(std::make_unique<OpSuite>(flashAttentionScoreGrad())));
  return true;
}();

}  // namespace
}  // namespace gradkit::cli
