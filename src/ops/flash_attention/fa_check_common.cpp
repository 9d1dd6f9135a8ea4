#include "ops/flash_attention/fa_check_common.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <utility>

#include "base/dtype.h"
#include "base/error.h"
#include "base/saturating.h"
#include "opapi/check.h"
#include "runtime/runtime.h"

namespace gradkit::ops {
namespace {

constexpr int64_t kInt32Max = 2147483647;
constexpr uint64_t kFaMaxDropoutScores = uint64_t{1} << 62;

std::string str(int64_t value) { return std::to_string(value); }

std::string shapeText(const aclTensor& t) { return "shape " + t.shapeString(); }

std::string arrayText(const aclIntArray& a) { return dimsString(a.values); }

aclnnStatus invalid(std::string_view api, std::string_view name, const std::string& expected,
                    const std::string& given) {
  return fail(ACLNN_ERR_PARAM_INVALID, api, name, expected, given);
}

// The per-batch (S1, S2) pairs the rules run over: one pair for padded layouts, one per TND batch.
struct BatchRows {
  int64_t s1, s2;
};

std::vector<BatchRows> batchRows(const FaSizes& s) {
  if (!s.tnd()) return {{s.s1, s.s2}};
  std::vector<BatchRows> rows;
  for (size_t b = 0; b < s.seqQ.size(); ++b) rows.push_back({s.seqQ[b], s.seqKv[b]});
  return rows;
}

std::string batchText(const FaSizes& s, size_t b, const BatchRows& r) {
  return (s.tnd() ? "batch " + std::to_string(b) + ": " : std::string()) + "S1 = " + str(r.s1) + ", S2 = " + str(r.s2);
}

// The band in top-left coordinates (key j is visible from query i when i - pre <= j <= i + next) that the mode and
// tokens describe, and whether they describe one at all (spec 2.7, 2.8: tokens matter only with a mask, for modes 0,
// 2, 3, 4; modes 2 / 3 force pre = INT32_MAX, next = 0; modes 3 / 4 count from the bottom-right corner).
struct Band {
  bool banded = false;
  int64_t pre = 0, next = 0;
};

Band effectiveBand(const FaCall& v, const BatchRows& r) {
  if (v.attenMask == nullptr) return {};
  switch (v.sparseMode) {
    case 0:
      return {true, v.preTokens, v.nextTokens};
    case 2:
      return {true, kInt32Max, 0};
    case 3:
      return {true, satAdd(kInt32Max, r.s1 - r.s2), r.s2 - r.s1};
    case 4:
      return {true, satAdd(v.preTokens, r.s1 - r.s2), satAdd(v.nextTokens, r.s2 - r.s1)};
    default:
      return {};
  }
}

int64_t firstElementOr0(const aclIntArray* a) { return a != nullptr && !a->values.empty() ? a->values[0] : 0; }

aclnnStatus checkMaskShape(const FaCall& v, const FaSizes& s) {
  const aclTensor& m = *v.attenMask;
  const int64_t mode = v.sparseMode;
  if (mode == 2 || mode == 3 || mode == 4 || mode == 7 || mode == 8) {
    if (m.viewDims == std::vector<int64_t>{kFaMaskTemplate, kFaMaskTemplate}) return ACLNN_SUCCESS;
    return invalid(v.api, "attenMaskOptional",
                   "shape [2048, 2048] (the compressed causal template of sparseMode " + str(mode) + ")", shapeText(m));
  }
  if (mode == 6) {
    if (m.viewDims == std::vector<int64_t>{kFaPrefixMaskRows, kFaMaskTemplate}) return ACLNN_SUCCESS;
    return invalid(v.api, "attenMaskOptional", "shape [3072, 2048] (the compressed prefix template of sparseMode 6)",
                   shapeText(m));
  }
  const std::string ss = str(s.s1) + ", " + str(s.s2);
  const std::vector<std::vector<int64_t>> full = {{s.b, 1, s.s1, s.s2}, {s.b, s.n1, s.s1, s.s2}};
  std::string expected = "[B, 1, S1, S2] = [" + str(s.b) + ", 1, " + ss + "] or [B, N1, S1, S2] = [" + str(s.b) + ", " +
                         str(s.n1) + ", " + ss + "]";
  std::vector<std::vector<int64_t>> allowed = full;
  if (mode != 5) {
    allowed.push_back({s.s1, s.s2});
    allowed.push_back({1, 1, s.s1, s.s2});
    expected = "[S1, S2] = [" + ss + "], [1, 1, S1, S2], " + expected;
  }
  for (const auto& shape : allowed) {
    if (m.viewDims == shape) return ACLNN_SUCCESS;
  }
  const std::string rows = s.tnd() ? " (S1, S2: the largest batch lengths)" : "";
  return invalid(v.api, "attenMaskOptional",
                 "shape " + expected + " (a full mask for sparseMode " + str(mode) + ")" + rows, shapeText(m));
}

// Prefix widths (spec 2.7): required for mode 6, B entries; each in [0, S2] when S1 > S2, else [S2 - S1, S2].
aclnnStatus checkPrefix(const FaCall& v, const FaSizes& s) {
  if (v.attenMask == nullptr || (v.sparseMode != 5 && v.sparseMode != 6)) return ACLNN_SUCCESS;
  if (v.prefix == nullptr) {
    if (v.sparseMode == 5) return ACLNN_SUCCESS;
    return invalid(v.api, "prefixOptional", "B = " + str(s.b) + " prefix widths (sparseMode 6 requires them)",
                   "nullptr");
  }
  const std::vector<int64_t>& p = v.prefix->values;
  if (static_cast<int64_t>(p.size()) != s.b) {
    return invalid(v.api, "prefixOptional", "B = " + str(s.b) + " entries (one prefix width per batch)",
                   str(static_cast<int64_t>(p.size())) + " entries " + arrayText(*v.prefix));
  }
  const std::vector<BatchRows> rows = batchRows(s);
  for (size_t b = 0; b < p.size(); ++b) {
    const BatchRows r = rows[s.tnd() ? b : 0];
    const int64_t low = r.s1 > r.s2 ? 0 : r.s2 - r.s1;
    if (p[b] < low || p[b] > r.s2) {
      return invalid(v.api, "prefixOptional",
                     "entry " + std::to_string(b) + " in [" + str(low) + ", " + str(r.s2) + "] (" + batchText(s, b, r) +
                         ": [0, S2] when S1 > S2, else [S2 - S1, S2])",
                     str(p[b]));
    }
  }
  return ACLNN_SUCCESS;
}

// A band that leaves some key visible (spec 2.8, the grad tiling's rules in top-left coordinates).
aclnnStatus checkBand(const FaCall& v, const FaSizes& s, size_t b, const BatchRows& r) {
  const Band band = effectiveBand(v, r);
  const std::string given = "preTokens = " + str(v.preTokens) + ", nextTokens = " + str(v.nextTokens) + " (" +
                            batchText(s, b, r) + ", sparseMode " + str(v.sparseMode) + ")";
  if (satAdd(band.pre, band.next) < 0) {
    return invalid(v.api, "nextTokens", "preTokens + nextTokens >= 0 (a band with at least one key per row)", given);
  }
  if (band.pre < -r.s2) {
    return invalid(v.api, "preTokens", "preTokens >= -S2 (measured from the mode's diagonal)", given);
  }
  if (band.next < -r.s1) {
    return invalid(v.api, "nextTokens", "nextTokens >= -S1 (measured from the mode's diagonal)", given);
  }
  return ACLNN_SUCCESS;
}

// Modes 7 / 8 (TND): the band batch is the last (7) or first (8) batch with queries (spec 2.7).
aclnnStatus checkVarlenBand(const FaCall& v, const FaSizes& s) {
  int64_t band = -1;
  for (size_t b = 0; b < s.seqQ.size(); ++b) {
    if (s.seqQ[b] > 0 && (v.sparseMode == 7 || band < 0)) band = static_cast<int64_t>(b);
  }
  if (band < 0) return ACLNN_SUCCESS;
  const int64_t s1 = s.seqQ[static_cast<size_t>(band)], s2 = s.seqKv[static_cast<size_t>(band)];
  const std::string given = "preTokens = " + str(v.preTokens) + ", nextTokens = " + str(v.nextTokens) +
                            " (band batch " + str(band) + ": S1 = " + str(s1) + ", S2 = " + str(s2) + ")";
  if (v.preTokens < s2) {
    return invalid(v.api, "preTokens", "preTokens >= S2 of the band batch (sparseMode " + str(v.sparseMode) + ")",
                   given);
  }
  if (v.nextTokens < s1 - s2 || (v.sparseMode == 7 && v.nextTokens > 0)) {
    return invalid(v.api, "nextTokens",
                   v.sparseMode == 7 ? "S1 - S2 <= nextTokens <= 0 for the band batch (sparseMode 7)"
                                     : "nextTokens >= S1 - S2 of the band batch (sparseMode 8)",
                   given);
  }
  return ACLNN_SUCCESS;
}

// The compressed ALiBi pse needs a lower-triangular causal band in every batch (spec 2.9).
aclnnStatus checkCausalForAlibi(const FaCall& v, const FaSizes& s) {
  const std::vector<BatchRows> rows = batchRows(s);
  for (size_t b = 0; b < rows.size(); ++b) {
    const BatchRows& r = rows[b];
    if (r.s1 == 0) continue;
    const Band band = effectiveBand(v, r);
    if (band.banded && band.next == 0 && band.pre >= r.s1) continue;
    return invalid(v.api, v.pseName,
                   "a pse of [B or 1, N1, S1, S2] form: the 1024-row ALiBi form needs a causal mask (attenMaskOptional "
                   "with sparseMode 2 or 3, or sparseMode 0 with nextTokens = 0 and preTokens >= S1)",
                   shapeText(*v.pse) + " with sparseMode " + str(v.sparseMode) +
                       (v.attenMask == nullptr ? ", no attenMaskOptional" : "") + ", preTokens = " + str(v.preTokens) +
                       ", nextTokens = " + str(v.nextTokens) + " (" + batchText(s, b, r) + ")");
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkUserPseShape(const FaCall& v, const FaSizes& s) {
  const aclTensor& p = *v.pse;
  const int64_t b = s.b, n = s.n1;
  if (s.tnd()) {
    if (p.viewDims == std::vector<int64_t>{b, n, kFaAlibiRows, s.s2} ||
        p.viewDims == std::vector<int64_t>{1, n, kFaAlibiRows, s.s2}) {
      for (size_t i = 0; i < s.seqQ.size(); ++i) {
        if (s.seqQ[i] != s.seqKv[i]) {
          return invalid(v.api, v.pseName, "every batch with S1 = S2 (the 1024-row ALiBi pse in TND)",
                         "batch " + std::to_string(i) + ": S1 = " + str(s.seqQ[i]) + ", S2 = " + str(s.seqKv[i]));
        }
      }
      return checkCausalForAlibi(v, s);
    }
    return invalid(v.api, v.pseName,
                   "shape [B, N1, 1024, S2] = [" + str(b) + ", " + str(n) + ", 1024, " + str(s.s2) +
                       "] or [1, N1, 1024, S2] (TND takes the compressed ALiBi pse; S2 = the largest batch length)",
                   shapeText(p));
  }
  const std::vector<std::vector<int64_t>> plain = {{b, n, s.s1, s.s2}, {b, n, 1, s.s2}, {1, n, s.s1, s.s2}};
  for (const auto& shape : plain) {
    if (p.viewDims == shape) return ACLNN_SUCCESS;
  }
  if (p.viewDims == std::vector<int64_t>{b, n, kFaAlibiRows, s.s2} ||
      p.viewDims == std::vector<int64_t>{1, n, kFaAlibiRows, s.s2}) {
    if (s.s1 != s.s2 || s.s1 < kFaAlibiRows) {
      return invalid(v.api, v.pseName, "S1 = S2 >= 1024 for the 1024-row ALiBi pse",
                     shapeText(p) + " with S1 = " + str(s.s1) + ", S2 = " + str(s.s2));
    }
    return checkCausalForAlibi(v, s);
  }
  const std::string ss = str(s.s1) + ", " + str(s.s2);
  return invalid(v.api, v.pseName,
                 "shape [B, N1, S1, S2] = [" + str(b) + ", " + str(n) + ", " + ss + "], [B, N1, 1, S2], [1, N1, S1, " +
                     "S2], or the ALiBi form [B or 1, N1, 1024, S2]",
                 shapeText(p));
}

// The modes whose mask is a template (2, 3, 4, 6, 7, 8) or must be an uncompressed prefix mask (5) describe masking
// that only the mask tensor switches on: without one CANN computes every token (spec 2.7), which is never what a
// caller who names such a mode wants. gradkit rejects the call instead of dropping the mode silently.
aclnnStatus checkFaModeWithoutMask(const FaCall& v) {
  if (v.sparseMode <= 1) return ACLNN_SUCCESS;  // no mask: no masking, tokens and prefix unused (spec 2.7)
  const bool prefix = v.sparseMode == 5 || v.sparseMode == 6;
  const std::string expected =
      v.sparseMode == 5   ? "a [B, 1, S1, S2] or [B, N1, S1, S2] prefix mask (sparseMode 5 masks through it)"
      : v.sparseMode == 6 ? "the [3072, 2048] prefix template (sparseMode 6 masks through it)"
                          : "the [2048, 2048] causal template (sparseMode " + str(v.sparseMode) + " masks through it)";
  return fail(ACLNN_ERR_PARAM_NULLPTR, v.api, "attenMaskOptional",
              expected + "; for attention without a mask pass sparseMode 0" + (prefix ? "" : " or 1"),
              "nullptr with sparseMode " + str(v.sparseMode));
}

// qStartIdx / kvStartIdx shift the ALiBi distance (j + kvStartIdx) - (i + qStartIdx) and the mode-8 pse rule: values
// in [-2^61, 2^61] keep every such difference inside int64.
aclnnStatus checkStartIndices(const FaCall& v) {
  constexpr int64_t kLimit = int64_t{1} << 61;
  for (const auto& [name, array] :
       {std::pair{"qStartIdxOptional", v.qStartIdx}, {"kvStartIdxOptional", v.kvStartIdx}}) {
    if (array == nullptr) continue;
    for (size_t i = 0; i < array->values.size(); ++i) {
      const int64_t value = array->values[i];
      if (value >= -kLimit && value <= kLimit) continue;
      return invalid(v.api, name, "entries in [-2^61, 2^61] (start indices whose differences fit in int64)",
                     "entry " + std::to_string(i) + " = " + str(value) + " in " + arrayText(*array));
    }
  }
  return ACLNN_SUCCESS;
}

std::string doubleText(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

}  // namespace

const char* faLayoutName(FaLayout layout) {
  switch (layout) {
    case FaLayout::BNSD:
      return "BNSD";
    case FaLayout::BSND:
      return "BSND";
    case FaLayout::BSH:
      return "BSH";
    case FaLayout::SBH:
      return "SBH";
    case FaLayout::TND:
      return "TND";
  }
  return "?";
}

aclnnStatus checkFaRequired(std::string_view api, const std::vector<NamedTensor>& named) {
  for (const NamedTensor& t : named) GRADKIT_RETURN_IF_ERROR(checkNotNull(api, t.name, t.tensor));
  return ACLNN_SUCCESS;
}

aclnnStatus checkFaProfile(std::string_view api, FaEntry entry) {
  if (entry != FaEntry::Merged950) return ACLNN_SUCCESS;
  const rt::Soc soc = rt::currentSoc();
  if (soc == rt::Soc::Ascend950) return ACLNN_SUCCESS;
  return failText(ACLNN_ERR_PARAM_INVALID, api,
                  std::string("the entry point is unavailable in the ") + rt::socName(soc) +
                      " profile: it exists only on Ascend950 (GRADKIT_SOC)");
}

aclnnStatus parseFaLayout(const FaCall& v, FaLayout* layout) {
  GRADKIT_RETURN_IF_ERROR(checkNotNull(v.api, "inputLayout", v.inputLayout));
  const std::string text(v.inputLayout, strnlen(v.inputLayout, 16));
  const std::pair<const char*, FaLayout> names[] = {{"BNSD", FaLayout::BNSD},
                                                    {"BSND", FaLayout::BSND},
                                                    {"BSH", FaLayout::BSH},
                                                    {"SBH", FaLayout::SBH},
                                                    {"TND", FaLayout::TND}};
  bool known = false;
  for (const auto& [name, value] : names) {
    if (text == name) {
      *layout = value;
      known = true;
    }
  }
  const std::string given = "\"" + text + "\"";
  if (!known) return invalid(v.api, "inputLayout", "one of \"BNSD\", \"BSND\", \"BSH\", \"SBH\", \"TND\"", given);
  if (v.entry == FaEntry::VarLen && *layout != FaLayout::TND) {
    return invalid(v.api, "inputLayout", "\"TND\" (the VarLen / Unpadding entry points take TND only)", given);
  }
  if (v.entry == FaEntry::Padded && *layout == FaLayout::TND) {
    return invalid(v.api, "inputLayout",
                   "one of \"BNSD\", \"BSND\", \"BSH\", \"SBH\" (TND goes through the VarLen / Unpadding entry points "
                   "or the V4 entry point)",
                   given);
  }
  return ACLNN_SUCCESS;
}

std::vector<int64_t> faLayoutShape(const FaSizes& s, bool queryRows, int64_t heads, int64_t lastDim) {
  const int64_t rows = queryRows ? s.s1 : s.s2;
  switch (s.layout) {
    case FaLayout::BNSD:
      return {s.b, heads, rows, lastDim};
    case FaLayout::BSND:
      return {s.b, rows, heads, lastDim};
    case FaLayout::BSH:
      return {s.b, rows, heads * lastDim};
    case FaLayout::SBH:
      return {rows, s.b, heads * lastDim};
    case FaLayout::TND:
      return {queryRows ? s.t1 : s.t2, heads, lastDim};
  }
  return {};
}

aclnnStatus deriveFaSizes(const FaCall& v, FaLayout layout, FaSizes* sizes) {
  if (v.headNum <= 0) return invalid(v.api, "headNum", "headNum > 0 (N1, the query heads)", str(v.headNum));
  FaSizes s;
  s.layout = layout;
  const char* name = faLayoutName(layout);
  const bool fourD = layout == FaLayout::BNSD || layout == FaLayout::BSND;
  const int64_t rank = fourD ? 4 : 3;
  const std::string why = std::string("inputLayout ") + name;
  GRADKIT_RETURN_IF_ERROR(checkRankIn(v.api, "query", *v.query, {rank}, why));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(v.api, v.keyName, *v.key, {rank}, why));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(v.api, "value", *v.value, {rank}, why));
  const auto& q = v.query->viewDims;
  const auto& k = v.key->viewDims;
  const auto& val = v.value->viewDims;
  int64_t keyBatch = 0, valueBatch = 0, valueRows = 0, valueHeads = 0, dk = 0;
  switch (layout) {
    case FaLayout::BNSD:
      s.b = q[0], s.n1 = q[1], s.s1 = q[2], s.d = q[3];
      keyBatch = k[0], s.n2 = k[1], s.s2 = k[2], dk = k[3];
      valueBatch = val[0], valueHeads = val[1], valueRows = val[2], s.dv = val[3];
      break;
    case FaLayout::BSND:
      s.b = q[0], s.s1 = q[1], s.n1 = q[2], s.d = q[3];
      keyBatch = k[0], s.s2 = k[1], s.n2 = k[2], dk = k[3];
      valueBatch = val[0], valueRows = val[1], valueHeads = val[2], s.dv = val[3];
      break;
    case FaLayout::TND:
      s.t1 = q[0], s.n1 = q[1], s.d = q[2];
      s.t2 = k[0], s.n2 = k[1], dk = k[2];
      valueRows = val[0], valueHeads = val[1], s.dv = val[2];
      break;
    case FaLayout::BSH:
    case FaLayout::SBH: {
      const bool bsh = layout == FaLayout::BSH;
      s.b = bsh ? q[0] : q[1], s.s1 = bsh ? q[1] : q[0];
      keyBatch = bsh ? k[0] : k[1], s.s2 = bsh ? k[1] : k[0];
      valueBatch = bsh ? val[0] : val[1], valueRows = bsh ? val[1] : val[0];
      s.n1 = v.headNum;
      s.d = q[2] / v.headNum;
      if (s.d == 0 || q[2] % v.headNum != 0) {
        return invalid(v.api, "query", "H = headNum * D with D >= 1 (headNum = " + str(v.headNum) + ")",
                       "H = " + str(q[2]) + " (" + shapeText(*v.query) + ")");
      }
      if (k[2] % s.d != 0 || k[2] == 0) {
        return invalid(v.api, v.keyName, "H = N2 * D with N2 >= 1 (D = " + str(s.d) + " from query)",
                       "H = " + str(k[2]) + " (" + shapeText(*v.key) + ")");
      }
      s.n2 = k[2] / s.d, dk = s.d, valueHeads = s.n2;
      if (val[2] % s.n2 != 0) {
        return invalid(v.api, "value", "H = N2 * D_V (N2 = " + str(s.n2) + ")",
                       "H = " + str(val[2]) + " (" + shapeText(*v.value) + ")");
      }
      s.dv = val[2] / s.n2;
      break;
    }
  }
  if (layout != FaLayout::BSH && layout != FaLayout::SBH && s.n1 != v.headNum) {
    return invalid(v.api, "headNum", "N1 = " + str(s.n1) + " (the heads of query, " + shapeText(*v.query) + ")",
                   str(v.headNum));
  }
  if (s.n1 > kFaMaxHeads) {
    return invalid(v.api, "query", "N1 (query heads) in [1, 256]", "N1 = " + str(s.n1));
  }
  if (!s.tnd() && keyBatch != s.b) {
    return invalid(v.api, v.keyName, "B = " + str(s.b) + " (query's batch)",
                   "B = " + str(keyBatch) + " (" + shapeText(*v.key) + ")");
  }
  if (s.n2 < 1 || s.n1 % s.n2 != 0) {
    return invalid(v.api, v.keyName, "N2 >= 1 heads dividing N1 = " + str(s.n1) + " (GQA groups)",
                   "N2 = " + str(s.n2) + " (" + shapeText(*v.key) + ")");
  }
  if (dk != s.d) {
    return invalid(v.api, v.keyName, "D = " + str(s.d) + " (query's head dim)",
                   "D = " + str(dk) + " (" + shapeText(*v.key) + ")");
  }
  const int64_t keyRows = s.tnd() ? s.t2 : s.s2;
  if ((!s.tnd() && valueBatch != s.b) || valueRows != keyRows || valueHeads != s.n2) {
    return invalid(v.api, "value",
                   "the dims of " + std::string(v.keyName) + " except the last (" + shapeText(*v.key) + ")",
                   shapeText(*v.value));
  }
  if (s.dv > s.d) {
    return invalid(v.api, "value", "D_V <= D = " + str(s.d) + " (value's head dim at most query's)",
                   "D_V = " + str(s.dv) + " (" + shapeText(*v.value) + ")");
  }
  if (s.d > kFaMaxHeadDim) {
    return invalid(v.api, "query", "D (head dim) <= 768", "D = " + str(s.d) + " (" + shapeText(*v.query) + ")");
  }
  *sizes = s;
  return ACLNN_SUCCESS;
}

aclnnStatus checkFaSequenceArrays(const FaCall& v, FaSizes* s) {
  if (!s->tnd()) return ACLNN_SUCCESS;
  struct Entry {
    const char* name;
    const aclIntArray* array;
    int64_t rows;
    std::vector<int64_t>* lengths;
    const char* rowsName;
  };
  const Entry entries[] = {{"actualSeqQLenOptional", v.actualSeqQLen, s->t1, &s->seqQ, "T1 (query rows)"},
                           {"actualSeqKvLenOptional", v.actualSeqKvLen, s->t2, &s->seqKv, "T2 (key rows)"}};
  for (const Entry& e : entries) {
    if (e.array == nullptr) {
      return fail(ACLNN_ERR_PARAM_NULLPTR, v.api, e.name, "a non-null array (TND needs the cumulative lengths)",
                  "nullptr");
    }
    const std::vector<int64_t>& a = e.array->values;
    if (a.empty()) return invalid(v.api, e.name, "at least 1 entry (B >= 1)", "an empty array");
    if (a.size() != v.actualSeqQLen->values.size()) {
      return invalid(v.api, e.name,
                     std::to_string(v.actualSeqQLen->values.size()) + " entries (as actualSeqQLenOptional)",
                     std::to_string(a.size()) + " entries");
    }
    // Cumulative ends, non-decreasing from 0; entries after the last positive one are 0 (batches not computed).
    size_t computed = 0;
    for (size_t b = 0; b < a.size(); ++b) {
      if (a[b] > 0) computed = b + 1;
    }
    int64_t previous = 0;
    e.lengths->assign(a.size(), 0);
    for (size_t b = 0; b < a.size(); ++b) {
      const bool trailing = b >= computed;
      if (a[b] < 0 || (trailing && a[b] != 0) || (!trailing && a[b] < previous)) {
        return invalid(v.api, e.name,
                       "cumulative sequence ends: non-negative, non-decreasing, 0 only after the last positive entry",
                       "entry " + std::to_string(b) + " = " + str(a[b]) + " after " + str(previous) + " in " +
                           arrayText(*e.array));
      }
      if (!trailing) (*e.lengths)[b] = a[b] - previous, previous = a[b];
    }
    if (previous > e.rows) {
      return invalid(v.api, e.name, std::string("a last positive entry <= ") + e.rowsName + " = " + str(e.rows),
                     str(previous) + " in " + arrayText(*e.array));
    }
  }
  s->b = static_cast<int64_t>(s->seqQ.size());
  s->s1 = *std::max_element(s->seqQ.begin(), s->seqQ.end());
  s->s2 = *std::max_element(s->seqKv.begin(), s->seqKv.end());
  return ACLNN_SUCCESS;
}

aclnnStatus checkFaSoftmaxLayout(std::string_view api, std::string_view name, const char* layout) {
  if (layout == nullptr) return ACLNN_SUCCESS;
  const std::string text(layout, strnlen(layout, 32));
  if (text.empty() || text == "same_as_input") return ACLNN_SUCCESS;
  return invalid(api, name, "\"\" or \"same_as_input\" (or null)", "\"" + text + "\"");
}

aclnnStatus checkFaStatistics(std::string_view api, std::string_view name, const aclTensor& t, const FaSizes& s) {
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, name, t, {ACL_FLOAT}));
  if (s.tnd()) return checkShapeIs(api, name, t, {s.t1, s.n1, 8}, "[T1, N1, 8]");
  return checkShapeIs(api, name, t, {s.b, s.n1, s.s1, 8}, "[B, N1, S1, 8]");
}

aclnnStatus checkFaInputDtypes(const FaCall& v) {
  if (v.fp8OutDtype != ACL_DT_UNDEFINED) {
    GRADKIT_RETURN_IF_ERROR(checkDtypeIn(v.api, "query", *v.query, {ACL_FLOAT8_E5M2, ACL_FLOAT8_E4M3FN}));
  } else {
    GRADKIT_RETURN_IF_ERROR(checkDtypeIn(v.api, "query", *v.query, {ACL_FLOAT16, ACL_BF16, ACL_FLOAT}));
  }
  GRADKIT_RETURN_IF_ERROR(checkSameDtype(v.api, v.keyName, *v.key, "query", *v.query));
  return checkSameDtype(v.api, "value", *v.value, "query", *v.query);
}

aclnnStatus checkFaMaskAndTokens(const FaCall& v, const FaSizes& s) {
  if (v.innerPrecise < 0 || v.innerPrecise > 3) {
    return invalid(v.api, "innerPrecise", "0, 1, 2 or 3", str(v.innerPrecise));
  }
  const int64_t maxMode = s.tnd() ? 8 : 6;
  if (v.sparseMode < 0 || v.sparseMode > maxMode) {
    return invalid(v.api, "sparseMode", s.tnd() ? "0..8" : "0..6 (modes 7 and 8 exist for TND only)",
                   str(v.sparseMode) + " with inputLayout " + faLayoutName(s.layout));
  }
  if (s.tnd() && v.sparseMode == 5) {
    return invalid(v.api, "sparseMode", "not 5 with TND (TND prefix masks use sparseMode 6)", "5");
  }
  if (v.attenMask == nullptr) return checkFaModeWithoutMask(v);
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(v.api, "attenMaskOptional", *v.attenMask, {ACL_BOOL, ACL_UINT8}));
  GRADKIT_RETURN_IF_ERROR(checkMaskShape(v, s));
  GRADKIT_RETURN_IF_ERROR(checkPrefix(v, s));
  if (v.sparseMode == 7 || v.sparseMode == 8) return checkVarlenBand(v, s);
  if (v.sparseMode != 0 && v.sparseMode != 4) return ACLNN_SUCCESS;
  const std::vector<BatchRows> rows = batchRows(s);
  for (size_t b = 0; b < rows.size(); ++b) {
    if (rows[b].s1 > 0 && rows[b].s2 > 0) GRADKIT_RETURN_IF_ERROR(checkBand(v, s, b, rows[b]));
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkFaPse(const FaCall& v, const FaSizes& s) {
  GRADKIT_RETURN_IF_ERROR(checkStartIndices(v));
  if (v.pseType < 0 || v.pseType > 3) return invalid(v.api, "pseType", "0, 1, 2 or 3", str(v.pseType));
  if (v.pse == nullptr) {
    if (v.pseType < 2) return ACLNN_SUCCESS;
    return invalid(v.api, v.pseName,
                   "a FLOAT slopes tensor [N1] or [B, N1] (pseType " + str(v.pseType) + " generates the bias from it)",
                   "nullptr");
  }
  if (v.sparseMode == 7 && v.attenMask != nullptr) {
    return invalid(v.api, v.pseName, "nullptr (sparseMode 7 takes no pse)", shapeText(*v.pse));
  }
  if (s.tnd()) {
    size_t computed = 0;
    for (size_t b = 0; b < s.seqQ.size(); ++b) {
      if (s.seqQ[b] > 0) computed = b + 1;
    }
    for (size_t b = 0; b < computed; ++b) {
      if (s.seqQ[b] == 0) {
        return invalid(v.api, v.pseName, "nullptr (a pse needs every batch before the trailing zeros non-empty)",
                       shapeText(*v.pse) + " with batch " + std::to_string(b) + " of length 0");
      }
    }
  }
  if (v.sparseMode == 8 && v.attenMask != nullptr) {
    const int64_t shift = firstElementOr0(v.qStartIdx) - firstElementOr0(v.kvStartIdx);
    for (size_t b = 0; b < s.seqQ.size(); ++b) {
      if (s.seqQ[b] != s.seqKv[b] || shift != 0) {
        return invalid(v.api, v.pseName,
                       "nullptr unless every batch has S1 = S2 and qStartIdx = kvStartIdx (sparseMode 8 with pse)",
                       "batch " + std::to_string(b) + ": S1 = " + str(s.seqQ[b]) + ", S2 = " + str(s.seqKv[b]) +
                           ", qStartIdx - kvStartIdx = " + str(shift));
      }
    }
  }
  if (v.pseType >= 2) {
    GRADKIT_RETURN_IF_ERROR(checkDtypeIn(v.api, v.pseName, *v.pse, {ACL_FLOAT}));
    if (v.pse->viewDims != std::vector<int64_t>{s.n1} && v.pse->viewDims != std::vector<int64_t>{s.b, s.n1}) {
      return invalid(v.api, v.pseName,
                     "slopes of shape [N1] = [" + str(s.n1) + "] or [B, N1] = [" + str(s.b) + ", " + str(s.n1) +
                         "] (pseType " + str(v.pseType) + ")",
                     shapeText(*v.pse));
    }
    if (!s.tnd() && s.s1 != s.s2) {
      return invalid(v.api, v.pseName, "S1 = S2 (pseType 2 / 3 generate a square bias)",
                     "S1 = " + str(s.s1) + ", S2 = " + str(s.s2));
    }
    return ACLNN_SUCCESS;
  }
  if (v.fp8OutDtype != ACL_DT_UNDEFINED) {  // FP8: the table is not quantised, it takes the out dtype
    GRADKIT_RETURN_IF_ERROR(checkDtypeIn(v.api, v.pseName, *v.pse, {v.fp8OutDtype}));
  } else {
    GRADKIT_RETURN_IF_ERROR(checkSameDtype(v.api, v.pseName, *v.pse, "query", *v.query));
  }
  return checkUserPseShape(v, s);
}

aclnnStatus checkFaDropout(const FaCall& v, const FaSizes& s) {
  // The kernels keep with float(keepProb) and scale by 1 / float(keepProb): both must be normal, finite floats.
  const auto kept = static_cast<float>(v.keepProb);
  if (!(v.keepProb > 0.0 && v.keepProb <= 1.0) || !(kept >= std::numeric_limits<float>::min())) {
    return invalid(v.api, "keepProb",
                   "a keep probability in (0, 1] that is at least 1.17549435e-38 as a float (FLT_MIN: the kernels "
                   "scale by 1 / float(keepProb))",
                   doubleText(v.keepProb));
  }
  if (v.philoxDropout && v.offset < 0) {
    return invalid(v.api, "offset", "offset >= 0 (the Philox stream starts at byte offset)", str(v.offset));
  }
  if (kept >= 1.0f) return ACLNN_SUCCESS;  // no dropout: any dropMask is unused
  // Stride-0 views can claim more scores than a keep mask or the Philox stream positions (int64, rows padded to 16)
  // can number: such a call could never run.
  const uint64_t scores = faDropoutElements(s);
  if (scores > kFaMaxDropoutScores) {
    const std::string count = s.tnd() ? "N1 * sum S1_b * S2_b" : "B * N1 * S1 * S2";
    return invalid(v.api, "keepProb", "1 (no dropout) when " + count + " > 2^62 (one keep bit per score)",
                   doubleText(v.keepProb) + " with " + count +
                       (scores == UINT64_MAX ? std::string(" >= 2^64") : " = " + std::to_string(scores)));
  }
  if (v.dropMask == nullptr) {
    if (v.philoxDropout) return ACLNN_SUCCESS;
    return invalid(v.api, "dropMaskOptional", "a UINT8 bit-packed keep mask (keepProb < 1)", "nullptr");
  }
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(v.api, "dropMaskOptional", *v.dropMask, {ACL_UINT8}));
  const uint64_t bytes = faDropMaskBytes(s);
  if (static_cast<uint64_t>(v.dropMask->numel()) >= bytes) return ACLNN_SUCCESS;
  return invalid(v.api, "dropMaskOptional",
                 "at least ceil(" + std::to_string(scores) + " / 8) = " + std::to_string(bytes) + " bytes (" +
                     (s.tnd() ? "N1 * sum S1_b * S2_b" : "B * N1 * S1 * S2") + " elements, one bit each)",
                 std::to_string(v.dropMask->numel()) + " bytes (" + shapeText(*v.dropMask) + ")");
}

uint64_t faDropoutElements(const FaSizes& s) {
  uint64_t elements = 0;
  if (s.tnd()) {
    for (size_t b = 0; b < s.seqQ.size(); ++b) {
      elements = satAdd(elements, satMul(static_cast<uint64_t>(s.seqQ[b]), static_cast<uint64_t>(s.seqKv[b])));
    }
    return satMul(elements, static_cast<uint64_t>(s.n1));
  }
  return satMul(satMul(static_cast<uint64_t>(s.b), static_cast<uint64_t>(s.n1)),
                satMul(static_cast<uint64_t>(s.s1), static_cast<uint64_t>(s.s2)));
}

aclnnStatus checkFaRope(const FaCall& v, FaSizes* s) {
  if (v.queryRope == nullptr && v.keyRope == nullptr) return ACLNN_SUCCESS;
  const char* other = v.queryRope == nullptr ? v.queryRopeName : v.keyRopeName;
  const char* present = v.queryRope == nullptr ? v.keyRopeName : v.queryRopeName;
  if (v.queryRope == nullptr || v.keyRope == nullptr) {
    return fail(ACLNN_ERR_PARAM_NULLPTR, v.api, other,
                std::string("a non-null tensor (") + present + " is given: the rope slices come in pairs)", "nullptr");
  }
  const bool merged = v.entry == FaEntry::Merged950;
  if (merged) {
    GRADKIT_RETURN_IF_ERROR(checkDtypeIn(v.api, "query", *v.query, {ACL_FLOAT16, ACL_BF16}));
  } else {
    GRADKIT_RETURN_IF_ERROR(checkDtypeIn(v.api, "query", *v.query, {ACL_BF16}));
  }
  GRADKIT_RETURN_IF_ERROR(checkSameDtype(v.api, v.queryRopeName, *v.queryRope, "query", *v.query));
  GRADKIT_RETURN_IF_ERROR(checkSameDtype(v.api, v.keyRopeName, *v.keyRope, "query", *v.query));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(v.api, v.queryRopeName, *v.queryRope, {v.query->dim()}, "the rank of query"));
  const int64_t last = v.queryRope->viewDims.back();
  const bool packed = s->layout == FaLayout::BSH || s->layout == FaLayout::SBH;
  s->dRope = packed ? last / s->n1 : last;
  if (s->dRope < 1 || (packed && last % s->n1 != 0) || s->dRope > s->d) {
    return invalid(v.api, v.queryRopeName, "a rope head dim D_rope in [1, D = " + str(s->d) + "]",
                   shapeText(*v.queryRope));
  }
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(v.api, v.queryRopeName, *v.queryRope, faLayoutShape(*s, true, s->n1, s->dRope),
                                       "query's shape with the last dim D_rope"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(v.api, v.keyRopeName, *v.keyRope, faLayoutShape(*s, false, s->n2, s->dRope),
                                       std::string(v.keyName) + "'s shape with the last dim D_rope"));
  const std::string dims = "D = " + str(s->d) + ", D_V = " + str(s->dv) + ", D_rope = " + str(s->dRope);
  if (merged) {
    if (s->d != kFaRope950HeadDim || s->dv != kFaRope950HeadDim || s->dRope != kFaRope950RopeDim) {
      return invalid(v.api, v.queryRopeName, "D = D_V = 128 and D_rope = 64 (rope on Ascend950)", dims);
    }
    return ACLNN_SUCCESS;
  }
  if (s->d % 8 != 0 || s->dRope % 8 != 0) {
    return invalid(v.api, v.queryRopeName, "D and D_rope multiples of 8 (rope)", dims);
  }
  if (v.attenMask == nullptr) {
    return fail(ACLNN_ERR_PARAM_NULLPTR, v.api, "attenMaskOptional", "a mask (rope requires one)", "nullptr");
  }
  if (v.sparseMode == 6) return invalid(v.api, "sparseMode", "not 6 (rope)", "6");
  if (v.pse != nullptr) return invalid(v.api, v.pseName, "nullptr (rope takes no pse)", shapeText(*v.pse));
  if (v.dropMask != nullptr) {
    return invalid(v.api, "dropMaskOptional", "nullptr (rope takes no dropout)", shapeText(*v.dropMask));
  }
  if (v.keepProb != 1.0) return invalid(v.api, "keepProb", "1 (rope takes no dropout)", std::to_string(v.keepProb));
  return ACLNN_SUCCESS;
}

aclnnStatus checkFaDataPointers(std::string_view api, const std::vector<NamedTensor>& named) {
  for (const NamedTensor& t : named) {
    if (t.tensor == nullptr || t.tensor->isEmpty() || t.tensor->data != nullptr) continue;
    return invalid(api, t.name, "a non-null data pointer (the tensor has elements)",
                   "nullptr data with " + shapeText(*t.tensor));
  }
  return ACLNN_SUCCESS;
}

aclnnStatus rejectFaNotSupported(std::string_view api, std::string_view name, const aclTensor& given,
                                 std::string_view what) {
  return invalid(api, name, "null or an empty tensor (" + std::string(what) + " is not supported yet by gradkit)",
                 shapeText(given) + " of " + dtypeName(given.dtype));
}

}  // namespace gradkit::ops
