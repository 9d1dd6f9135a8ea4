// aclnnMhcPreSinkhorn[Backward]: upstream's op-api order (null pointers 161001; dtypes, ranks and shapes, formats
// 161002; the empty-tensor shortcut), then the rules upstream's tilings enforce (561002 where the tiling rejects,
// 161002 where only the documentation states them), then gradkit's memory rules. Every message names the argument,
// the expected and the given value.
//   forward:  x [lead, n, c]; hin [lead, c]; hPost, hPre [lead, n]; hRes [lead, n*n]; hcBeforeNorm [lead, F];
//             invRms [lead, 1]; sumOut [2 iters, lead, n]; normOut [2 iters, lead, n, n]; phi [F, n*c]; alpha [3];
//             bias [F]; F = n*n + 2n; lead = [B, S] (rank 4) or [T] (rank 3, Ascend950 only); n = hcMult = 4;
//             numIters = 20; c in {4096, 7168} (Ascend950 tiling) or a multiple of 128 up to 100000 (A2/A3 docs).
//   backward: the forward's tensors plus gradHin [lead, c], gradHPost [lead, n], gradHRes [lead, n, n] or
//             [lead, n*n]; outputs gradX as x, gradPhi as phi, gradAlpha [3], gradBias [F]; n in 1..8 (Ascend950)
//             or 4; c a multiple of 128 below 100000; the tiling's F, sumOut / normOut steps and 20 iterations.
#include "ops/mhc/mhc_pre_sinkhorn_check.h"

#include <algorithm>
#include <string>
#include <vector>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "opapi/tensor_rules.h"
#include "ops/mhc/mhc_check_common.h"
#include "runtime/runtime.h"

namespace gradkit::ops {
namespace {

constexpr int64_t kHcMult = 4;       // upstream supports n = 4 only in the forward
constexpr int64_t kNumIters = 20;    // and 20 Sinkhorn iterations in both directions
constexpr int64_t kMaxStreams = 8;   // the Ascend950 backward's limit on n
constexpr int64_t kAlignment = 128;  // c's alignment and bound (A2/A3 forward docs, every backward)
constexpr int64_t kMaxHidden = 100000;

bool onAscend950() { return rt::currentSoc() == rt::Soc::Ascend950; }

std::string profileText() { return std::string("the ") + rt::socName(rt::currentSoc()) + " profile (GRADKIT_SOC)"; }

/** Rank 3 (TND, Ascend950 only) or 4 (BSND) of x. */
aclnnStatus checkXRank(const char* api, const aclTensor& x) {
  if (x.dim() == 3 && !onAscend950()) {
    return fail(ACLNN_ERR_PARAM_INVALID, api, "x",
                "rank 4 [B, S, n, c]: TND (rank 3) exists only in the Ascend950 profile, this is " + profileText(),
                "shape " + x.shapeString());
  }
  if (onAscend950()) return checkRankIn(api, "x", x, {3, 4}, "[T, n, c] or [B, S, n, c]");
  return checkRankIn(api, "x", x, {4}, "[B, S, n, c]: TND exists only in the Ascend950 profile");
}

/** [B, S] or [T]: x's dims before n and c. */
std::vector<int64_t> leadOf(const aclTensor& x) { return {x.viewDims.begin(), x.viewDims.end() - 2}; }

std::vector<int64_t> steps(int64_t iters, const std::vector<int64_t>& lead, const std::vector<int64_t>& tail) {
  std::vector<int64_t> shape{2 * iters};
  for (int64_t dim : shapeWithTail(lead, tail)) shape.push_back(dim);
  return shape;
}

/** [steps, lead.., tail..] with any step count (the tiling's rule: 2 numIters = 40, checked later). */
aclnnStatus checkSteps(const char* api, const char* name, const aclTensor& t, const std::vector<int64_t>& lead,
                       const std::vector<int64_t>& tail, const std::string& expected) {
  const std::vector<int64_t> rest = shapeWithTail(lead, tail);
  const bool matches =
      t.dim() == static_cast<int64_t>(rest.size()) + 1 && std::equal(rest.begin(), rest.end(), t.viewDims.begin() + 1);
  if (matches) return ACLNN_SUCCESS;
  return fail(ACLNN_ERR_PARAM_INVALID, api, name, expected + " from x", "shape " + t.shapeString());
}

/** The forward's saved tensors (checked and written only with needBackward). */
std::vector<NamedTensor> savedOf(const MhcPreSinkhornArgs& a) {
  return {{"hPre", a.hPre},
          {"hcBeforeNorm", a.hcBeforeNorm},
          {"invRms", a.invRms},
          {"sumOut", a.sumOut},
          {"normOut", a.normOut}};
}

/** The forward's c rule of the profile: the Ascend950 tiling's two widths (561002), A2/A3's documented range. */
aclnnStatus checkForwardHidden(const char* api, int64_t c) {
  if (onAscend950()) {
    if (c == 4096 || c == 7168) return ACLNN_SUCCESS;
    return fail(ACLNN_ERR_INNER_TILING_ERROR, api, "x",
                "last dim c in {4096, 7168} (the Ascend950 kernel's widths; " + profileText() + ")", std::to_string(c));
  }
  if (c % kAlignment == 0 && c <= kMaxHidden) return ACLNN_SUCCESS;
  return fail(ACLNN_ERR_PARAM_INVALID, api, "x", "last dim c a multiple of 128 up to 100000 (" + profileText() + ")",
              std::to_string(c));
}

}  // namespace

bool mhcPreSinkhornIsEmpty(const MhcPreSinkhornArgs& a) {
  return a.x->isEmpty() || a.hin->isEmpty() || a.hPost->isEmpty() || a.hRes->isEmpty();
}

MhcPreSinkhornDims mhcPreSinkhornDimsOf(const MhcPreSinkhornArgs& a) { return {mhcDimsOf(*a.x, *a.phi), a.numIters}; }

bool mhcPreSinkhornBackwardIsEmpty(const MhcPreSinkhornBackwardArgs& a) {
  for (const aclTensor* t :
       {a.gradHin, a.gradHPost, a.gradHRes, a.x, a.hPre, a.hcBeforeNorm, a.invRms, a.sumOut, a.normOut}) {
    if (t->isEmpty()) return true;
  }
  return false;
}

MhcPreSinkhornDims mhcPreSinkhornBackwardDimsOf(const MhcPreSinkhornBackwardArgs& a) {
  return {mhcDimsOf(*a.x, *a.phi), a.sumOut->viewDims[0] / 2};
}

aclnnStatus checkMhcPreSinkhorn(const MhcPreSinkhornArgs& a, const uint64_t* workspaceSize,
                                aclOpExecutor* const* executor) {
  const char* api = kMhcPreSinkhornApi;
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "executor", executor));
  GRADKIT_RETURN_IF_ERROR(checkEachNotNull(api, {{"x", a.x},
                                                 {"phi", a.phi},
                                                 {"alpha", a.alpha},
                                                 {"bias", a.bias},
                                                 {"hin", a.hin},
                                                 {"hPost", a.hPost},
                                                 {"hRes", a.hRes}}));
  const std::vector<NamedTensor> saved = a.needBackward ? savedOf(a) : std::vector<NamedTensor>{};
  GRADKIT_RETURN_IF_ERROR(checkEachNotNull(api, saved));

  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "x", *a.x, {ACL_BF16, ACL_FLOAT16}));
  GRADKIT_RETURN_IF_ERROR(checkEachDtypeIn(api, {{"phi", a.phi}, {"alpha", a.alpha}, {"bias", a.bias}}, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "hin", *a.hin, {ACL_BF16, ACL_FLOAT16}));
  GRADKIT_RETURN_IF_ERROR(checkSameDtype(api, "hin", *a.hin, "x", *a.x));  // gradkit: the kernel writes x's dtype
  GRADKIT_RETURN_IF_ERROR(checkEachDtypeIn(api, {{"hPost", a.hPost}, {"hRes", a.hRes}}, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkEachDtypeIn(api, saved, {ACL_FLOAT}));

  GRADKIT_RETURN_IF_ERROR(checkXRank(api, *a.x));
  const std::vector<int64_t> lead = leadOf(*a.x);
  const int64_t n = a.x->viewDims[a.x->dim() - 2], c = a.x->viewDims.back(), fusion = n * n + 2 * n;
  if (a.hcMult != kHcMult) return fail(ACLNN_ERR_PARAM_INVALID, api, "hcMult", "4", std::to_string(a.hcMult));
  if (n != a.hcMult) {
    return fail(ACLNN_ERR_PARAM_INVALID, api, "x", "dim n (-2) equal to hcMult (4)", "shape " + a.x->shapeString());
  }
  if (a.numIters != kNumIters) return fail(ACLNN_ERR_PARAM_INVALID, api, "numIters", "20", std::to_string(a.numIters));
  const char* leadName = mhcLeadNames(lead);
  const std::string perToken = std::string("[") + leadName + ", ";
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "hin", *a.hin, shapeWithTail(lead, {c}), perToken + "c] from x"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "phi", *a.phi, {fusion, n * c}, "[n*n + 2n, n*c] from x"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "alpha", *a.alpha, {3}, "[3]"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "bias", *a.bias, {fusion}, "[n*n + 2n] from x"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "hPost", *a.hPost, shapeWithTail(lead, {n}), perToken + "n] from x"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "hRes", *a.hRes, shapeWithTail(lead, {n * n}), perToken + "n*n] from x"));
  if (a.needBackward) {
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "hPre", *a.hPre, shapeWithTail(lead, {n}), perToken + "n] from x"));
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "hcBeforeNorm", *a.hcBeforeNorm, shapeWithTail(lead, {fusion}),
                                         perToken + "n*n + 2n] from x"));
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "invRms", *a.invRms, shapeWithTail(lead, {1}), perToken + "1] from x"));
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "sumOut", *a.sumOut, steps(a.numIters, lead, {n}),
                                         std::string("[2 numIters, ") + leadName + ", n] from x"));
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "normOut", *a.normOut, steps(a.numIters, lead, {n, n}),
                                         std::string("[2 numIters, ") + leadName + ", n, n] from x"));
  }
  std::vector<NamedTensor> outputs{{"hin", a.hin}, {"hPost", a.hPost}, {"hRes", a.hRes}};
  outputs.insert(outputs.end(), saved.begin(), saved.end());
  const std::vector<NamedTensor> inputs{{"x", a.x}, {"phi", a.phi}, {"alpha", a.alpha}, {"bias", a.bias}};
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormats(api, inputs));
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormats(api, outputs));
  if (mhcPreSinkhornIsEmpty(a)) return ACLNN_SUCCESS;  // upstream: success without work
  GRADKIT_RETURN_IF_ERROR(checkForwardHidden(api, c));
  return checkMemoryRules(api, inputs, outputs);
}

aclnnStatus checkMhcPreSinkhornBackward(const MhcPreSinkhornBackwardArgs& a, const uint64_t* workspaceSize,
                                        aclOpExecutor* const* executor) {
  const char* api = kMhcPreSinkhornBackwardApi;
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "executor", executor));
  const std::vector<NamedTensor> inputs{{"gradHin", a.gradHin},
                                        {"gradHPost", a.gradHPost},
                                        {"gradHRes", a.gradHRes},
                                        {"x", a.x},
                                        {"phi", a.phi},
                                        {"alpha", a.alpha},
                                        {"bias", a.bias},
                                        {"hPre", a.hPre},
                                        {"hcBeforeNorm", a.hcBeforeNorm},
                                        {"invRms", a.invRms},
                                        {"sumOut", a.sumOut},
                                        {"normOut", a.normOut}};
  const std::vector<NamedTensor> outputs{
      {"gradX", a.gradX}, {"gradPhi", a.gradPhi}, {"gradAlpha", a.gradAlpha}, {"gradBias", a.gradBias}};
  GRADKIT_RETURN_IF_ERROR(checkEachNotNull(api, inputs));
  GRADKIT_RETURN_IF_ERROR(checkEachNotNull(api, outputs));
  if (mhcPreSinkhornBackwardIsEmpty(a)) return ACLNN_SUCCESS;  // upstream: success before any other rule

  GRADKIT_RETURN_IF_ERROR(checkXRank(api, *a.x));
  const std::vector<int64_t> lead = leadOf(*a.x);
  const int64_t n = a.x->viewDims[a.x->dim() - 2], c = a.x->viewDims.back(), fusion = n * n + 2 * n;
  const char* leadName = mhcLeadNames(lead);
  const std::string perToken = std::string("[") + leadName + ", ";
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "gradHin", *a.gradHin, shapeWithTail(lead, {c}), perToken + "c] from x"));
  GRADKIT_RETURN_IF_ERROR(
      checkShapeIs(api, "gradHPost", *a.gradHPost, shapeWithTail(lead, {n}), perToken + "n] from x"));
  if (a.gradHRes->dim() != static_cast<int64_t>(lead.size()) + 1) {
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "gradHRes", *a.gradHRes, shapeWithTail(lead, {n, n}),
                                         perToken + "n, n] or " + perToken + "n*n] from x"));
  } else {
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "gradHRes", *a.gradHRes, shapeWithTail(lead, {n * n}),
                                         perToken + "n*n] or " + perToken + "n, n] from x"));
  }
  GRADKIT_RETURN_IF_ERROR(checkRankIn(api, "phi", *a.phi, {2}, "[n*n + 2n, n*c]"));
  if (a.phi->viewDims[1] != n * c) {
    return fail(ACLNN_ERR_PARAM_INVALID, api, "phi", "second dim n*c = " + std::to_string(n * c) + " from x",
                "shape " + a.phi->shapeString());
  }
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "alpha", *a.alpha, {3}, "[3]"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "bias", *a.bias, {fusion}, "[n*n + 2n] from x"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "hPre", *a.hPre, shapeWithTail(lead, {n}), perToken + "n] from x"));
  GRADKIT_RETURN_IF_ERROR(
      checkShapeIs(api, "hcBeforeNorm", *a.hcBeforeNorm, shapeWithTail(lead, {fusion}), perToken + "n*n + 2n] from x"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "invRms", *a.invRms, shapeWithTail(lead, {1}), perToken + "1] from x"));
  GRADKIT_RETURN_IF_ERROR(
      checkSteps(api, "sumOut", *a.sumOut, lead, {n}, std::string("[2 numIters, ") + leadName + ", n]"));
  GRADKIT_RETURN_IF_ERROR(
      checkSteps(api, "normOut", *a.normOut, lead, {n, n}, std::string("[2 numIters, ") + leadName + ", n, n]"));
  const int64_t stepCount = a.sumOut->viewDims[0];
  GRADKIT_RETURN_IF_ERROR(checkSameShape(api, "gradX", *a.gradX, "x", *a.x));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "gradPhi", *a.gradPhi, {fusion, n * c}, "[n*n + 2n, n*c] from x"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "gradAlpha", *a.gradAlpha, {3}, "[3]"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "gradBias", *a.gradBias, {fusion}, "[n*n + 2n] from x"));

  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "gradHin", *a.gradHin, {ACL_BF16, ACL_FLOAT16}));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "x", *a.x, {ACL_BF16, ACL_FLOAT16}));
  GRADKIT_RETURN_IF_ERROR(checkSameDtype(api, "x", *a.x, "gradHin", *a.gradHin));  // gradkit: one dtype per call
  GRADKIT_RETURN_IF_ERROR(checkEachDtypeIn(api, {inputs.begin() + 4, inputs.end()}, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkEachDtypeIn(api, {{"gradHPost", a.gradHPost}, {"gradHRes", a.gradHRes}}, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkSameDtype(api, "gradX", *a.gradX, "gradHin", *a.gradHin));
  GRADKIT_RETURN_IF_ERROR(checkEachDtypeIn(api, {outputs.begin() + 1, outputs.end()}, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormats(api, inputs));
  GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormats(api, outputs));

  if (onAscend950() ? n < 1 || n > kMaxStreams : n != kHcMult) {
    return fail(ACLNN_ERR_PARAM_INVALID, api, "x",
                std::string("dim n (-2) ") + (onAscend950() ? "in 1 .. 8" : "equal to 4") + " (" + profileText() + ")",
                std::to_string(n));
  }
  if (c <= 0 || c >= kMaxHidden || c % kAlignment != 0) {
    return fail(ACLNN_ERR_PARAM_INVALID, api, "x", "last dim c a multiple of 128 below 100000", std::to_string(c));
  }
  // The tiling's rules (561002).
  if (a.phi->viewDims[0] != fusion) {
    return fail(ACLNN_ERR_INNER_TILING_ERROR, api, "phi", "first dim n*n + 2n = " + std::to_string(fusion),
                "shape " + a.phi->shapeString());
  }
  if (stepCount != 2 * kNumIters || a.normOut->viewDims[0] != stepCount) {
    const bool sumWrong = stepCount != 2 * kNumIters;
    return fail(ACLNN_ERR_INNER_TILING_ERROR, api, sumWrong ? "sumOut" : "normOut",
                "first dim 2 numIters = 40 (numIters 20)", "shape " + (sumWrong ? a.sumOut : a.normOut)->shapeString());
  }
  return checkMemoryRules(api, inputs, outputs);
}

}  // namespace gradkit::ops
