#include "ops/flash_attention/fa_check_masking.h"

#include <string>
#include <utility>
#include <vector>

#include "base/saturating.h"
#include "ops/flash_attention/fa_check_messages.h"

namespace gradkit::ops {
namespace {

using namespace fa_text;

constexpr int64_t kInt32Max = 2147483647;

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
  if (const std::optional<FaMaskForm> form = faTemplateMaskOf(mode)) {
    if (m.viewDims == faMaskShape(s, *form)) return ACLNN_SUCCESS;
    return invalid(v.api, "attenMaskOptional",
                   *form == FaMaskForm::Template
                       ? "shape [2048, 2048] (the compressed causal template of sparseMode " + str(mode) + ")"
                       : "shape [3072, 2048] (the compressed prefix template of sparseMode 6)",
                   shapeText(m));
  }
  const std::string ss = str(s.s1) + ", " + str(s.s2);
  std::string expected = "[B, 1, S1, S2] = [" + str(s.b) + ", 1, " + ss + "] or [B, N1, S1, S2] = [" + str(s.b) + ", " +
                         str(s.n1) + ", " + ss + "]";
  std::vector<FaMaskForm> allowed = {FaMaskForm::B1SS, FaMaskForm::BNSS};
  if (mode != 5) {
    allowed.insert(allowed.end(), {FaMaskForm::SS, FaMaskForm::OneOneSS});
    expected = "[S1, S2] = [" + ss + "], [1, 1, S1, S2], " + expected;
  }
  for (const FaMaskForm form : allowed) {
    if (m.viewDims == faMaskShape(s, form)) return ACLNN_SUCCESS;
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
  const bool alibiTable =
      p.viewDims == faPseShape(s, FaPseForm::BNHS) || p.viewDims == faPseShape(s, FaPseForm::OneNHS);
  if (s.tnd()) {
    if (alibiTable) {
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
  for (const FaPseForm form : {FaPseForm::BNSS, FaPseForm::BN1S, FaPseForm::OneNSS}) {
    if (p.viewDims == faPseShape(s, form)) return ACLNN_SUCCESS;
  }
  if (alibiTable) {
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

}  // namespace

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
    if (v.pse->viewDims != faPseShape(s, FaPseForm::N) && v.pse->viewDims != faPseShape(s, FaPseForm::BN)) {
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

}  // namespace gradkit::ops
