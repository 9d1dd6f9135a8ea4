#include "ops/lightning_indexer/kl_grad_check_values.h"

#include <string>
#include <vector>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor_copy.h"
#include "ops/lightning_indexer/kl_grad_check.h"
#include "runtime/runtime.h"

namespace gradkit::ops {
namespace {

constexpr const char* kApi = kKlGradApi;

std::string at(const char* what, size_t index, int64_t value) {
  return std::string(what) + "[" + std::to_string(index) + "] = " + std::to_string(value);
}

aclnnStatus checkCu(const char* name, const char* letter, const std::vector<int64_t>& cu, int64_t rows,
                    const char* rowsName) {
  if (cu[0] != 0) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, name, "cu_seqlens[0] = 0 (prefix sums of the batch lengths)",
                at(letter, 0, cu[0]));
  }
  for (size_t b = 1; b < cu.size(); ++b) {
    if (cu[b] < cu[b - 1]) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, name, "non-decreasing values (prefix sums of the batch lengths)",
                  at(letter, b, cu[b]) + " after " + at(letter, b - 1, cu[b - 1]));
    }
  }
  if (cu.back() > rows) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, name,
                "cu_seqlens[B] <= " + std::string(rowsName) + " = " + std::to_string(rows),
                at(letter, cu.size() - 1, cu.back()));
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkUsed(const char* name, const char* letter, const std::vector<int64_t>& used, const KlDims& d,
                      const KlSequences& seq, bool query) {
  for (size_t b = 0; b < used.size(); ++b) {
    const int64_t length =
        query ? klQueryLength(d, seq, static_cast<int64_t>(b)) : klKeyLength(d, seq, static_cast<int64_t>(b));
    if (used[b] < 0 || used[b] > length) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, name,
                  "0 <= " + std::string(letter) + "[b] <= the batch's allocated length (" + std::to_string(length) +
                      " for b = " + std::to_string(b) + ")",
                  at(letter, b, used[b]));
    }
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkA2Lengths(const KlDims& d, const KlSequences& seq) {
  const std::string soc = rt::socName(rt::currentSoc());
  if (d.batch > kKlMaxBatchA2) {
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, d.layout == KlLayout::BSND ? "q" : "cuSeqLensQOptional",
                "B <= 256 on " + soc, "B = " + std::to_string(d.batch));
  }
  for (int64_t b = 0; b < d.batch; ++b) {
    const int64_t q = klQueryLength(d, seq, b), k = klKeyLength(d, seq, b);
    if (q > kKlMaxQueryLengthA2) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, d.layout == KlLayout::BSND ? "q" : "cuSeqLensQOptional",
                  "S1 <= 8192 per batch on " + soc, "S1 = " + std::to_string(q) + " for b = " + std::to_string(b));
    }
    if (k > kKlMaxKeyLengthA2) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, d.layout == KlLayout::BSND ? "k" : "cuSeqLensKOptional",
                  "S2 <= 524288 per batch on " + soc, "S2 = " + std::to_string(k) + " for b = " + std::to_string(b));
    }
  }
  return ACLNN_SUCCESS;
}

}  // namespace

KlSequences klSequencesOf(const KlGradArgs& a, const KlDims& d) {
  KlSequences seq;
  if (d.layout == KlLayout::TND) {
    seq.cuQ = readInt32Values(a.cuSeqLensQ);
    seq.cuK = readInt32Values(a.cuSeqLensK);
  }
  seq.usedQ = readInt32Values(a.seqUsedQ);
  seq.usedK = readInt32Values(a.seqUsedK);
  seq.residual = readInt32Values(a.cmpResidualK);
  return seq;
}

aclnnStatus checkKlGradValues(const KlGradArgs& a, const KlDims& d) {
  const KlSequences seq = klSequencesOf(a, d);
  if (d.layout == KlLayout::TND) {
    GRADKIT_RETURN_IF_ERROR(checkCu("cuSeqLensQOptional", "cu_seqlens_q", seq.cuQ, d.s1, "T1 (q dim 0)"));
    GRADKIT_RETURN_IF_ERROR(checkCu("cuSeqLensKOptional", "cu_seqlens_k", seq.cuK, d.s2, "T2 (k dim 0)"));
  }
  GRADKIT_RETURN_IF_ERROR(checkUsed("seqUsedQOptional", "seqused_q", seq.usedQ, d, seq, true));
  if (!seq.usedQ.empty()) {
    bool anyRows = false;
    for (int64_t used : seq.usedQ) anyRows = anyRows || used > 0;
    if (!anyRows) {
      return fail(ACLNN_ERR_PARAM_INVALID, kApi, "seqUsedQOptional", "at least one batch with seqused_q[b] > 0",
                  "every seqused_q[b] = 0");
    }
  }
  GRADKIT_RETURN_IF_ERROR(checkUsed("seqUsedKOptional", "seqused_k", seq.usedK, d, seq, false));
  for (size_t b = 0; b < seq.residual.size(); ++b) {
    if (seq.residual[b] < 0 || seq.residual[b] >= a.cmpRatio) {
      return fail(
          ACLNN_ERR_PARAM_INVALID, kApi, "cmpResidualKOptional",
          "0 <= cmp_residual_k[b] < cmpRatio = " + std::to_string(a.cmpRatio) + " (the tokens not yet compressed)",
          at("cmp_residual_k", b, seq.residual[b]));
    }
  }
  if (!klProfileIs950()) GRADKIT_RETURN_IF_ERROR(checkA2Lengths(d, seq));
  return ACLNN_SUCCESS;
}

}  // namespace gradkit::ops
