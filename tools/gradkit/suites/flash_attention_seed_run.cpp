// Runs the seed case files (suites/flash_attention_seed.h): each case and mode through the backward suite's machinery
// (OpSuite with the seed's descriptor), judged by the seed's rule and logged to the run log.
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <optional>

#include "aclnnop/aclnn_flash_attention_score_grad.h"
#include "harness/case_file.h"
#include "harness/case_soc.h"
#include "harness/elements.h"
#include "harness/rows.h"
#include "harness/run_log.h"
#include "harness/threshold_check.h"
#include "suites/flash_attention_seed.h"

namespace gradkit::cli {
namespace {

/**
 * What a case's modes share (spec 5.8): the golden forward, the fp64 backward of its out and statistics rounded as
 * the operator receives them (every backward inherits attention_in's rounding through Drow = rowsum(dy *
 * attention_in), so it is on both sides and only the backward's own arithmetic is measured), and the backward of the
 * unrounded forward (upstream's chain), logged beside the verdict: against it an exact backward of the rounded inputs
 * already puts 0.85 % of TND_06's dq over the threshold.
 */
struct SeedGolden {
  FaForward forward;
  FaGrads grads, chain;
};

// The seed's verdict on one mode: each output against the golden (padded layouts the fp32 golden, TND the golden
// cast to the case dtype) under the seed's rule, and the dropout stream's keep bits.
void judgeSeedCase(OpCase& c, const SeedCase& sc, const FaCase& fc, const std::string& mode, const SeedGolden& golden,
                   RunLog& log, VerifyRow& row) {
  const std::string what = sc.name + " " + mode;
  struct Output {
    const char *name, *key;
    const std::vector<double>*golden, *chain;
  };
  std::vector<Output> outputs{{"dq", "dq", &golden.grads.dq, &golden.chain.dq},
                              {"dk", "dk", &golden.grads.dk, &golden.chain.dk},
                              {"dv", "dv", &golden.grads.dv, &golden.chain.dv}};
  // auto_grad also judges our forward's out: the backward's golden took the golden out, rounded.
  if (mode == "auto_grad")
    outputs.insert(outputs.begin(), {"out", "attentionIn", &golden.forward.out, &golden.forward.out});
  if (fc.dRope > 0) {
    outputs.push_back({"dq_rope", "dqRope", &golden.grads.dqRope, &golden.chain.dqRope});
    outputs.push_back({"dk_rope", "dkRope", &golden.grads.dkRope, &golden.chain.dkRope});
  }
  const auto compared = [&fc](const std::vector<double>& values) {
    std::vector<double> rounded;
    for (const double value : values) rounded.push_back(roundToDtype(fc.tnd() ? fc.outDtype : ACL_FLOAT, value));
    return rounded;
  };
  bool passed = true;
  double worstRatio = 0.0, worstChainRatio = 0.0;
  std::string worstChainOutput, failing;
  for (const Output& o : outputs) {
    const std::vector<double> ours = canonicalValues(c, fc, o.key, /*written=*/true);
    const ThresholdComparison cmp = compareWithThreshold(ours, compared(*o.golden));
    log.line(thresholdComparisonLine(what + " " + o.name, cmp));
    const ThresholdComparison chain = compareWithThreshold(ours, compared(*o.chain));
    if (o.chain != o.golden && (worstChainOutput.empty() || chain.ratio() > worstChainRatio)) {
      worstChainRatio = chain.ratio();
      worstChainOutput = o.name;
    }
    passed = passed && cmp.passed();
    if (!cmp.passed()) failing += std::string(failing.empty() ? "" : ", ") + o.name;
    row.maxAbsErr = std::isnan(cmp.diffMax) ? cmp.diffMax : std::max(row.maxAbsErr, cmp.diffMax);
    row.maxRelErr = std::max(row.maxRelErr, cmp.maxRelative);
    worstRatio = std::max(worstRatio, cmp.ratio());
  }
  std::string keepNote;
  if (const std::string& expected = sc.expectFirstKeepBits; !expected.empty()) {
    // The keep bits ('1' kept) of the first columns of row 0 of batch 0, head 0 (spec 3.5, 3.6).
    const golden::FlashAttentionProblem problem = faShapeProblem(fc);
    std::string bits;
    for (int64_t j = 0; j < std::min<int64_t>(static_cast<int64_t>(expected.size()), fc.seqKv[0]); ++j) {
      bits += golden::flashAttentionKept(problem, 0, 0, 0, j) ? '1' : '0';
    }
    log.line(sc.name + " dropout (seed " + std::to_string(fc.dropSeed) + ", offset " + std::to_string(fc.dropOffset) +
             ", keep " + std::to_string(fc.keepProb).substr(0, 4) + "): keep bits of batch 0 head 0 row 0 = " + bits +
             (bits == expected ? " (as expected)" : " (expected " + expected + ")"));
    if (bits != expected) keepNote = "the dropout keep bits of the first row differ from expect_first_keep_bits";
  }
  row.passed = passed && keepNote.empty();
  const std::string numbers = "diff_max " + formatNumberAs("%.8f", row.maxAbsErr) + ", worst over " +
                              formatNumberAs("%.4f %%", 100.0 * worstRatio);
  row.extra = "seed rule: " + numbers;
  if (!failing.empty()) row.note = "seed rule broken by " + failing + " (diff_max > 0.1 or over > 0.5 %)";
  if (!keepNote.empty()) row.note += (row.note.empty() ? "" : "; ") + keepNote;
  log.line(what + " against the golden chain without rounding attention_in (not asserted): worst over " +
           formatNumberAs("%.4f %%", 100.0 * worstChainRatio) + " (" + worstChainOutput + ")");
  log.line(what + ": " + (row.passed ? "PASS" : "FAIL") + " (" + std::to_string(outputs.size()) + " outputs, " +
           numbers + "; limits 0.1 and 0.5 %)");
}

// The backward suite's descriptor for one seed case and mode: auto_grad makes attentionIn an output (our forward
// writes it), rope cases add the rope tensors; the golden is computed once per case, before any forward of ours.
OpDescriptor seedDescriptor(const SeedCase& sc, const std::string& mode,
                            std::shared_ptr<std::optional<SeedGolden>> golden, RunLog& log) {
  OpDescriptor d;
  d.name = "flash_attention_score_grad";
  d.api = "aclnnFlashAttentionScoreGradV4";
  d.needsShape = false;
  d.tensors = faTensorRules(/*backward=*/true, /*rope=*/sc.suiteCase.value("D_rope", 0) > 0);
  for (TensorRule& rule : d.tensors) {
    if (rule.key == "attentionIn" && mode == "auto_grad") rule.role = Role::kOutput;
  }
  d.run = aclnnFlashAttentionScoreGradV4;
  d.bind = [&sc, mode, golden, &log](OpCase& c) {
    const FaCase fc = parseFaCase(c.json(), /*backward=*/true);
    const std::shared_ptr<void> soc = applyCaseSoc(c.json());
    writeSeedInputs(c, sc, fc);
    if (!golden->has_value()) {
      SeedGolden values{faGoldenForward(c, fc), {}, {}};
      writeGoldenForward(c, fc, values.forward);
      values.grads = faGoldenBackward(c, fc, fc.n1);
      FaCase chain = fc;
      chain.autoForward = true;
      values.chain = faGoldenBackward(c, chain, fc.n1);
      *golden = std::move(values);
    }
    writeGoldenForward(c, fc, (*golden)->forward);
    if (mode == "auto_grad") writeOurForward(c, fc);
    OpCall call;
    call.plan = [plan = faBackwardCall(c, fc).plan, soc](uint64_t* ws, aclOpExecutor** ex) { return plan(ws, ex); };
    call.golden = [] {};  // computed above
    call.judge = [&c, &sc, fc, mode, golden, &log](VerifyRow& row) {
      judgeSeedCase(c, sc, fc, mode, **golden, log, row);
    };
    return call;
  };
  return d;
}

}  // namespace

// Every case of the seed case file in each of its modes: a row each, skipped for a pending case or mode; the golden is
// computed once per case.
std::vector<VerifyRow> runFlashAttentionSeedCases(const std::filesystem::path& file, const VerifyContext& context) {
  const CaseFile cases = loadCaseFile(file);
  // $GRADKIT_SEED_LOG, else <--dump dir>/run_log.txt, else <temp dir>/gradkit_flash_attention_run_log.txt.
  const char* env = std::getenv("GRADKIT_SEED_LOG");
  const std::filesystem::path path =
      env != nullptr && *env != '\0' ? std::filesystem::path(env)
      : context.dumpDir              ? *context.dumpDir / "run_log.txt"
                                     : std::filesystem::temp_directory_path() / "gradkit_flash_attention_run_log.txt";
  RunLog log(path);
  std::cout << "flash attention seed cases (" << file.filename().string() << "): run log " << path.string()
            << std::endl;
  log.line("seed cases of " + file.string() + ": " + std::to_string(cases.cases.size()) + " cases");
  std::vector<VerifyRow> rows;
  for (const nlohmann::json& testCase : cases.cases) {
    const SeedCase sc = parseSeedCase(testCase);
    if (!sc.pending.empty()) {
      std::cout << "flash attention seed case " << sc.name << " PENDING (not run): " << sc.pending << std::endl;
    }
    auto golden = std::make_shared<std::optional<SeedGolden>>();
    for (const std::string& mode : sc.modes) {
      const std::string what = sc.name + " " + mode;
      nlohmann::json suiteCase = sc.suiteCase;
      suiteCase["name"] = "seed_" + sc.name + "_" + mode;
      const auto pendingMode = sc.pendingModes.find(mode);
      const std::string pending = !sc.pending.empty()                    ? sc.pending
                                  : pendingMode != sc.pendingModes.end() ? pendingMode->second
                                                                         : "";
      VerifyRow& row = rows.emplace_back();
      row.op = "flash_attention_score_grad";
      row.caseName = suiteCase["name"].get<std::string>();
      row.dtype = sc.dtypeText;
      if (!pending.empty()) {
        row.skipped = true;  // not run: never counted as passed
        row.extra = "PENDING, not run: " + pending;
        log.line(what + ": PENDING (not run): " + pending);
        continue;
      }
      try {
        row = OpSuite(seedDescriptor(sc, mode, golden, log)).verify(suiteCase, context).front();
      } catch (const std::exception& error) {
        row.note = error.what();
      }
      if (row.outputDigest.empty()) log.line(what + ": FAIL (the operator did not run: " + row.note + ")");
    }
  }
  return rows;
}

}  // namespace gradkit::cli
