// Parses a flash attention case (the keys of suites/flash_attention_suite.h) into FaCase, TND's lengths from the
// cumulative ends by the size model (ops::faSetSequenceEnds).
#include <algorithm>
#include <cmath>
#include <numeric>

#include "harness/case_keys.h"
#include "harness/error.h"
#include "harness/tensor_spec.h"
#include "suites/flash_attention_suite.h"

namespace gradkit::cli {
namespace {

using nlohmann::json;

std::vector<int64_t> cumulative(std::vector<int64_t> lengths) {
  std::partial_sum(lengths.begin(), lengths.end(), lengths.begin());
  return lengths;
}

void parseSizes(const json& t, FaCase& fc) {
  fc.n1 = integerKeyAtLeast(t, "N1", 1, 0);
  fc.n2 = integerKeyAtLeast(t, "N2", fc.n1, 0);
  fc.d = integerKeyAtLeast(t, "D", 16, 0);
  fc.dv = integerKeyAtLeast(t, "DV", fc.d, 0);
  fc.dRope = integerKeyAtLeast(t, "D_rope", 0, 0);
  fc.headNum = t.value("head_num", fc.n1);
  if (!fc.tnd()) {
    fc.b = integerKeyAtLeast(t, "B", 1, 0);
    fc.s1 = integerKeyAtLeast(t, "S1", 1, 0);
    fc.s2 = integerKeyAtLeast(t, "S2", fc.s1, 0);
    fc.seqQ.assign(static_cast<size_t>(fc.b), fc.s1);
    fc.seqKv.assign(static_cast<size_t>(fc.b), fc.s2);
    return;
  }
  if (t.contains("actual_seq_q")) {
    fc.cumQ = t["actual_seq_q"].get<std::vector<int64_t>>();
  } else {
    const std::vector<int64_t> seqQ = t.at("seq_q").get<std::vector<int64_t>>();
    for (const int64_t length : seqQ) {
      if (length < 0) throw HarnessError("'seq_q' lengths must be >= 0");
    }
    fc.cumQ = cumulative(seqQ);
  }
  fc.cumKv = t.contains("actual_seq_kv") ? t["actual_seq_kv"].get<std::vector<int64_t>>()
             : t.contains("seq_kv")      ? cumulative(t["seq_kv"].get<std::vector<int64_t>>())
                                         : fc.cumQ;
  if (!fc.expectsRejection && fc.cumKv.size() != fc.cumQ.size()) {
    throw HarnessError("'seq_kv' must hold as many lengths as 'seq_q'");
  }
  ops::faSetSequenceEnds(fc.cumQ, fc.cumKv, &fc);
  const auto last = [](const std::vector<int64_t>& ends) {
    return ends.empty() ? int64_t{0} : std::max<int64_t>(0, *std::max_element(ends.begin(), ends.end()));
  };
  fc.t1 = integerKeyAtLeast(t, "T1", last(fc.cumQ), 0);
  fc.t2 = integerKeyAtLeast(t, "T2", last(fc.cumKv), 0);
}

void parseSemantics(const json& t, FaCase& fc) {
  fc.scale = t.value("scale", fc.d > 0 ? 1.0 / std::sqrt(static_cast<double>(fc.d)) : 1.0);
  fc.keepProb = t.value("keep_prob", 1.0);
  fc.dropout = stringKeyOneOf(t, "dropout", fc.keepProb < 1.0 ? "mask" : "none", {"none", "mask", "philox"},
                              " must be \"none\", \"mask\" or \"philox\"");
  fc.dropSeed = t.value("drop_seed", int64_t{2});
  fc.dropOffset = t.value("drop_offset", int64_t{0});
  fc.sparseMode = t.value("sparse_mode", int64_t{0});
  fc.preTokens = t.value("pre_tokens", ops::kFaDefaultTokens);
  fc.nextTokens = t.value("next_tokens", ops::kFaDefaultTokens);
  fc.prefix = t.value("prefix", std::vector<int64_t>{});
  fc.mask = stringKeyOneOf(t, "mask",
                           ops::faTemplateMaskOf(fc.sparseMode) ? "template"
                           : fc.sparseMode == 5                 ? "B1SS"
                                                                : "none",
                           {"none", "SS", "11SS", "B1SS", "BNSS", "template"}, ": unknown form");
  const char* defaultValues = fc.mask == "template" ? "template" : fc.sparseMode == 5 ? "causal_prefix" : "random";
  fc.maskValues = stringKeyOneOf(t, "mask_values", defaultValues, {"random", "causal_prefix", "template", "ones"},
                                 ": unknown kind");
  fc.maskDtype = parseDtypeOrThrow(t.value("mask_dtype", std::string("bool")), "mask_dtype");
  fc.maskDensity = t.value("mask_density", 0.3);
  fc.pse = stringKeyOneOf(t, "pse_shape", "none", {"none", "BNSS", "BN1S", "1NSS", "BNHS", "1NHS", "BN", "N"},
                          ": unknown form");
  fc.pseType = t.value("pse_type", int64_t{fc.slopes() ? 2 : 1});
  if (t.contains("q_start_idx")) fc.qStartIdx = {t["q_start_idx"].get<int64_t>()};
  if (t.contains("kv_start_idx")) fc.kvStartIdx = {t["kv_start_idx"].get<int64_t>()};
  fc.innerPrecise = t.value("inner_precise", int64_t{0});
  fc.softmaxLayout = t.value("softmax_layout", std::string());
}

}  // namespace

FaCase parseFaCase(const json& t, bool backward) {
  FaCase fc;
  fc.expectsRejection = t.value("expect_status", 0) != 0;
  fc.layoutName = t.value("layout", std::string("BNSD"));
  const std::optional<ops::FaLayout> layout = ops::faLayoutFromName(fc.layoutName);
  if (!layout && !fc.expectsRejection) throw HarnessError("'layout' must be BNSD, BSND, BSH, SBH or TND");
  fc.layout = layout.value_or(ops::FaLayout::BNSD);
  parseSizes(t, fc);
  parseSemantics(t, fc);
  const aclDataType dtype = parseDtypeOrThrow(t.value("dtype", std::string("fp32")), "case dtype");
  fc.fp8 = dtype == ACL_FLOAT8_E5M2 || dtype == ACL_FLOAT8_E4M3FN;
  fc.outDtype = fc.fp8 ? parseDtypeOrThrow(t.value("out_dtype", std::string("fp16")), "out_dtype") : dtype;
  if (fc.fp8 && !fc.expectsRejection) {
    if (!backward || fc.tnd()) throw HarnessError("FP8 cases: backward (GradV4) with a padded layout only");
    if (fc.outDtype != ACL_FLOAT16 && fc.outDtype != ACL_BF16) throw HarnessError("'out_dtype' must be fp16 or bf16");
    if (t.value("auto", false)) throw HarnessError("FP8 cases have no 'auto' mode (no FP8 forward)");
  }
  const char* defaultApi = fc.fp8     ? "GradV4"
                           : backward ? (fc.tnd() ? "UnpaddingV2" : "GradV2")
                                      : (fc.tnd() ? "VarLenScoreV2" : "ScoreV2");
  fc.api = t.value("api", std::string(defaultApi));
  // The V1 entry points and the VarLen / Unpadding V4 ones have no pseType: always 1 (spec 2.2).
  static const std::vector<std::string> pseTypeOne{"Score", "VarLenScore", "VarLenScoreV4",
                                                   "Grad",  "Unpadding",   "UnpaddingV4"};
  if (std::find(pseTypeOne.begin(), pseTypeOne.end(), fc.api) != pseTypeOne.end()) fc.pseType = 1;
  fc.nulls = t.value("null", std::vector<std::string>{});
  fc.autoForward = t.value("auto", false);
  fc.checkHeads = t.value("check_heads", int64_t{-1});
  fc.peer = t.value("peer", true);
  return fc;
}

}  // namespace gradkit::cli
