// gradkit's rules of aclnnSparseFlashMlaSoftmaxL1Norm after upstream's (which leaves them to the caller or never
// reaches them): at least one batch, a k with rows (upstream: "not supported"), the per-token shapes of the index list
// and its lengths, the metadata's 64 words, the output's shape (upstream's infershape); then the INT32 values
// (prefix sums from 0, non-decreasing, within the rows; used lengths within their batch; residuals in [0, cmpRatio);
// top-k lengths >= 0; a TND dense output wide enough for every batch's keys), formats and the memory rules.
#include <algorithm>
#include <string>
#include <vector>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "opapi/tensor_copy.h"
#include "opapi/tensor_rules.h"
#include "ops/sparse_attention/smla_l1_check.h"
#include "ops/sparse_attention/smla_metadata_args.h"
#include "ops/sparse_attention/smla_metadata_rules.h"
#include "ops/sparse_attention/smla_sizes.h"

namespace gradkit::ops {
namespace {

constexpr const char* kApi = kSmlaL1Api;

aclnnStatus invalid(const char* name, const std::string& expected, const std::string& given) {
  return fail(ACLNN_ERR_PARAM_INVALID, kApi, name, expected, given);
}

std::string shapeOf(const aclTensor& t) { return "shape " + t.shapeString(); }

aclnnStatus checkShapes(const SmlaL1Args& a, const SmlaShape& s) {
  const bool tnd = s.layoutQ == SmlaLayout::Tnd;
  if (s.batch < 1) {
    return invalid("cuSeqlensQOptional", "B + 1 >= 2 prefix sums (at least one batch)", shapeOf(*a.cuSeqlensQ));
  }
  if (a.k->isEmpty()) return invalid("k", "no dim of 0 (an empty k is not supported)", shapeOf(*a.k));
  const std::vector<int64_t> lead = tnd ? std::vector<int64_t>{s.tokens, 1} : std::vector<int64_t>{s.batch, s.s1, 1};
  if (a.sparseIndices != nullptr) {
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "sparseIndicesOptional", *a.sparseIndices,
                                         shapeWithTail(lead, {a.sparseIndices->viewDims.back()}),
                                         "q's tokens, N2 = 1, K"));
  }
  if (a.topkLength != nullptr) {
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(kApi, "topkLengthOptional", *a.topkLength, lead, "q's tokens, N2 = 1"));
  }
  if (a.metadata->numel() != kSmlaL1NormMetadataWords) {
    return invalid("metadataOptional", "64 elements (aclnnSparseFlashMlaSoftmaxL1NormMetadata's output)",
                   shapeOf(*a.metadata));
  }
  const char* widthWhy = a.sparseIndices != nullptr ? "K, sparseIndicesOptional's last dim"
                         : tnd                      ? "maxSeqlenK"
                                                    : "S2, k's dim 1";
  if (tnd && a.sparseIndices == nullptr && a.maxSeqlenK < 0) {
    return invalid("maxSeqlenK", ">= 0 (the output's columns, layout TND without sparseIndicesOptional)",
                   std::to_string(a.maxSeqlenK));
  }
  return checkShapeIs(kApi, "softmaxL1Norm", *a.softmaxL1Norm, shapeWithTail(lead, {smlaL1Width(a)}),
                      std::string("q's tokens, N2 = 1, ") + widthWhy);
}

/** Prefix sums: the family's rule (0 first, non-decreasing), then the last at most `rows`. */
aclnnStatus checkPrefixSums(const char* name, const std::vector<int64_t>& cu, int64_t rows, const char* rowsWhat) {
  if (cu.empty()) return ACLNN_SUCCESS;
  GRADKIT_RETURN_IF_ERROR(checkSmlaCuSeqlensValues(kApi, name, cu));
  if (cu.back() <= rows) return ACLNN_SUCCESS;
  return invalid(name, "a last value <= " + std::to_string(rows) + " (" + rowsWhat + ")", std::to_string(cu.back()));
}

aclnnStatus checkValues(const SmlaL1Args& a, const SmlaShape& s) {
  const SmlaArgs problem = smlaL1ProblemArgs(a);
  const SmlaLengths l = smlaLengthsOf(problem);
  const bool tnd = s.layoutQ == SmlaLayout::Tnd;
  GRADKIT_RETURN_IF_ERROR(checkPrefixSums("cuSeqlensQOptional", l.cuQ, s.tokens, "q's T1"));
  GRADKIT_RETURN_IF_ERROR(checkPrefixSums("cuSeqlensKOptional", l.cuCmp, a.k->viewDims[0], "k's T2"));
  GRADKIT_RETURN_IF_ERROR(
      checkSmlaSequsedValues(kApi, "sequsedQOptional", l.seqQ, tnd ? -1 : s.s1, "q's S1 (dim 1)", l.cuQ));
  GRADKIT_RETURN_IF_ERROR(checkSmlaSequsedValues(kApi, "sequsedKOptional", l.seqCmp, tnd ? -1 : a.k->viewDims[1],
                                                 "k's S2 (dim 1)", l.cuCmp));
  GRADKIT_RETURN_IF_ERROR(checkSmlaResidualValues(kApi, "cmpResidualKOptional", l.residual, a.cmpRatio));
  if (a.topkLength != nullptr) {
    GRADKIT_RETURN_IF_ERROR(checkSmlaTopkLengthValues(kApi, {"topkLengthOptional", a.topkLength}, 0, ""));
  }
  if (!tnd || a.sparseIndices != nullptr) return ACLNN_SUCCESS;
  const std::vector<kernels::SmlaBatch> batches = smlaBatchesOf(problem, s, l);
  for (size_t b = 0; b < batches.size(); ++b) {
    if (batches[b].c > a.maxSeqlenK) {
      return invalid("maxSeqlenK",
                     "at least every batch's key rows (the output's columns, layout TND without "
                     "sparseIndicesOptional): batch " +
                         std::to_string(b) + " has " + std::to_string(batches[b].c),
                     std::to_string(a.maxSeqlenK));
    }
  }
  return ACLNN_SUCCESS;
}

}  // namespace

aclnnStatus checkSmlaL1Additions(const SmlaL1Args& a) {
  const SmlaShape shape = smlaShapeOf(smlaL1ProblemArgs(a));
  GRADKIT_RETURN_IF_ERROR(checkShapes(a, shape));
  const std::vector<NamedTensor> inputs{{"q", a.q},
                                        {"k", a.k},
                                        {"softmaxLse", a.softmaxLse},
                                        {"sparseIndicesOptional", a.sparseIndices},
                                        {"cuSeqlensQOptional", a.cuSeqlensQ},
                                        {"cuSeqlensKOptional", a.cuSeqlensK},
                                        {"sequsedQOptional", a.sequsedQ},
                                        {"sequsedKOptional", a.sequsedK},
                                        {"cmpResidualKOptional", a.cmpResidualK},
                                        {"topkLengthOptional", a.topkLength},
                                        {"metadataOptional", a.metadata}};
  const std::vector<NamedTensor> outputs{{"softmaxL1Norm", a.softmaxL1Norm}};
  GRADKIT_RETURN_IF_ERROR(checkEachHasData(kApi, inputs));
  GRADKIT_RETURN_IF_ERROR(checkEachHasData(kApi, outputs));
  GRADKIT_RETURN_IF_ERROR(checkValues(a, shape));
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormats(kApi, inputs));
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormats(kApi, outputs));
  return checkMemoryRules(kApi, inputs, outputs);
}

}  // namespace gradkit::ops
