// aclnnBlockAttentionResiduals[Grad]: upstream's order of rules, each failure "<api>: argument '<name>': expected ...,
// given ...".
//   forward:  workspaceSize, executor (161001, gradkit's: upstream does not look at them); the null tensors
//             partialBlock, blockRes, projWeight, normWeight, hiddenStates, and invNorm, probs with needBackward
//             (161002: upstream's op-api answers them with ACLNN_ERR_PARAM_INVALID although its documentation says
//             161001; gradkit follows the code); dtypes (each of the five in {FLOAT16, BFLOAT16, FLOAT}, then the
//             four others equal to partialBlock's; with needBackward invNorm and probs FLOAT); ranks; validBlockNum
//             -1 or N; H >= 1 and 1 <= N <= 100; the shapes; normEps > 0. All 161002.
//   gradient: the 11 tensors, workspaceSize, executor (161001); dtypes; ranks; validBlockNum -1, 0 or N; 0 <= N <= 128;
//             the input shapes, then each output the shape of its input. All 161002.
// Then, gradkit's own: private formats, then the memory rules (opapi/tensor_rules.h). Empty calls pass the checks: the
// forward's T = 0 computes nothing, the gradient's zero-fills its non-empty outputs (block_residuals_api.cpp).
#include "ops/mhc/block_residuals_check.h"

#include <cstdio>
#include <string>
#include <vector>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "opapi/tensor_rules.h"

namespace gradkit::ops {
namespace {

std::string doubleText(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", value);
  return text;
}

/** The dtype rules both directions share: `main` (partialBlock first) in {FLOAT16, BFLOAT16, FLOAT}, then equal. */
aclnnStatus checkMainDtypes(const char* api, const std::vector<NamedTensor>& main,
                            const std::vector<NamedTensor>& same) {
  GRADKIT_RETURN_IF_ERROR(checkEachDtypeIn(api, main, {ACL_FLOAT16, ACL_BF16, ACL_FLOAT}));
  for (const NamedTensor& t : same) {
    GRADKIT_RETURN_IF_ERROR(checkSameDtype(api, t.name, *t.tensor, main.front().name, *main.front().tensor));
  }
  return ACLNN_SUCCESS;
}

/** validBlockNum: -1 or N, and 0 too where zeroAllowed (the gradient); each means every block. */
aclnnStatus checkValidBlockNum(const char* api, int64_t validBlockNum, int64_t n, bool zeroAllowed) {
  if (validBlockNum == -1 || validBlockNum == n || (zeroAllowed && validBlockNum == 0)) return ACLNN_SUCCESS;
  const std::string expected = zeroAllowed
                                   ? "-1, 0 (upstream's documented default) or N = " + std::to_string(n) +
                                         " (blockRes dim 1), each meaning every block"
                                   : "-1 (default, use N) or equal to N = " + std::to_string(n) + " (blockRes dim 1)";
  return fail(ACLNN_ERR_PARAM_INVALID, api, "validBlockNum", expected, std::to_string(validBlockNum));
}

/** N (blockRes dim 1) in [minBlocks, maxBlocks]. Dims are never negative (aclCreateTensor refuses them): T >= 0. */
aclnnStatus checkBlocks(const char* api, const aclTensor& blockRes, int64_t minBlocks, int64_t maxBlocks) {
  const int64_t n = blockRes.viewDims[1];
  if (n >= minBlocks && n <= maxBlocks) return ACLNN_SUCCESS;
  return fail(ACLNN_ERR_PARAM_INVALID, api, "blockRes",
              "N (dim 1) in [" + std::to_string(minBlocks) + ", " + std::to_string(maxBlocks) + "]",
              "N = " + std::to_string(n) + ", shape " + blockRes.shapeString());
}

/** invNorm and probs: rank 2 each, then [T, N + 1] each. */
aclnnStatus checkSaved(const char* api, const std::vector<NamedTensor>& saved, const BlockResidualsDims& dims) {
  for (const NamedTensor& t : saved) GRADKIT_RETURN_IF_ERROR(checkRankIn(api, t.name, *t.tensor, {2}, "[T, N + 1]"));
  for (const NamedTensor& t : saved) {
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, t.name, *t.tensor, {dims.tokens, dims.blocks + 1},
                                         "[T, N + 1] with T of partialBlock, N of blockRes"));
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkForwardNulls(const BlockResidualsArgs& a) {
  const char* api = kBlockResidualsApi;
  // Upstream's op-api answers these with ACLNN_ERR_PARAM_INVALID (161002), not the 161001 its documentation lists.
  const NamedTensor required[] = {{"partialBlock", a.partialBlock},
                                  {"blockRes", a.blockRes},
                                  {"projWeight", a.projWeight},
                                  {"normWeight", a.normWeight},
                                  {"hiddenStates", a.hiddenStates}};
  for (const NamedTensor& t : required) {
    if (t.tensor == nullptr) return fail(ACLNN_ERR_PARAM_INVALID, api, t.name, "a non-null pointer", "nullptr");
  }
  if (!a.needBackward) return ACLNN_SUCCESS;
  for (const NamedTensor& t : {NamedTensor{"invNorm", a.invNorm}, NamedTensor{"probs", a.probs}}) {
    if (t.tensor == nullptr) {
      return fail(ACLNN_ERR_PARAM_INVALID, api, t.name, "a non-null pointer (needBackward is true)", "nullptr");
    }
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkForwardShapes(const BlockResidualsArgs& a) {
  const char* api = kBlockResidualsApi;
  GRADKIT_RETURN_IF_ERROR(checkRankIn(api, "partialBlock", *a.partialBlock, {2}, "[T, H]"));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(api, "blockRes", *a.blockRes, {3}, "[T, N, H]"));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(api, "projWeight", *a.projWeight, {1, 2}, "[H] or [1, H]"));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(api, "normWeight", *a.normWeight, {1}, "[H]"));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(api, "hiddenStates", *a.hiddenStates, {2}, "[T, H]"));
  const BlockResidualsDims dims = blockResidualsDimsOf(*a.partialBlock, *a.blockRes);
  const int64_t t = dims.tokens, n = dims.blocks, h = dims.hidden;
  GRADKIT_RETURN_IF_ERROR(checkValidBlockNum(api, a.validBlockNum, n, false));
  if (h < 1) {
    return fail(ACLNN_ERR_PARAM_INVALID, api, "partialBlock", "H (dim 1) >= 1",
                "H = " + std::to_string(h) + ", shape " + a.partialBlock->shapeString());
  }
  GRADKIT_RETURN_IF_ERROR(checkBlocks(api, *a.blockRes, 1, kBlockResidualsMaxBlocks));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "blockRes", *a.blockRes, {t, n, h}, "[T, N, H] with T, H of partialBlock"));
  const std::vector<int64_t> proj = a.projWeight->dim() == 1 ? std::vector<int64_t>{h} : std::vector<int64_t>{1, h};
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "projWeight", *a.projWeight, proj, "[H] or [1, H] with H of partialBlock"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "normWeight", *a.normWeight, {h}, "[H] with H of partialBlock"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "hiddenStates", *a.hiddenStates, {t, h}, "[T, H] of partialBlock"));
  if (!a.needBackward) return ACLNN_SUCCESS;
  return checkSaved(api, {{"invNorm", a.invNorm}, {"probs", a.probs}}, dims);
}

}  // namespace

aclnnStatus checkBlockResiduals(const BlockResidualsArgs& a, const uint64_t* workspaceSize,
                                aclOpExecutor* const* executor) {
  const char* api = kBlockResidualsApi;
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "executor", executor));
  GRADKIT_RETURN_IF_ERROR(checkForwardNulls(a));
  const NamedTensor partialBlock{"partialBlock", a.partialBlock}, blockRes{"blockRes", a.blockRes},
      projWeight{"projWeight", a.projWeight}, normWeight{"normWeight", a.normWeight},
      hiddenStates{"hiddenStates", a.hiddenStates};
  const std::vector<NamedTensor> saved = a.needBackward
                                             ? std::vector<NamedTensor>{{"invNorm", a.invNorm}, {"probs", a.probs}}
                                             : std::vector<NamedTensor>{};
  GRADKIT_RETURN_IF_ERROR(checkMainDtypes(api, {partialBlock, blockRes, projWeight, normWeight, hiddenStates},
                                          {blockRes, projWeight, normWeight, hiddenStates}));
  GRADKIT_RETURN_IF_ERROR(checkEachDtypeIn(api, saved, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkForwardShapes(a));
  if (!(a.normEps > 0.0)) return fail(ACLNN_ERR_PARAM_INVALID, api, "normEps", "a value > 0", doubleText(a.normEps));
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormats(api, {partialBlock, blockRes, projWeight, normWeight, hiddenStates}));
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormats(api, saved));
  std::vector<NamedTensor> outputs = saved;
  outputs.insert(outputs.begin(), {hiddenStates.name, hiddenStates.tensor});
  return checkMemoryRules(api, {partialBlock, blockRes, projWeight, normWeight}, outputs);
}

aclnnStatus checkBlockResidualsGrad(const BlockResidualsGradArgs& a, const uint64_t* workspaceSize,
                                    aclOpExecutor* const* executor) {
  const char* api = kBlockResidualsGradApi;
  const std::vector<NamedTensor> inputs = {{"partialBlock", a.partialBlock},
                                           {"blockRes", a.blockRes},
                                           {"projWeight", a.projWeight},
                                           {"normWeight", a.normWeight},
                                           {"gradHiddenStates", a.gradHiddenStates}};
  const std::vector<NamedTensor> saved = {{"invNorm", a.invNorm}, {"probs", a.probs}};
  const std::vector<NamedTensor> outputs = {{"gradPartialBlock", a.gradPartialBlock},
                                            {"gradBlockRes", a.gradBlockRes},
                                            {"gradProjWeight", a.gradProjWeight},
                                            {"gradNormWeight", a.gradNormWeight}};
  for (const auto* list : {&inputs, &saved, &outputs}) GRADKIT_RETURN_IF_ERROR(checkEachNotNull(api, *list));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "executor", executor));
  GRADKIT_RETURN_IF_ERROR(checkMainDtypes(api, inputs, {inputs[1], inputs[2], inputs[3], inputs[4]}));
  GRADKIT_RETURN_IF_ERROR(checkEachDtypeIn(api, saved, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkMainDtypes(api, {inputs[0]}, outputs));
  const int64_t ranks[] = {2, 3, 2, 1, 2};
  const char* rankTexts[] = {"[T, H]", "[T, N, H]", "[1, H]", "[H]", "[T, H]"};
  for (size_t i = 0; i < inputs.size(); ++i) {
    GRADKIT_RETURN_IF_ERROR(checkRankIn(api, inputs[i].name, *inputs[i].tensor, {ranks[i]}, rankTexts[i]));
  }
  for (const NamedTensor& t : saved) GRADKIT_RETURN_IF_ERROR(checkRankIn(api, t.name, *t.tensor, {2}, "[T, N + 1]"));
  for (size_t i = 0; i < outputs.size(); ++i) {
    GRADKIT_RETURN_IF_ERROR(checkRankIn(api, outputs[i].name, *outputs[i].tensor, {ranks[i]},
                                        std::string(rankTexts[i]) + " as " + std::string(inputs[i].name)));
  }
  const BlockResidualsDims dims = blockResidualsDimsOf(*a.partialBlock, *a.blockRes);
  const int64_t t = dims.tokens, n = dims.blocks, h = dims.hidden;
  GRADKIT_RETURN_IF_ERROR(checkValidBlockNum(api, a.validBlockNum, n, true));
  GRADKIT_RETURN_IF_ERROR(checkBlocks(api, *a.blockRes, 0, kBlockResidualsGradMaxBlocks));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "blockRes", *a.blockRes, {t, n, h}, "[T, N, H] with T, H of partialBlock"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "projWeight", *a.projWeight, {1, h}, "[1, H] with H of partialBlock"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "normWeight", *a.normWeight, {h}, "[H] with H of partialBlock"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "gradHiddenStates", *a.gradHiddenStates, {t, h}, "[T, H] of partialBlock"));
  for (const NamedTensor& s : saved) {
    GRADKIT_RETURN_IF_ERROR(
        checkShapeIs(api, s.name, *s.tensor, {t, n + 1}, "[T, N + 1] with T of partialBlock, N of blockRes"));
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    GRADKIT_RETURN_IF_ERROR(
        checkSameShape(api, outputs[i].name, *outputs[i].tensor, inputs[i].name, *inputs[i].tensor));
  }
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormats(api, inputs));
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormats(api, saved));
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormats(api, outputs));
  std::vector<NamedTensor> read = inputs;
  for (const NamedTensor& s : saved) read.push_back({s.name, s.tensor});
  return checkMemoryRules(api, read, outputs);
}

}  // namespace gradkit::ops
