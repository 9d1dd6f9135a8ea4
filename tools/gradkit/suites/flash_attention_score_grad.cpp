// The FlashAttentionScoreGrad suite: cases/flash_attention_score_grad.json through the backward entry point each case
// names (GradV2 for padded layouts and UnpaddingV2 for TND by default; Grad, Unpadding, UnpaddingV4 and GradV4, the
// Ascend950 entry point that draws the dropout mask from seed/offset), judged against golden/flash_attention's fp64
// backward with the same code in float as the naive computation: dq, dk, dv under the double benchmark at L2
// (DECISIONS.md). attentionIn and the softmax statistics are the fp64 golden forward's, rounded as the op takes them
// (io dtype, fp32) and laid out as the entry point reads them, so that only the backward is measured; with "auto"
// our own forward (the same family's entry point) writes them and the golden is the fp64 forward + backward chain
// (the naive one the float chain). The bench prints GFLOP/s with FLOPs 6 * D + 4 * D_V per unmasked (i, j) pair and
// head (10 * S1 * S2 * D without a mask), the roofline ratio on the GEMM peak of the query's dtype, the peak RSS of
// the timed runs, and PyTorch's scaled_dot_product_attention backward (its flash kernel; the math path through
// autograd for dropout and pse). FP8 cases (GradV4, suites/flash_attention_suite_fp8.h) are judged against the FP8
// golden chain; the bench key "compare_to" names an earlier bench row of the run whose time this row's is divided by
// (the FP8 row against the bf16 one). Case keys: suites/flash_attention_suite_common.h.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "aclnnop/aclnn_flash_attention_score_grad.h"
#include "harness/error.h"
#include "harness/rows.h"
#include "harness/two_phase.h"
#include "harness/view_checks.h"
#include "suites/flash_attention_seed_cases.h"
#include "suites/flash_attention_suite_calls.h"
#include "suites/flash_attention_suite_common.h"
#include "suites/flash_attention_suite_fp8.h"
#include "suites/flash_attention_suite_judge.h"
#include "suites/mhc_suite_common.h"

namespace gradkit::cli {
namespace {

const std::vector<std::string> kInputs = {"query",    "key",       "value",      "dy",         "pse",
                                          "dropMask", "attenMask", "softmaxMax", "softmaxSum", "attentionIn",
                                          "dScaleQ",  "dScaleK",   "dScaleV",    "dScaleDy",   "dScaleO"};
const std::vector<std::string> kOutputs = {"dq", "dk", "dv"};

std::string mib(double bytes) { return formatNumber(bytes / (1024.0 * 1024.0)) + " MiB"; }

// Each bench row's timed seconds by case name, for the "compare_to" ratio of a later row of the same run.
std::map<std::string, double>& benchSeconds() {
  static std::map<std::string, double> seconds;
  return seconds;
}

// attentionIn and the statistics from the fp64 golden forward, rounded as the op takes them.
void writeGoldenForward(OpCase& c, const FaCase& fc) {
  const FaForwardValues forward = fc.fp8 ? faFp8Forward(c, fc) : faForward<double>(c, fc, fc.n1);
  writeView(c, "attentionIn", toLayout(fc, forward.out, true, fc.n1, fc.dv));
  writeView(c, "softmaxMax", statsToLayout(fc, forward.max));
  writeView(c, "softmaxSum", statsToLayout(fc, forward.sum));
}

// attentionIn and the statistics from our forward entry point of the same family.
void writeOurForward(OpCase& c, const FaCase& fc) {
  const FaEntryCall entry = faForwardCall(c, fc, "attentionIn", faForwardApiFor(fc.api));
  VerifyRow row;
  if (!runTwoPhase("forward " + faForwardApiFor(fc.api), entry.plan, entry.run, nullptr, 0, {}, row)) {
    throw HarnessError("our forward for the auto case failed: " + row.note);
  }
  for (const char* key : {"attentionIn", "softmaxMax", "softmaxSum"}) c.tensor(key).download();
}

OpDescriptor flashAttentionScoreGrad() {
  OpDescriptor d;
  d.name = "flash_attention_score_grad";
  d.api = "aclnnFlashAttentionScoreGrad";
  d.needsShape = false;
  d.gate = Gate::kDoubleBenchmark;
  for (const std::string& key : kInputs) d.tensors.push_back(inputRule(key, faDefaults(key, true)));
  for (const std::string& key : kOutputs) d.tensors.push_back(outputRule(key, faDefaults(key, true)));
  d.bind = [](OpCase& c) {
    const FaCase fc = parseFaCase(c.json(), /*backward=*/true);
    const std::shared_ptr<void> soc = applyCaseSoc(c.json());
    writeDerivedInputs(c, fc);
    if (fc.fp8 && !fc.expectsRejection) writeFp8Inputs(c, fc);
    if (!fc.expectsRejection) {
      if (fc.autoForward) {
        writeOurForward(c, fc);
      } else {
        writeGoldenForward(c, fc);
      }
    }
    const FaEntryCall entry = faBackwardCall(c, fc);
    const int64_t heads = faCheckedHeads(fc);
    auto golden = std::make_shared<FaBackwardValues>();
    OpCall call;
    call.plan = [plan = entry.plan, soc](uint64_t* ws, aclOpExecutor** ex) { return plan(ws, ex); };
    call.run = entry.run;
    call.golden = [&c, fc, heads, golden] {
      if (heads == 0) return;
      *golden = fc.fp8 ? faFp8Backward(c, fc, heads) : faBackward<double>(c, fc, heads);
      if (heads == fc.n1) faStoreGolden(c, faBackwardOutputs(c, fc, *golden, *golden));
    };
    call.judge = [&c, fc, heads, golden](VerifyRow& row) {
      if (heads == 0) {
        row.passed = true;
        appendNote(row, "not checked against the golden (check_heads 0)");
        return;
      }
      if (fc.fp8) return faFp8Judge(c, fc, *golden, row);
      const FaBackwardValues naive = faBackward<float>(c, fc, heads);
      faJudge(c, faBackwardOutputs(c, fc, *golden, naive), row);
    };
    if (c.bench()) {
      auto pairs = std::make_shared<double>(faUnmaskedPairs(c, fc));
      call.work = [&c, fc, pairs] {
        double bytes = 0.0;
        for (const char* key :
             {"query", "key", "value", "dy", "attentionIn", "softmaxMax", "softmaxSum", "dq", "dk", "dv"}) {
          bytes += static_cast<double>(c.bytes(key));
        }
        const double flops = static_cast<double>(6 * fc.d + 4 * fc.dv) * *pairs;
        return Work{bytes, flops, c.spec("query").dtype == ACL_BF16};
      };
      auto rssBefore = std::make_shared<double>(0.0);
      const std::string name = c.info().name, compareTo = c.json().value("compare_to", std::string());
      call.benchNote = [fc, pairs, heads, rssBefore, name, compareTo](double seconds, const BenchContext&,
                                                                      BenchRow& row) {
        benchSeconds()[name] = seconds;
        const double all = static_cast<double>(fc.n1) * static_cast<double>(fc.s1) * static_cast<double>(fc.s2);
        std::string note = "FLOPs count unmasked pairs (" + formatNumber(100.0 * *pairs / all) + "%)";
        note += heads == 0 ? "; not golden-checked"
                           : "; golden-checked on " + std::to_string(heads) + " of " + std::to_string(fc.n1) + " heads";
        const double rss = peakRssBytes();
        // The harness holds every tensor twice (host copy and device storage) and snapshots; the growth during the
        // timed runs is what the op itself took.
        if (rss > 0.0) note += "; peak RSS " + mib(rss) + " (+" + mib(rss - *rssBefore) + " during the timed runs)";
        if (!compareTo.empty()) {
          const auto other = benchSeconds().find(compareTo);
          note += other == benchSeconds().end() || other->second <= 0.0
                      ? "; " + compareTo + " not timed before this row"
                      : "; time / " + compareTo + "'s time in this run: " + formatNumber(seconds / other->second);
        }
        row.note += (row.note.empty() ? "" : "; ") + note;
      };
      if (fc.peer && !fc.tnd && !fc.fp8) call.peer = faTorchPeer(fc, c.info().dtypeText, /*backward=*/true);
      resetPeakRss();
      *rssBefore = currentRssBytes();
    }
    return call;
  };
  d.run = aclnnFlashAttentionScoreGradV2;
  return d;
}

}  // namespace
// The entry "seed_cases" runs the seed's six cases (cases/flash_attention_seed.json, suites/flash_attention_seed_*).
GRADKIT_REGISTER_OP_SUITE_WITH_SEED_CASES(flashAttentionScoreGrad)
}  // namespace gradkit::cli
