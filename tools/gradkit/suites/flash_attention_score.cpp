// The FlashAttentionScore suite: cases/flash_attention_score.json through the forward entry point each case names
// (ScoreV2 for padded layouts and VarLenScoreV2 for TND by default; Score, ScoreV4, VarLenScore, VarLenScoreV4 too),
// judged against golden/flash_attention's fp64 forward with the same code in float as the naive computation:
// attention out under the double benchmark at L2 (DECISIONS.md), the softmax statistics with fully masked rows
// bit-exact and the rest at L0 (suites/flash_attention_suite_judge.h). Mask, pse and drop mask are the case's own
// tensors, read back by the golden; the compressed templates of sparse modes 2-4 and 6-8 carry upstream's content,
// which the op must ignore. The bench prints GFLOP/s with FLOPs 2 * (D + D_V) per unmasked (i, j) pair and head
// (4 * S1 * S2 * D without a mask), the roofline ratio on the GEMM peak of the query's dtype, the peak RSS of the
// timed runs, and PyTorch's scaled_dot_product_attention forward (its flash kernel; the math path for dropout and
// pse). Case keys: suites/flash_attention_suite_common.h.
#include <memory>
#include <string>
#include <vector>

#include "aclnnop/aclnn_flash_attention_score.h"
#include "harness/rows.h"
#include "harness/view_checks.h"
#include "suites/flash_attention_suite_calls.h"
#include "suites/flash_attention_suite_common.h"
#include "suites/flash_attention_suite_judge.h"
#include "suites/mhc_suite_common.h"

namespace gradkit::cli {
namespace {

const std::vector<std::string> kInputs = {"query", "key", "value", "pse", "dropMask", "attenMask"};
const std::vector<std::string> kOutputs = {"softmaxMax", "softmaxSum", "attentionOut"};

std::string mib(double bytes) { return formatNumber(bytes / (1024.0 * 1024.0)) + " MiB"; }

OpDescriptor flashAttentionScore() {
  OpDescriptor d;
  d.name = "flash_attention_score";
  d.api = "aclnnFlashAttentionScore";
  d.needsShape = false;
  d.gate = Gate::kDoubleBenchmark;
  for (const std::string& key : kInputs) d.tensors.push_back(inputRule(key, faDefaults(key, false)));
  for (const std::string& key : kOutputs) d.tensors.push_back(outputRule(key, faDefaults(key, false)));
  d.bind = [](OpCase& c) {
    const FaCase fc = parseFaCase(c.json(), /*backward=*/false);
    const std::shared_ptr<void> soc = applyCaseSoc(c.json());
    writeDerivedInputs(c, fc);
    const FaEntryCall entry = faForwardCall(c, fc, "attentionOut");
    const int64_t heads = faCheckedHeads(fc);
    auto golden = std::make_shared<FaForwardValues>();
    OpCall call;
    call.plan = [plan = entry.plan, soc](uint64_t* ws, aclOpExecutor** ex) { return plan(ws, ex); };
    call.run = entry.run;
    call.golden = [&c, fc, heads, golden] {
      if (heads == 0) return;
      *golden = faForward<double>(c, fc, heads);
      if (heads == fc.n1) faStoreGolden(c, faForwardOutputs(c, fc, *golden, *golden, "attentionOut"));
    };
    call.judge = [&c, fc, heads, golden](VerifyRow& row) {
      if (heads == 0) {
        row.passed = true;
        appendNote(row, "not checked against the golden (check_heads 0)");
        return;
      }
      const FaForwardValues naive = faForward<float>(c, fc, heads);
      faJudge(c, faForwardOutputs(c, fc, *golden, naive, "attentionOut"), row);
    };
    if (c.bench()) {
      auto pairs = std::make_shared<double>(faUnmaskedPairs(c, fc));
      call.work = [&c, fc, pairs] {
        double bytes = 0.0;
        for (const char* key : {"query", "key", "value", "attentionOut", "softmaxMax", "softmaxSum"}) {
          bytes += static_cast<double>(c.bytes(key));
        }
        const double flops = 2.0 * static_cast<double>(fc.d + fc.dv) * *pairs;
        return Work{bytes, flops, c.spec("query").dtype == ACL_BF16};
      };
      auto rssBefore = std::make_shared<double>(0.0);
      call.benchNote = [fc, pairs, heads, rssBefore](double, const BenchContext&, BenchRow& row) {
        const double all = static_cast<double>(fc.n1) * static_cast<double>(fc.s1) * static_cast<double>(fc.s2);
        std::string note = "FLOPs count unmasked pairs (" + formatNumber(100.0 * *pairs / all) + "%)";
        note += heads == 0 ? "; not golden-checked"
                           : "; golden-checked on " + std::to_string(heads) + " of " + std::to_string(fc.n1) + " heads";
        const double rss = peakRssBytes();
        // The harness holds every tensor twice (host copy and device storage) and snapshots; the growth during the
        // timed runs is what the op itself took.
        if (rss > 0.0) note += "; peak RSS " + mib(rss) + " (+" + mib(rss - *rssBefore) + " during the timed runs)";
        row.note += (row.note.empty() ? "" : "; ") + note;
      };
      if (fc.peer && !fc.tnd) call.peer = faTorchPeer(fc, c.info().dtypeText, /*backward=*/false);
      resetPeakRss();
      *rssBefore = currentRssBytes();
    }
    return call;
  };
  d.run = aclnnFlashAttentionScoreV2;
  return d;
}

}  // namespace
GRADKIT_REGISTER_OP_SUITE(flashAttentionScore)
}  // namespace gradkit::cli
