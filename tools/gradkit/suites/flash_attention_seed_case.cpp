// The seed's six cases (spec fag.md 5.3, 5.12; cases/flash_attention_seed.json, docs/flash_attention_cases.md) inside
// the flash_attention_score_grad suite: the entry {"name": "seed_cases", "seed_cases": "flash_attention_seed.json"}
// (relative to cases/, or absolute) runs that file's cases, one row per case and mode. Each seed case is restated as a
// case of the backward suite (aclnnFlashAttentionScoreGradV4 under the Ascend950 profile, the entry point the seed
// targets) with the seed's own inputs and verdict (harness/threshold_check.h; both logged), in the seed's modes:
// "grad_only" (the golden forward's out and statistics, rounded as the op takes them, are the backward's inputs) and
// "auto_grad" (our aclnnFlashAttentionScoreV4 forward first; its out is judged too).
//
// The seed's keys: "name"; "B", "N1", "N2", "S1", "S2", "D", "D_V"; "actual_seq_qlen", "actual_seq_kvlen" (TND
// per-batch lengths, not cumulative); "dtype": fp16 | bf16 | fp32 | fp8_e5m2 | fp8_e4m3fn; "out_dtype"; "seed",
// "offset" (the dropout stream's, spec 3); "sparse_mode"; "pre_tockens_input", "next_tockens_input" (the seed's
// spelling; both the golden and the operator get them, unlike upstream, spec 5.13); "drop_out_possibility" (the KEEP
// probability, despite the name); "pse_type" 0..3; "pse_shape": NONE | BN1S | 1NSS | BNSS | BNHS | 1NHS | BN | N;
// "atten_mask_dtype": NONE | BOOL | uint8; "atten_mask_shape": NONE | SS | 11SS | B1SS | BNSS; "rope": 0 | 1 (Q and K
// of head dim D split at 128 into query + queryRope, key + keyRope); "input_layout".
// gradkit's own keys: "modes" (default ["grad_only", "auto_grad"]); "data_seed" (of the standard normal inputs,
// default 0); "pending" (a reason: the case is reported as pending instead of run) and "pending_modes" ({mode:
// reason}); "expect_first_keep_bits" (the '0'/'1' keep bits the dropout stream must give row 0 of batch 0, head 0:
// spec 3.6's worked values).
#include <algorithm>
#include <cmath>
#include <iostream>
#include <optional>

#include "harness/case_file.h"
#include "harness/case_values.h"
#include "harness/error.h"
#include "harness/fill.h"
#include "harness/rows.h"
#include "harness/run_log.h"
#include "harness/tensor_spec.h"
#include "harness/threshold_check.h"
#include "suites/flash_attention_suite.h"

namespace gradkit::cli {
namespace {

using nlohmann::json;

constexpr int64_t kRopeSplit = 128;  // the seed splits Q and K at 128 (spec 5.8)

// One seed case: the same case in the backward suite's keys, and what only the seed has.
struct SeedCase {
  std::string name, dtypeText;
  nlohmann::json suiteCase;  // sizes, dtypes, mask, pse, dropout in suites/flash_attention_suite.h's keys; GradV4
  int64_t fullD = 16;        // the seed's D: the head dim of Q and K with the rope part
  uint64_t dataSeed = 0;
  std::string pending;                                     // the whole case's reason not to run
  std::vector<std::pair<std::string, std::string>> modes;  // each mode and its reason not to run ("": run it)
  std::string expectFirstKeepBits;
};

// `count` standard normal values cast to `dtype`.
std::vector<double> normalValues(NormalStream& normal, int64_t count, aclDataType dtype) {
  std::vector<double> values(static_cast<size_t>(count));
  for (double& value : values) value = roundToDtype(dtype, normal.next());
  return values;
}

// Splits rows of `full` columns at `split`: the first columns stay in `head`, the others are returned.
std::vector<double> splitColumns(std::vector<double>& head, int64_t full, int64_t split) {
  std::vector<double> first, rest;
  for (size_t e = 0; e < head.size(); ++e) (static_cast<int64_t>(e) % full < split ? first : rest).push_back(head[e]);
  head = std::move(first);
  return rest;
}

// The pse (spec 5.6): random tables (BN1S, 1NSS, BNSS); the ALiBi table slope_n * (c - r) on and below the diagonal
// of a [Sx, Sy] grid, of which the operator gets the last 1024 rows and S2 columns (BNHS, 1NHS; TND: the whole
// [1024, S2max]); or, for types 2 / 3, the slopes 1 / ((b + 1)(n1 + 1)) (BN) or 1 / (n1 + 1) (N).
std::vector<double> pseValues(OpCase& c, const FaCase& fc, NormalStream& normal) {
  if (fc.pse == "BNHS" || fc.pse == "1NHS") {
    const int64_t sx = fc.tnd() ? ops::kFaAlibiRows : std::max(fc.s1, ops::kFaAlibiRows);
    const int64_t sy = fc.tnd() ? fc.s2 : std::max(fc.s2, ops::kFaAlibiRows);
    return golden::alibiPseTable(c.spec("pse").shape, fc.n1, sy - sx);
  }
  if (!fc.slopes()) return normalValues(normal, c.spec("pse").numel(), c.spec("pse").dtype);
  std::vector<double> slopes;
  for (int64_t b = 0; b < (fc.pse == "BN" ? fc.b : 1); ++b) {
    for (int64_t n = 0; n < fc.n1; ++n) {
      slopes.push_back(roundToDtype(ACL_FLOAT, 1.0 / static_cast<double>((fc.pse == "BN" ? b + 1 : 1) * (n + 1))));
    }
  }
  return slopes;
}

// The attention mask (spec 5.5): the [2048, 2048] strict upper triangle template of modes 2, 3, 4, 7, 8, mode 0's
// band of pre / next tokens, mode 1 random 0 / 1 (TND: zeros).
std::vector<double> maskValues(OpCase& c, const FaCase& fc, NormalStream& normal) {
  const std::vector<int64_t>& shape = c.spec("attenMask").shape;
  const int64_t rows = shape[shape.size() - 2], cols = shape.back();
  std::vector<double> values(static_cast<size_t>(c.spec("attenMask").numel()));
  for (int64_t e = 0; e < static_cast<int64_t>(values.size()); ++e) {
    const int64_t i = (e / cols) % rows, j = e % cols;
    bool masked = !fc.tnd() && fc.sparseMode == 1 && normal.uniform() < 0.5;
    if (fc.mask == "template") masked = j > i;
    if (fc.mask != "template" && fc.sparseMode == 0) masked = j >= i + fc.nextTokens + 1 || j <= i - fc.preTokens - 1;
    values[static_cast<size_t>(e)] = masked ? 1.0 : 0.0;
  }
  return values;
}

// One case in the seed's keys; throws HarnessError naming the case and the bad key.
SeedCase parseSeedCase(const json& t) {
  SeedCase sc;
  sc.name = t.value("name", std::string());
  if (sc.name.empty()) throw HarnessError("a seed case needs a \"name\"");
  const std::string where = "seed case " + sc.name;
  const std::string layout = t.value("input_layout", std::string("BNSD"));
  sc.fullD = t.value("D", int64_t{16});
  const bool rope = t.value("rope", 0) != 0;
  sc.dtypeText = t.value("dtype", std::string("fp16"));
  const bool fp8 = sc.dtypeText.rfind("fp8", 0) == 0;
  const std::string outDtype = t.value("out_dtype", fp8 ? std::string("fp16") : sc.dtypeText);
  if (!fp8 && outDtype != sc.dtypeText) throw HarnessError(where + ": 'out_dtype' must equal 'dtype' (not FP8)");
  const int64_t sparseMode = t.value("sparse_mode", int64_t{0});
  const std::string mask = t.value("atten_mask_shape", std::string("NONE"));
  const std::string maskDtype = t.value("atten_mask_dtype", std::string("NONE"));
  if ((mask == "NONE") != (maskDtype == "NONE")) {
    throw HarnessError(where + ": 'atten_mask_dtype' and 'atten_mask_shape' are NONE together");
  }
  if (mask != "NONE" && sparseMode > 1 && (!ops::faTemplateMaskOf(sparseMode) || sparseMode == 6)) {
    throw HarnessError(where + ": sparse modes 5 / 6 need a prefix, which the seed's cases cannot give");
  }
  const double keepProb = t.value("drop_out_possibility", 1.0);
  const std::string pse = t.value("pse_shape", std::string("NONE"));
  sc.suiteCase = {{"name", sc.name},
                  {"soc", "Ascend950"},
                  {"api", "GradV4"},
                  {"layout", layout},
                  {"N1", t.value("N1", int64_t{1})},
                  {"N2", t.value("N2", t.value("N1", int64_t{1}))},
                  {"D", rope ? kRopeSplit : sc.fullD},
                  {"D_rope", rope ? sc.fullD - kRopeSplit : 0},
                  {"DV", t.value("D_V", sc.fullD)},
                  {"scale", 1.0 / std::sqrt(static_cast<double>(sc.fullD))},  // the full D (spec 2.13)
                  {"dtype", sc.dtypeText},
                  {"keep_prob", keepProb},
                  {"dropout", keepProb < 1.0 ? "philox" : "none"},  // the V4 entry points draw it from seed / offset
                  {"drop_seed", t.value("seed", int64_t{0})},
                  {"drop_offset", t.value("offset", int64_t{0})},
                  {"sparse_mode", sparseMode},
                  {"pre_tokens", t.value("pre_tockens_input", int64_t{65536})},
                  {"next_tokens", t.value("next_tockens_input", int64_t{65536})},
                  // Modes 2, 3, 4, 7, 8 take the [2048, 2048] template whatever shape the seed names.
                  {"mask", mask == "NONE"                      ? "none"
                           : ops::faTemplateMaskOf(sparseMode) ? "template"
                                                               : mask},
                  {"mask_dtype", maskDtype == "BOOL" ? "bool" : "uint8"},
                  {"pse_shape", pse == "NONE" ? "none" : pse},
                  {"pse_type", t.value("pse_type", int64_t{1})}};
  if (fp8) sc.suiteCase["out_dtype"] = outDtype;
  if (ops::faLayoutFromName(layout) == ops::FaLayout::TND) {
    const std::vector<int64_t> seqQ = t.at("actual_seq_qlen").get<std::vector<int64_t>>();
    const std::vector<int64_t> seqKv = t.value("actual_seq_kvlen", seqQ);
    const auto largest = [](const std::vector<int64_t>& v) {
      return v.empty() ? 0 : *std::max_element(v.begin(), v.end());
    };
    if (t.value("S1", largest(seqQ)) != largest(seqQ) || t.value("S2", largest(seqKv)) != largest(seqKv) ||
        t.value("B", static_cast<int64_t>(seqQ.size())) != static_cast<int64_t>(seqQ.size())) {
      throw HarnessError(where + ": TND 'S1' / 'S2' must be the largest lengths and 'B' their count");
    }
    sc.suiteCase.update({{"seq_q", seqQ}, {"seq_kv", seqKv}});
  } else {
    sc.suiteCase.update({{"B", t.value("B", int64_t{1})},
                         {"S1", t.value("S1", int64_t{1})},
                         {"S2", t.value("S2", t.value("S1", int64_t{1}))}});
  }
  sc.pending = t.value("pending", std::string());
  const json pendingModes = t.value("pending_modes", json::object());
  for (const std::string& mode : t.value("modes", std::vector<std::string>{"grad_only", "auto_grad"})) {
    if (mode != "grad_only" && mode != "auto_grad") throw HarnessError(where + ": unknown mode \"" + mode + "\"");
    sc.modes.emplace_back(mode, sc.pending.empty() ? pendingModes.value(mode, std::string()) : sc.pending);
  }
  sc.dataSeed = t.value("data_seed", uint64_t{0});
  sc.expectFirstKeepBits = t.value("expect_first_keep_bits", std::string());
  return sc;
}

// Writes the seed's inputs into the suite case's tensors, drawn in the seed's order from one stream (the case's name
// and data_seed; spec 5.2, 5.5, 5.6): standard normal q, k, v, dy cast to the case dtype (FP8: quantised), split at
// 128 into the rope parts; then the pse, then the mask.
void writeSeedInputs(OpCase& c, const SeedCase& sc, const FaCase& fc) {
  NormalStream normal(sc.dataSeed ^ hashName(sc.name));
  // FP8: kept in fp32, quantised by writeFp8Inputs.
  const aclDataType dtype = fc.fp8 ? ACL_FLOAT : c.spec("query").dtype;
  const golden::FlashAttentionProblem rows = faShapeProblem(fc);
  std::vector<double> q = normalValues(normal, rows.qRows() * sc.fullD, dtype);
  std::vector<double> k = normalValues(normal, rows.kvRows() * sc.fullD, dtype);
  const std::vector<double> v = normalValues(normal, rows.kvRows() * fc.dv, dtype);
  const std::vector<double> dy = normalValues(normal, rows.qRows() * fc.dv, dtype);
  if (fc.hasPse()) writeView(c, "pse", pseValues(c, fc, normal));
  if (fc.hasMask()) writeView(c, "attenMask", maskValues(c, fc, normal));
  if (fc.dRope > 0) {
    writeCanonical(c, fc, "queryRope", splitColumns(q, sc.fullD, fc.d));
    writeCanonical(c, fc, "keyRope", splitColumns(k, sc.fullD, fc.d));
  }
  if (fc.fp8) return writeFp8Inputs(c, fc, {as<float>(q), as<float>(k), as<float>(v), as<float>(dy)});
  writeCanonical(c, fc, "query", q);
  writeCanonical(c, fc, "key", k);
  writeCanonical(c, fc, "value", v);
  writeCanonical(c, fc, "dy", dy);
}

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
  d.bind = [&sc, mode, golden, &log](OpCase& c) {
    const FaCase fc = parseFaCase(c.json(), /*backward=*/true);
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
    OpCall call = faCall(c, fc, /*backward=*/true);
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
  const std::filesystem::path path =
      runLogPath("GRADKIT_SEED_LOG", context.dumpDir, "gradkit_flash_attention_run_log.txt");
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
    for (const auto& [mode, pending] : sc.modes) {
      const std::string what = sc.name + " " + mode;
      nlohmann::json suiteCase = sc.suiteCase;
      suiteCase["name"] = "seed_" + sc.name + "_" + mode;
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
