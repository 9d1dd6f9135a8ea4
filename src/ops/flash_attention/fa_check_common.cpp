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
#include "ops/flash_attention/fa_check_messages.h"
#include "runtime/runtime.h"

namespace gradkit::ops {
namespace {

using namespace fa_text;

constexpr uint64_t kFaMaxDropoutScores = uint64_t{1} << 62;

}  // namespace

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
  const std::optional<FaLayout> known = faLayoutFromName(text);
  if (known.has_value()) *layout = *known;
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

aclnnStatus deriveFaSizes(const FaCall& v, FaLayout layout, FaSizes* sizes) {
  if (v.headNum <= 0) return invalid(v.api, "headNum", "headNum > 0 (N1, the query heads)", str(v.headNum));
  const int64_t rank = faLayoutRank(layout);
  const std::string why = std::string("inputLayout ") + faLayoutName(layout);
  GRADKIT_RETURN_IF_ERROR(checkRankIn(v.api, "query", *v.query, {rank}, why));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(v.api, v.keyName, *v.key, {rank}, why));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(v.api, "value", *v.value, {rank}, why));
  const FaSizes s = faSizesOf(layout, v.query->viewDims, v.key->viewDims, v.value->viewDims, v.headNum);
  const FaAxes q = faAxesOf(layout, v.query->viewDims);
  const FaAxes k = faAxesOf(layout, v.key->viewDims);
  const FaAxes val = faAxesOf(layout, v.value->viewDims);
  const bool packed = faPackedHeads(layout);
  if (packed && s.d == 0) {
    return invalid(v.api, "query", "H = headNum * D with D >= 1 (headNum = " + str(v.headNum) + ")",
                   "H = " + str(q.width) + " (" + shapeText(*v.query) + ")");
  }
  if (packed && s.n2 == 0) {
    return invalid(v.api, v.keyName, "H = N2 * D with N2 >= 1 (D = " + str(s.d) + " from query)",
                   "H = " + str(k.width) + " (" + shapeText(*v.key) + ")");
  }
  if (packed && val.width % s.n2 != 0) {
    return invalid(v.api, "value", "H = N2 * D_V (N2 = " + str(s.n2) + ")",
                   "H = " + str(val.width) + " (" + shapeText(*v.value) + ")");
  }
  const int64_t keyBatch = k.batch, valueBatch = val.batch, valueRows = val.rows;
  const int64_t valueHeads = packed ? s.n2 : val.heads, dk = packed ? s.d : k.width;
  if (!packed && s.n1 != v.headNum) {
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
    const char* rowsName;
  };
  const Entry entries[] = {{"actualSeqQLenOptional", v.actualSeqQLen, s->t1, "T1 (query rows)"},
                           {"actualSeqKvLenOptional", v.actualSeqKvLen, s->t2, "T2 (key rows)"}};
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
    for (size_t b = 0; b < a.size(); ++b) {
      const bool trailing = b >= computed;
      if (a[b] < 0 || (trailing && a[b] != 0) || (!trailing && a[b] < previous)) {
        return invalid(v.api, e.name,
                       "cumulative sequence ends: non-negative, non-decreasing, 0 only after the last positive entry",
                       "entry " + std::to_string(b) + " = " + str(a[b]) + " after " + str(previous) + " in " +
                           arrayText(*e.array));
      }
      if (!trailing) previous = a[b];
    }
    if (previous > e.rows) {
      return invalid(v.api, e.name, std::string("a last positive entry <= ") + e.rowsName + " = " + str(e.rows),
                     str(previous) + " in " + arrayText(*e.array));
    }
  }
  faSetSequenceEnds(v.actualSeqQLen->values, v.actualSeqKvLen->values, s);
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
  return checkShapeIs(api, name, t, faStatisticsShape(s), s.tnd() ? "[T1, N1, 8]" : "[B, N1, S1, 8]");
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
  s->dRope = faRopeDim(*s, v.queryRope->viewDims.back());
  if (s->dRope < 1 || s->dRope > s->d) {
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

aclnnStatus rejectFaNotSupported(std::string_view api, std::string_view name, const aclTensor& given,
                                 std::string_view what) {
  return invalid(api, name, "null or an empty tensor (" + std::string(what) + " is not supported yet by gradkit)",
                 shapeText(given) + " of " + dtypeName(given.dtype));
}

}  // namespace gradkit::ops
