// aclnnMhcSinkhorn[Backward]: the profile (both exist only on Ascend950), then upstream's order: whether the forward
// saves its steps (normOut and sumOut both given or both absent), null pointers (161001), FLOAT32 dtypes, the shapes
// (output as x, numIters 1..100, rank 3 or 4, square n x n with n in {4, 6, 8}, the saved tensors' element counts),
// formats, then the empty-tensor rule and gradkit's memory rules. Every other failure is 161002, each with
// "<api>: argument '<name>': expected ..., given ...".
#include "ops/mhc/mhc_sinkhorn_check.h"

#include <string>
#include <vector>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "opapi/tensor_rules.h"
#include "ops/mhc/kernels/mhc_sinkhorn_kernel.h"
#include "ops/mhc/mhc_check_common.h"
#include "runtime/runtime.h"

namespace gradkit::ops {
namespace {

constexpr int64_t kMinIters = 1, kMaxIters = 100;

aclnnStatus checkAvailable(const char* api) {
  const rt::Soc soc = rt::currentSoc();
  if (soc == rt::Soc::Ascend950) return ACLNN_SUCCESS;
  return failText(ACLNN_ERR_PARAM_INVALID, api,
                  std::string("the operator is unavailable in the ") + rt::socName(soc) +
                      " profile: it exists only on Ascend950 (GRADKIT_SOC)");
}

bool absentOrSingle(const aclTensor* t) { return t == nullptr || t->numel() == 1; }

std::string elementsText(const aclTensor* t) {
  return t == nullptr ? std::string("nullptr") : std::to_string(t->numel()) + " elements " + t->shapeString();
}

/** Rank 3 or 4 and a square n x n matrix per token, n in {4, 6, 8}. */
aclnnStatus checkMatrices(const char* api, const char* name, const aclTensor& t) {
  GRADKIT_RETURN_IF_ERROR(checkRankIn(api, name, t, {3, 4}, "[T, n, n] or [B, S, n, n]"));
  const int64_t rank = t.dim();
  const int64_t n0 = t.viewDims[rank - 2], n1 = t.viewDims[rank - 1];
  if (n0 != n1 || (n0 != 4 && n0 != 6 && n0 != 8)) {
    return fail(ACLNN_ERR_PARAM_INVALID, api, name, "square n x n matrices with n in {4, 6, 8} (the last two dims)",
                "shape " + t.shapeString());
  }
  return ACLNN_SUCCESS;
}

/** 2 iters T n 8 (normOut) or 2 iters T 8 (sumOut) elements, or -1 beyond int64. */
int64_t savedElements(int64_t iters, int64_t tokens, int64_t rows) {
  int64_t total = 2 * iters * rows * kernels::kSinkhornColumns;
  if (__builtin_mul_overflow(total, tokens, &total)) return -1;
  return total;
}

aclnnStatus checkElements(const char* api, const char* name, const aclTensor& t, int64_t expected,
                          const std::string& formula) {
  if (t.numel() == expected) return ACLNN_SUCCESS;
  return fail(ACLNN_ERR_PARAM_INVALID, api, name, std::to_string(expected) + " elements (" + formula + ")",
              elementsText(&t));
}

}  // namespace

bool mhcSinkhornSaves(const MhcSinkhornArgs& args) {
  return !absentOrSingle(args.normOut) || !absentOrSingle(args.sumOut);
}

MhcSinkhornDims mhcSinkhornDimsOf(const MhcSinkhornArgs& args) {
  return {mhcTokensOf(*args.x), args.x->viewDims.back(), args.numIters};
}

MhcSinkhornDims mhcSinkhornBackwardDimsOf(const MhcSinkhornBackwardArgs& args) {
  MhcSinkhornDims dims{mhcTokensOf(*args.gradOutput), args.gradOutput->viewDims.back(), 0};
  if (dims.tokens > 0) dims.iters = args.normOut->numel() / (2 * dims.tokens * dims.n * kernels::kSinkhornColumns);
  return dims;
}

aclnnStatus checkMhcSinkhorn(const MhcSinkhornArgs& a, const uint64_t* workspaceSize, aclOpExecutor* const* executor) {
  const char* api = kMhcSinkhornApi;
  GRADKIT_RETURN_IF_ERROR(checkAvailable(api));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "executor", executor));
  const bool saves = mhcSinkhornSaves(a);
  if (saves && (absentOrSingle(a.normOut) || absentOrSingle(a.sumOut))) {
    const bool normGiven = !absentOrSingle(a.normOut);
    return fail(ACLNN_ERR_PARAM_INVALID, api, normGiven ? "sumOut" : "normOut",
                std::string("a tensor of saved steps like ") + (normGiven ? "normOut" : "sumOut") +
                    " (both given, or both nullptr / one element: no saved steps)",
                elementsText(normGiven ? a.sumOut : a.normOut));
  }
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "x", a.x));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "output", a.output));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "x", *a.x, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "output", *a.output, {ACL_FLOAT}));
  if (saves) {
    GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "normOut", *a.normOut, {ACL_FLOAT}));
    GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "sumOut", *a.sumOut, {ACL_FLOAT}));
  }
  GRADKIT_RETURN_IF_ERROR(checkSameShape(api, "output", *a.output, "x", *a.x));
  if (a.numIters < kMinIters || a.numIters > kMaxIters) {
    return fail(ACLNN_ERR_PARAM_INVALID, api, "numIters", "1 .. 100", std::to_string(a.numIters));
  }
  GRADKIT_RETURN_IF_ERROR(checkMatrices(api, "x", *a.x));
  if (saves) {
    const int64_t tokens = mhcTokensOf(*a.x), n = a.x->viewDims.back();
    const std::string counts = "numIters " + std::to_string(a.numIters) + ", T " + std::to_string(tokens);
    GRADKIT_RETURN_IF_ERROR(checkElements(api, "normOut", *a.normOut, savedElements(a.numIters, tokens, n),
                                          "2 numIters T n 8 with " + counts + ", n " + std::to_string(n)));
    GRADKIT_RETURN_IF_ERROR(
        checkElements(api, "sumOut", *a.sumOut, savedElements(a.numIters, tokens, 1), "2 numIters T 8 with " + counts));
  }
  const aclTensor* normOut = saves ? a.normOut : nullptr;
  const aclTensor* sumOut = saves ? a.sumOut : nullptr;
  GRADKIT_RETURN_IF_ERROR(
      checkNotPrivateFormats(api, {{"x", a.x}, {"output", a.output}, {"normOut", normOut}, {"sumOut", sumOut}}));
  GRADKIT_RETURN_IF_ERROR(checkNotEmpty(api, "x", *a.x));
  return checkMemoryRules(api, {{"x", a.x}}, {{"output", a.output, "x"}, {"normOut", normOut}, {"sumOut", sumOut}});
}

aclnnStatus checkMhcSinkhornBackward(const MhcSinkhornBackwardArgs& a, const uint64_t* workspaceSize,
                                     aclOpExecutor* const* executor) {
  const char* api = kMhcSinkhornBackwardApi;
  GRADKIT_RETURN_IF_ERROR(checkAvailable(api));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "executor", executor));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "gradOutput", a.gradOutput));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "normOut", a.normOut));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "sumOut", a.sumOut));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "out", a.out));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "gradOutput", *a.gradOutput, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "normOut", *a.normOut, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "sumOut", *a.sumOut, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "out", *a.out, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkMatrices(api, "gradOutput", *a.gradOutput));
  GRADKIT_RETURN_IF_ERROR(checkSameShape(api, "out", *a.out, "gradOutput", *a.gradOutput));
  const int64_t tokens = mhcTokensOf(*a.gradOutput), n = a.gradOutput->viewDims.back();
  if (tokens == 0) {  // upstream: an empty call succeeds with no work, its saved tensors empty too
    GRADKIT_RETURN_IF_ERROR(checkElements(api, "normOut", *a.normOut, 0, "an empty gradOutput"));
    GRADKIT_RETURN_IF_ERROR(checkElements(api, "sumOut", *a.sumOut, 0, "an empty gradOutput"));
  } else {
    const int64_t perIter = savedElements(1, tokens, n);
    const int64_t iters = perIter > 0 ? a.normOut->numel() / perIter : 0;
    if (perIter <= 0 || a.normOut->numel() % perIter != 0 || iters < kMinIters || iters > kMaxIters) {
      return fail(ACLNN_ERR_PARAM_INVALID, api, "normOut",
                  "2 numIters T n 8 elements with numIters in 1 .. 100 (T " + std::to_string(tokens) + ", n " +
                      std::to_string(n) + ": a multiple of " + std::to_string(perIter) + ")",
                  elementsText(a.normOut));
    }
    GRADKIT_RETURN_IF_ERROR(checkElements(
        api, "sumOut", *a.sumOut, savedElements(iters, tokens, 1),
        "2 numIters T 8 with numIters " + std::to_string(iters) + " (from normOut), T " + std::to_string(tokens)));
  }
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormats(
      api, {{"gradOutput", a.gradOutput}, {"normOut", a.normOut}, {"sumOut", a.sumOut}, {"out", a.out}}));
  return checkMemoryRules(api, {{"gradOutput", a.gradOutput}, {"normOut", a.normOut}, {"sumOut", a.sumOut}},
                          {{"out", a.out, "gradOutput"}});
}

}  // namespace gradkit::ops
