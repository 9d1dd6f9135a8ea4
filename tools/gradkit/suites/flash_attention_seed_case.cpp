// A seed case (the seed's keys, suites/flash_attention_seed.h) as a case of the backward suite: its keys restated
// in the suite's (whose parser and the operator's checks then judge them), and its inputs as the seed draws them.
#include <algorithm>
#include <cmath>

#include "harness/case_values.h"
#include "harness/error.h"
#include "harness/fill.h"
#include "harness/tensor_spec.h"
#include "ops/flash_attention/fa_check_common.h"
#include "suites/flash_attention_seed.h"

namespace gradkit::cli {
namespace {

using nlohmann::json;

constexpr int64_t kRopeSplit = 128;  // the seed splits Q and K at 128 (spec 5.8)

// `count` standard normal values cast to `dtype` (FP8: kept in fp32, quantised by writeFp8Inputs).
std::vector<double> normalValues(NormalStream& normal, int64_t count, aclDataType dtype) {
  const aclDataType cast = (dtype == ACL_FLOAT8_E5M2 || dtype == ACL_FLOAT8_E4M3FN) ? ACL_FLOAT : dtype;
  std::vector<double> values(static_cast<size_t>(count));
  for (double& value : values) value = roundToDtype(cast, normal.next());
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
    return faAlibiTable(c.spec("pse").shape, fc.n1, sy - sx);
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

}  // namespace

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
  if (mask != "NONE" && sparseMode > 1 && (!faTemplateMaskMode(sparseMode) || sparseMode == 6)) {
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
                  {"mask", mask == "NONE"                   ? "none"
                           : faTemplateMaskMode(sparseMode) ? "template"
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
  if (t.contains("modes")) sc.modes = t["modes"].get<std::vector<std::string>>();
  for (const std::string& mode : sc.modes) {
    if (mode != "grad_only" && mode != "auto_grad") throw HarnessError(where + ": unknown mode \"" + mode + "\"");
  }
  sc.dataSeed = t.value("data_seed", uint64_t{0});
  sc.pending = t.value("pending", std::string());
  sc.pendingModes = t.value("pending_modes", std::map<std::string, std::string>{});
  sc.expectFirstKeepBits = t.value("expect_first_keep_bits", std::string());
  return sc;
}

void writeSeedInputs(OpCase& c, const SeedCase& sc, const FaCase& fc) {
  // One stream per case (its name and data_seed), drawn in the seed's order: q, k, v, dy, then pse, then mask.
  NormalStream normal(sc.dataSeed ^ hashName(sc.name));
  const aclDataType dtype = c.spec("query").dtype;
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

}  // namespace gradkit::cli
