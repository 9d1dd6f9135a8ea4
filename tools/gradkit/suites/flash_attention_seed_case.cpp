#include "suites/flash_attention_seed_case.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "harness/error.h"

namespace gradkit::cli {
namespace {

using nlohmann::json;

aclDataType seedDtype(const std::string& text, const std::string& where) {
  static const std::map<std::string, aclDataType> dtypes{{"fp16", ACL_FLOAT16},
                                                         {"bf16", ACL_BF16},
                                                         {"fp32", ACL_FLOAT},
                                                         {"fp8_e5m2", ACL_FLOAT8_E5M2},
                                                         {"fp8_e4m3fn", ACL_FLOAT8_E4M3FN}};
  const auto found = dtypes.find(text);
  if (found == dtypes.end()) throw HarnessError(where + ": unknown dtype \"" + text + "\"");
  return found->second;
}

void oneOf(const std::string& value, const std::vector<std::string>& allowed, const std::string& where) {
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end()) return;
  std::string list;
  for (const std::string& a : allowed) list += (list.empty() ? "" : " | ") + a;
  throw HarnessError(where + ": \"" + value + "\" is not one of " + list);
}

int64_t size(const json& t, const char* key, int64_t fallback, const std::string& name) {
  const int64_t value = t.value(key, fallback);
  if (value < 1) throw HarnessError(name + ": '" + key + "' must be >= 1");
  return value;
}

}  // namespace

double SeedCase::scale() const { return 1.0 / std::sqrt(static_cast<double>(d)); }

FaCase SeedCase::layoutCase() const {
  FaCase fc;
  fc.layout = layout;
  fc.tnd = tnd();
  fc.batch = batch;
  fc.n1 = n1;
  fc.n2 = n2;
  fc.headNum = n1;
  fc.d = dQk();
  fc.dv = dv;
  fc.s1 = s1;
  fc.s2 = s2;
  fc.seqQ = seqQ;
  fc.seqKv = seqKv;
  int64_t q = 0, kv = 0;
  for (size_t b = 0; b < seqQ.size(); ++b) {
    fc.cumQ.push_back(q += seqQ[b]);
    fc.cumKv.push_back(kv += seqKv[b]);
  }
  fc.tokensQ = q;
  fc.tokensKv = kv;
  return fc;
}

SeedCase parseSeedCase(const json& t) {
  SeedCase c;
  c.name = t.value("name", std::string());
  if (c.name.empty()) throw HarnessError("a seed case needs a \"name\"");
  const std::string where = "seed case " + c.name;
  c.layout = t.value("input_layout", std::string("BNSD"));
  oneOf(c.layout, {"BNSD", "BSND", "BSH", "SBH", "TND"}, where + " 'input_layout'");
  c.n1 = size(t, "N1", 1, where);
  c.n2 = size(t, "N2", c.n1, where);
  if (c.n1 % c.n2 != 0) throw HarnessError(where + ": N1 must be a multiple of N2");
  c.d = size(t, "D", 16, where);
  c.dv = size(t, "D_V", c.d, where);
  if (c.tnd()) {
    c.seqQ = t.at("actual_seq_qlen").get<std::vector<int64_t>>();
    c.seqKv = t.value("actual_seq_kvlen", c.seqQ);
    if (c.seqQ.empty() || c.seqKv.size() != c.seqQ.size()) {
      throw HarnessError(where + ": 'actual_seq_qlen' and 'actual_seq_kvlen' need the same, non-zero count");
    }
    for (const int64_t length : c.seqQ) {
      if (length < 0) throw HarnessError(where + ": sequence lengths must be >= 0");
    }
    c.batch = static_cast<int64_t>(c.seqQ.size());
    c.s1 = *std::max_element(c.seqQ.begin(), c.seqQ.end());
    c.s2 = *std::max_element(c.seqKv.begin(), c.seqKv.end());
    if (t.value("S1", c.s1) != c.s1 || t.value("S2", c.s2) != c.s2) {
      throw HarnessError(where + ": TND 'S1' / 'S2' must be the largest lengths");
    }
    if (t.contains("B") && t["B"].get<int64_t>() != c.batch) {
      throw HarnessError(where + ": 'B' must be the number of lengths");
    }
  } else {
    c.batch = size(t, "B", 1, where);
    c.s1 = size(t, "S1", 1, where);
    c.s2 = size(t, "S2", c.s1, where);
    c.seqQ.assign(static_cast<size_t>(c.batch), c.s1);
    c.seqKv.assign(static_cast<size_t>(c.batch), c.s2);
  }
  c.dtypeText = t.value("dtype", std::string("fp16"));
  c.dtype = seedDtype(c.dtypeText, where + " 'dtype'");
  c.outDtypeText = t.value("out_dtype", c.fp8() ? std::string("fp16") : c.dtypeText);
  c.outDtype = seedDtype(c.outDtypeText, where + " 'out_dtype'");
  if (!c.fp8() && c.outDtype != c.dtype) throw HarnessError(where + ": 'out_dtype' must equal 'dtype' (not FP8)");
  if (c.fp8() && c.outDtype != ACL_FLOAT16 && c.outDtype != ACL_BF16) {
    throw HarnessError(where + ": FP8 'out_dtype' must be fp16 or bf16");
  }
  c.seed = t.value("seed", int64_t{0});
  c.offset = t.value("offset", int64_t{0});
  c.sparseMode = t.value("sparse_mode", int64_t{0});
  c.preTokens = t.value("pre_tockens_input", int64_t{65536});
  c.nextTokens = t.value("next_tockens_input", int64_t{65536});
  c.keepProb = t.value("drop_out_possibility", 1.0);
  if (!(c.keepProb > 0.0 && c.keepProb <= 1.0)) throw HarnessError(where + ": 'drop_out_possibility' not in (0, 1]");
  c.pseType = t.value("pse_type", int64_t{1});
  c.pseShape = t.value("pse_shape", std::string("NONE"));
  oneOf(c.pseShape, {"NONE", "BN1S", "1NSS", "BNSS", "BNHS", "1NHS", "BN", "N"}, where + " 'pse_shape'");
  if (c.hasPse() && c.slopes() != (c.pseType == 2 || c.pseType == 3)) {
    throw HarnessError(where + ": pse_shape BN / N go with pse_type 2 / 3, the tables with 0 / 1");
  }
  if (c.tnd() && c.hasPse() && c.pseShape != "BNHS" && c.pseShape != "1NHS" && !c.slopes()) {
    throw HarnessError(where + ": TND takes the 1024-row ALiBi pse (BNHS / 1NHS) or slopes only");
  }
  c.maskDtypeText = t.value("atten_mask_dtype", std::string("NONE"));
  oneOf(c.maskDtypeText, {"NONE", "BOOL", "uint8"}, where + " 'atten_mask_dtype'");
  c.maskShape = t.value("atten_mask_shape", std::string("NONE"));
  oneOf(c.maskShape, {"NONE", "SS", "11SS", "B1SS", "BNSS"}, where + " 'atten_mask_shape'");
  if ((c.maskShape == "NONE") != (c.maskDtypeText == "NONE")) {
    throw HarnessError(where + ": 'atten_mask_dtype' and 'atten_mask_shape' are NONE together");
  }
  if (c.hasMask() && (c.sparseMode == 5 || c.sparseMode == 6)) {
    throw HarnessError(where + ": sparse modes 5 / 6 need a prefix, which the seed's cases cannot give");
  }
  c.rope = t.value("rope", 0) != 0;
  if (c.rope && c.d <= SeedCase::kRopeSplit) throw HarnessError(where + ": rope needs D > 128");
  if (t.contains("modes")) c.modes = t["modes"].get<std::vector<std::string>>();
  for (const std::string& mode : c.modes) oneOf(mode, {"grad_only", "auto_grad"}, where + " 'modes'");
  c.dataSeed = t.value("data_seed", uint64_t{0});
  c.pending = t.value("pending", std::string());
  c.pendingModes = t.value("pending_modes", std::map<std::string, std::string>{});
  c.expectFirstKeepBits = t.value("expect_first_keep_bits", std::string());
  return c;
}

}  // namespace gradkit::cli
