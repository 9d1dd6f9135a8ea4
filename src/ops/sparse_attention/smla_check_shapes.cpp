// aclnnSparseFlashMla's cross-tensor shapes (upstream's fourth phase), the A2/A3 profile's narrower limits (upstream's
// A2/A3 tiling check), and the values of the INT32 tensors read on the host (prefix sums, used lengths, residuals,
// block tables, top-k lengths: upstream leaves them to the caller or its AI CPU; gradkit rejects them in the first
// phase).
#include <string>
#include <vector>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "opapi/tensor_copy.h"
#include "opapi/tensor_rules.h"
#include "ops/sparse_attention/smla_check.h"
#include "ops/sparse_attention/smla_metadata_rules.h"
#include "runtime/runtime.h"

namespace gradkit::ops {
namespace {

constexpr const char* kApi = kSmlaApi;
constexpr int64_t kHeadDim = 512, kMaxHeads = 128, kMaxBlockSize = 1024, kMetadataElements = 1024;

aclnnStatus invalidIn(const char* api, const char* name, const std::string& expected, const std::string& given) {
  return fail(ACLNN_ERR_PARAM_INVALID, api, name, expected, given);
}

aclnnStatus invalid(const char* name, const std::string& expected, const std::string& given) {
  return invalidIn(kApi, name, expected, given);
}

std::string shapeOf(const aclTensor& t) { return "shape " + t.shapeString(); }

aclnnStatus checkKv(const SmlaCheckNames& n, const char* name, const aclTensor* kv, const aclTensor& q,
                    const SmlaShape& s) {
  if (kv == nullptr) return ACLNN_SUCCESS;
  const int64_t rank = kv->dim();
  if (kv->viewDims[rank - 2] != 1 || kv->viewDims[rank - 1] != kHeadDim) {
    return invalidIn(n.api, name, "one KV head of 512 (the last two dims [1, 512])", shapeOf(*kv));
  }
  if (s.layoutKv == SmlaLayout::PaBbnd && (kv->viewDims[1] < 1 || kv->viewDims[1] > kMaxBlockSize)) {
    return invalidIn(n.api, name, "a block size (dim 1) of 1 .. 1024", shapeOf(*kv));
  }
  if (s.layoutKv == SmlaLayout::Bsnd && kv->viewDims[0] != s.batch) {
    return invalidIn(n.api, name, "dim 0 = B = " + std::to_string(s.batch) + " (" + n.q + "'s dim 0)", shapeOf(*kv));
  }
  return checkSameDtype(n.api, name, *kv, n.q, q);
}

/** Index lists [B, S1, 1, K] / [T1, 1, K] and their lengths [B, S1, 1] / [T1, 1]. */
aclnnStatus checkPerToken(const SmlaCheckNames& n, const char* name, const aclTensor* t, const SmlaShape& s,
                          bool withK) {
  if (t == nullptr) return ACLNN_SUCCESS;
  std::vector<int64_t> lead =
      s.layoutQ == SmlaLayout::Bsnd ? std::vector<int64_t>{s.batch, s.s1, 1} : std::vector<int64_t>{s.tokens, 1};
  if (withK) lead.push_back(t->viewDims.back());
  const std::string why = std::string(n.q) + (withK ? "'s tokens, 1 KV head, K" : "'s tokens, 1 KV head");
  return checkShapeIs(n.api, name, *t, lead, why.c_str());
}

bool powerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

/** The prefix sums `cu`: the family's rule (0 first, non-decreasing), then the last at most `rows`. */
aclnnStatus checkPrefixSums(const char* api, const char* name, const std::vector<int64_t>& cu, int64_t rows,
                            const std::string& rowsWhat) {
  if (cu.empty()) return ACLNN_SUCCESS;
  GRADKIT_RETURN_IF_ERROR(checkSmlaCuSeqlensValues(api, name, cu));
  if (cu.back() > rows) {
    return invalidIn(api, name, std::string("a last value <= ") + std::to_string(rows) + " (" + rowsWhat + ")",
                     std::to_string(cu.back()));
  }
  return ACLNN_SUCCESS;
}

/** Used lengths: 0 <= used[b] <= limit(b). */
template <class Limit>
aclnnStatus checkUsed(const char* api, const char* name, const std::vector<int64_t>& used, const Limit& limit,
                      const char* what) {
  for (size_t b = 0; b < used.size(); ++b) {
    const int64_t max = limit(static_cast<int64_t>(b));
    if (used[b] < 0 || used[b] > max) {
      return invalidIn(
          api, name, std::string("0 .. ") + std::to_string(max) + " (" + what + " of batch " + std::to_string(b) + ")",
          std::string("[") + std::to_string(b) + "] = " + std::to_string(used[b]));
    }
  }
  return ACLNN_SUCCESS;
}

/** Block ids of the columns a batch of `rows` reaches: within [0, blocks). */
aclnnStatus checkBlockTable(const char* name, const aclTensor& table, const std::vector<int64_t>& rowsPerBatch,
                            int64_t blockSize, int64_t blocks) {
  const int64_t columns = table.viewDims[1];
  const std::vector<int64_t> ids = readInt32Values(&table);
  for (size_t b = 0; b < rowsPerBatch.size(); ++b) {
    const int64_t reached = (rowsPerBatch[b] + blockSize - 1) / blockSize;
    for (int64_t c = 0; c < reached; ++c) {
      const int64_t id = ids[b * columns + c];
      if (id < 0 || id >= blocks) {
        return invalid(name, "block ids 0 .. " + std::to_string(blocks - 1) + " in the columns a batch reaches",
                       std::string("[") + std::to_string(b) + ", " + std::to_string(c) + "] = " + std::to_string(id));
      }
    }
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkTopkLengths(const char* api, const char* name, const aclTensor* t) {
  const std::vector<int64_t> lengths = readInt32Values(t);  // row-major, any strides
  for (size_t e = 0; e < lengths.size(); ++e) {
    if (lengths[e] < 0)
      return invalidIn(api, name, "lengths >= 0", "element " + std::to_string(e) + " = " + std::to_string(lengths[e]));
  }
  return ACLNN_SUCCESS;
}

}  // namespace

aclnnStatus checkSmlaCount(const char* api, const char* name, const aclTensor* t, int64_t expected, const char* why) {
  if (t == nullptr || t->numel() == expected) return ACLNN_SUCCESS;
  return invalidIn(api, name, std::to_string(expected) + " elements (" + why + ")", shapeOf(*t));
}

aclnnStatus checkSmlaCommonShapes(const SmlaCheckNames& n, const SmlaArgs& a, const SmlaShape& s) {
  const aclTensor& q = *a.q;
  if (s.n1 < 1 || s.n1 > kMaxHeads) return invalidIn(n.api, n.q, "N1 (heads) of 1 .. 128", shapeOf(q));
  if (s.d != kHeadDim) return invalidIn(n.api, n.q, "D = 512 (448 nope + 64 rope)", shapeOf(q));
  GRADKIT_RETURN_IF_ERROR(checkKv(n, "oriKvOptional", a.oriKv, q, s));
  GRADKIT_RETURN_IF_ERROR(checkKv(n, "cmpKvOptional", a.cmpKv, q, s));
  if (s.batch < 1) {
    return invalidIn(n.api, "cuSeqlensQOptional", "B + 1 >= 2 prefix sums (at least one batch)",
                     shapeOf(*a.cuSeqlensQ));
  }
  GRADKIT_RETURN_IF_ERROR(checkSmlaCount(n.api, "cuSeqlensOriKvOptional", a.cuSeqlensOriKv, s.batch + 1, "B + 1"));
  GRADKIT_RETURN_IF_ERROR(checkSmlaCount(n.api, "cuSeqlensCmpKvOptional", a.cuSeqlensCmpKv, s.batch + 1, "B + 1"));
  GRADKIT_RETURN_IF_ERROR(checkSmlaCount(n.api, "sequsedQOptional", a.sequsedQ, s.batch, "B"));
  GRADKIT_RETURN_IF_ERROR(checkSmlaCount(n.api, "sequsedOriKvOptional", a.sequsedOriKv, s.batch, "B"));
  GRADKIT_RETURN_IF_ERROR(checkSmlaCount(n.api, "sequsedCmpKvOptional", a.sequsedCmpKv, s.batch, "B"));
  GRADKIT_RETURN_IF_ERROR(checkSmlaCount(n.api, "cmpResidualKvOptional", a.cmpResidualKv, s.batch, "B"));
  GRADKIT_RETURN_IF_ERROR(checkPerToken(n, "oriSparseIndicesOptional", a.oriSparseIndices, s, true));
  GRADKIT_RETURN_IF_ERROR(checkPerToken(n, "cmpSparseIndicesOptional", a.cmpSparseIndices, s, true));
  GRADKIT_RETURN_IF_ERROR(checkPerToken(n, "oriTopkLengthOptional", a.oriTopkLength, s, false));
  return checkPerToken(n, "cmpTopkLengthOptional", a.cmpTopkLength, s, false);
}

aclnnStatus checkSmlaShapes(const SmlaArgs& a, const SmlaShape& s) {
  const aclTensor& q = *a.q;
  GRADKIT_RETURN_IF_ERROR(checkSameShape(kApi, "attnOutOut", *a.attnOut, "q", q));
  GRADKIT_RETURN_IF_ERROR(checkSameDtype(kApi, "attnOutOut", *a.attnOut, "q", q));
  GRADKIT_RETURN_IF_ERROR(checkSmlaCommonShapes({kApi, "q"}, a, s));
  for (const auto& [name, table] :
       {std::pair{"oriBlockTableOptional", a.oriBlockTable}, std::pair{"cmpBlockTableOptional", a.cmpBlockTable}}) {
    if (table != nullptr && table->viewDims[0] != s.batch) {
      return invalid(name, "dim 0 = B = " + std::to_string(s.batch), shapeOf(*table));
    }
  }
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "sinksOptional", *a.sinks, {s.n1}, "[N1], one sink per query head"));
  if (a.softmaxLse != nullptr) {
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "softmaxLseOutOptional", *a.softmaxLse, smlaLseDims(s),
                                         "[B, N2, S1, N1 / N2] or [N2, T1, N1 / N2] with N2 = 1"));
  }
  return checkSmlaCount(kApi, "metadataOptional", a.metadata, kMetadataElements,
                        "aclnnSparseFlashMlaMetadata's output");
}

std::vector<int64_t> smlaLseDims(const SmlaShape& s) {
  return s.layoutQ == SmlaLayout::Bsnd ? std::vector<int64_t>{s.batch, 1, s.s1, s.n1}
                                       : std::vector<int64_t>{1, s.tokens, s.n1};
}

aclnnStatus checkSmlaProfile(const SmlaArgs& a, const SmlaShape& s) {
  if (rt::currentSoc() == rt::Soc::Ascend950) return ACLNN_SUCCESS;
  const std::string profile = std::string(" in the ") + rt::socName(rt::currentSoc()) + " profile";
  if (!powerOfTwo(s.n1)) return invalid("q", "N1 a power of two" + profile, shapeOf(*a.q));
  const bool listedOri = a.oriSparseIndices != nullptr;
  if (listedOri && s.hasCmp) {
    return invalid("oriSparseIndicesOptional",
                   "nullptr with cmpKv (ori and cmp indices together exist on Ascend950 only)",
                   shapeOf(*a.oriSparseIndices));
  }
  if (listedOri && a.oriMaskMode != 0) {
    return invalid("oriMaskMode", "0 with oriSparseIndices" + profile, std::to_string(a.oriMaskMode));
  }
  if (!listedOri && (a.oriMaskMode != 4 || a.oriWinLeft != 127 || a.oriWinRight != 0)) {
    return invalid(
        "oriMaskMode", "4 with oriWinLeft 127 and oriWinRight 0" + profile,
        std::to_string(a.oriMaskMode) + " with " + std::to_string(a.oriWinLeft) + ", " + std::to_string(a.oriWinRight));
  }
  if (s.hasCmp && a.cmpMaskMode != 3)
    return invalid("cmpMaskMode", "3 with cmpKv" + profile, std::to_string(a.cmpMaskMode));
  const int64_t ratio = !s.hasCmp ? 1 : a.cmpSparseIndices != nullptr ? 4 : 128;
  if (a.cmpRatio != ratio) {
    return invalid("cmpRatio", std::to_string(ratio) + " (SWA 1, CSA 4, HCA 128)" + profile,
                   std::to_string(a.cmpRatio));
  }
  if (a.cmpSparseIndices != nullptr && a.cmpSparseIndices->viewDims.back() > 8192) {
    return invalid("cmpSparseIndicesOptional", "K2 <= 8192" + profile, shapeOf(*a.cmpSparseIndices));
  }
  if (s.layoutKv == SmlaLayout::PaBbnd) {
    for (const auto& [name, kv] : {std::pair{"oriKvOptional", a.oriKv}, std::pair{"cmpKvOptional", a.cmpKv}}) {
      if (kv != nullptr && (kv->viewDims[1] < 16 || kv->viewDims[1] % 16 != 0)) {
        return invalid(name, "a block size (dim 1) that is a multiple of 16 in 16 .. 1024" + profile, shapeOf(*kv));
      }
    }
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkSmlaValues(const SmlaCheckNames& n, const SmlaArgs& a, const SmlaShape& s) {
  const char* api = n.api;
  const SmlaLengths l = smlaLengthsOf(a);
  const bool paged = s.layoutKv == SmlaLayout::PaBbnd;
  GRADKIT_RETURN_IF_ERROR(checkPrefixSums(api, "cuSeqlensQOptional", l.cuQ, s.tokens, std::string(n.q) + "'s T1"));
  if (!paged) {
    GRADKIT_RETURN_IF_ERROR(
        checkPrefixSums(api, "cuSeqlensOriKvOptional", l.cuOri, smlaKvRows(*a.oriKv, s.layoutKv), "oriKv's rows"));
    if (s.hasCmp) {
      GRADKIT_RETURN_IF_ERROR(
          checkPrefixSums(api, "cuSeqlensCmpKvOptional", l.cuCmp, smlaKvRows(*a.cmpKv, s.layoutKv), "cmpKv's rows"));
    }
  }
  const auto qRows = [&](int64_t b) { return l.cuQ.empty() ? s.s1 : l.cuQ[b + 1] - l.cuQ[b]; };
  GRADKIT_RETURN_IF_ERROR(checkUsed(api, "sequsedQOptional", l.seqQ, qRows, "the query rows"));
  const auto kvRows = [paged](const aclTensor* kv, const aclTensor* table, const std::vector<int64_t>* cu) {
    return [paged, kv, table, cu](int64_t b) {
      if (paged) return table->viewDims[1] * kv->viewDims[1];
      return cu->empty() ? kv->viewDims[1] : (*cu)[b + 1] - (*cu)[b];
    };
  };
  GRADKIT_RETURN_IF_ERROR(
      checkUsed(api, "sequsedOriKvOptional", l.seqOri, kvRows(a.oriKv, a.oriBlockTable, &l.cuOri), "the ori rows"));
  if (s.hasCmp) {
    GRADKIT_RETURN_IF_ERROR(checkUsed(api, "sequsedCmpKvOptional", l.seqCmp, kvRows(a.cmpKv, a.cmpBlockTable, &l.cuCmp),
                                      "the compressed rows"));
    GRADKIT_RETURN_IF_ERROR(checkSmlaResidualValues(api, "cmpResidualKvOptional", l.residual, a.cmpRatio));
  }
  if (paged) {
    const std::vector<kernels::SmlaBatch> batches = smlaBatchesOf(a, s, l);
    std::vector<int64_t> oriRows, cmpRows;
    for (const kernels::SmlaBatch& x : batches) {
      oriRows.push_back(x.s2);
      cmpRows.push_back(x.c);
    }
    GRADKIT_RETURN_IF_ERROR(checkBlockTable("oriBlockTableOptional", *a.oriBlockTable, oriRows, a.oriKv->viewDims[1],
                                            a.oriKv->viewDims[0]));
    if (s.hasCmp) {
      GRADKIT_RETURN_IF_ERROR(checkBlockTable("cmpBlockTableOptional", *a.cmpBlockTable, cmpRows, a.cmpKv->viewDims[1],
                                              a.cmpKv->viewDims[0]));
    }
  }
  GRADKIT_RETURN_IF_ERROR(checkTopkLengths(api, "oriTopkLengthOptional", a.oriTopkLength));
  return checkTopkLengths(api, "cmpTopkLengthOptional", a.cmpTopkLength);
}

}  // namespace gradkit::ops
