// aclnnMhcPreBackward[V2]: spec mhc.md 3.6 in upstream's order, with the V2 gate first (spec 11.1), the platform
// limits of the emulated SoC and the residual-size consistency upstream leaves to tiling or to nobody
// (DECISIONS.md), and gradkit's memory rules last.
#include "ops/mhc/mhc_pre_backward_check.h"

#include <string>
#include <vector>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "ops/mhc/kernels/mhc_sizes.h"
#include "ops/mhc/mhc_check_common.h"

namespace gradkit::ops {
namespace {

aclnnStatus checkNulls(const MhcPreBackwardArgs& a, const uint64_t* workspaceSize, aclOpExecutor* const* executor) {
  GRADKIT_RETURN_IF_ERROR(checkNotNull(a.api, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(a.api, "executor", executor));
  const NamedTensor required[] = {{"x", a.x},
                                  {"phi", a.phi},
                                  {"alpha", a.alpha},
                                  {"gradHIn", a.gradHIn},
                                  {"gradHPost", a.gradHPost},
                                  {"gradHRes", a.gradHRes},
                                  {"invRms", a.invRms},
                                  {"hMix", a.hMix},
                                  {"hPre", a.hPre},
                                  {"hPost", a.hPost},
                                  {"gradX", a.gradX},
                                  {"gradPhi", a.gradPhi},
                                  {"gradAlpha", a.gradAlpha},
                                  {"gradBias", a.gradBias}};
  for (const NamedTensor& named : required) GRADKIT_RETURN_IF_ERROR(checkNotNull(a.api, named.name, named.tensor));
  if (a.gamma != nullptr && a.gradGamma == nullptr) {
    return fail(ACLNN_ERR_PARAM_NULLPTR, a.api, "gradGamma", "a non-null pointer (gammaOptional is given)", "nullptr");
  }
  return ACLNN_SUCCESS;
}

std::vector<NamedTensor> inputsOf(const MhcPreBackwardArgs& a) {
  return {{"x", a.x},
          {"phi", a.phi},
          {"alpha", a.alpha},
          {"gradHIn", a.gradHIn},
          {"gradHPost", a.gradHPost},
          {"gradHRes", a.gradHRes},
          {"invRms", a.invRms},
          {"hMix", a.hMix},
          {"hPre", a.hPre},
          {"hPost", a.hPost},
          {"gammaOptional", a.gamma},
          {"gradXPostOptional", a.gradXPost}};
}

// gradGamma is ignored (never written) when gamma is null (DECISIONS.md). gradX may be gradXPost itself (in place:
// each element is read once, just before it is written).
std::vector<NamedTensor> outputsOf(const MhcPreBackwardArgs& a) {
  return {{"gradX", a.gradX, "gradXPostOptional"},
          {"gradPhi", a.gradPhi},
          {"gradAlpha", a.gradAlpha},
          {"gradBias", a.gradBias},
          {"gradGamma", a.gamma != nullptr ? a.gradGamma : nullptr}};
}

aclnnStatus checkRanks(const MhcPreBackwardArgs& a) {
  const char* api = a.api;
  GRADKIT_RETURN_IF_ERROR(checkRankIn(api, "x", *a.x, {3, 4}, "TND [T, N, D] or BSND [B, S, N, D]"));
  const int64_t rank = a.x->dim();
  GRADKIT_RETURN_IF_ERROR(checkRankIn(api, "phi", *a.phi, {2}, "[F, N*D]"));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(api, "alpha", *a.alpha, {1}, "[3]"));
  if (a.gamma != nullptr) GRADKIT_RETURN_IF_ERROR(checkRankIn(api, "gammaOptional", *a.gamma, {2}, "[N, D]"));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(api, "gradHIn", *a.gradHIn, {rank - 1}, "rank of x - 1"));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(api, "gradHPost", *a.gradHPost, {rank - 1}, "rank of x - 1"));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(api, "gradHRes", *a.gradHRes, {rank, rank - 1},
                                      "rank of x for [.., N, N], rank of x - 1 for [.., N!]"));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(api, "invRms", *a.invRms, {rank - 2}, "rank of x - 2"));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(api, "hMix", *a.hMix, {rank - 1}, "rank of x - 1"));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(api, "hPre", *a.hPre, {rank - 1}, "rank of x - 1"));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(api, "hPost", *a.hPost, {rank - 1}, "rank of x - 1"));
  if (a.gradXPost != nullptr) {
    GRADKIT_RETURN_IF_ERROR(checkRankIn(api, "gradXPostOptional", *a.gradXPost, {rank}, "rank of x"));
  }
  GRADKIT_RETURN_IF_ERROR(checkRankIn(api, "gradX", *a.gradX, {rank}, "rank of x"));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(api, "gradPhi", *a.gradPhi, {2}, "[F, N*D]"));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(api, "gradAlpha", *a.gradAlpha, {1}, "[3]"));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(api, "gradBias", *a.gradBias, {1}, "[F]"));
  if (a.gamma != nullptr) GRADKIT_RETURN_IF_ERROR(checkRankIn(api, "gradGamma", *a.gradGamma, {2}, "[N, D]"));
  return ACLNN_SUCCESS;
}

// gradHRes is [.., N, N] (rank of x) or [.., N!] (A2/A3 only); returns its residual width in `residual`.
aclnnStatus checkGradHRes(const MhcPreBackwardArgs& a, const std::vector<int64_t>& lead, int64_t n,
                          const MhcProfile& profile, int64_t* residual) {
  const std::string leadNames = mhcLeadNames(lead);
  if (a.gradHRes->dim() == a.x->dim()) {
    *residual = n * n;
    return checkShapeIs(a.api, "gradHRes", *a.gradHRes, shapeWithTail(lead, kernels::mhcResidualTail(n, *residual)),
                        "[" + leadNames + ", N, N]");
  }
  if (!profile.factorialResidual) {
    return fail(ACLNN_ERR_PARAM_INVALID, a.api, "gradHRes",
                "[" + leadNames + ", N, N] (the N! form [" + leadNames +
                    ", N!] exists only in the Ascend910B / Ascend910_93 profiles, this is the " + profile.name +
                    " profile)",
                "shape " + a.gradHRes->shapeString());
  }
  *residual = kernels::mhcFactorial(n);
  return checkShapeIs(a.api, "gradHRes", *a.gradHRes, shapeWithTail(lead, {*residual}), "[" + leadNames + ", N!]");
}

// phi has 2N + R rows, R = N*N (any profile) or N! (A2/A3), and R must be gradHRes's residual width.
aclnnStatus checkPhiRows(const MhcPreBackwardArgs& a, int64_t n, int64_t residual, const MhcProfile& profile) {
  const int64_t rows = a.phi->viewDims[0];
  const int64_t square = kernels::mhcSquareRows(n);
  const int64_t factorial = kernels::mhcFactorialRows(n);
  const std::string given = "shape " + a.phi->shapeString();
  if (rows != square && !(profile.factorialResidual && rows == factorial)) {
    const std::string expected =
        profile.factorialResidual
            ? std::to_string(square) + " or " + std::to_string(factorial) +
                  " rows (2N + N*N or 2N + N! for N = " + std::to_string(n) + ", " + profile.name + " profile)"
            : std::to_string(square) + " rows (2N + N*N for N = " + std::to_string(n) +
                  "; the N! residual exists only in the Ascend910B / Ascend910_93 profiles, this is the " +
                  profile.name + " profile)";
    return fail(ACLNN_ERR_PARAM_INVALID, a.api, "phi", expected, given);
  }
  if (rows == kernels::mhcFusionRows(n, residual)) return ACLNN_SUCCESS;
  return fail(ACLNN_ERR_PARAM_INVALID, a.api, "phi",
              std::to_string(kernels::mhcFusionRows(n, residual)) + " rows (2N + R, R = " + std::to_string(residual) +
                  " the residual width of gradHRes " + a.gradHRes->shapeString() + ")",
              given);
}

aclnnStatus checkShapes(const MhcPreBackwardArgs& a, const MhcProfile& profile) {
  const char* api = a.api;
  // B, S (or T) and D from gradHIn, N from gradHPost (upstream's order); x must agree, then obey the profile.
  const std::vector<int64_t> lead(a.gradHIn->viewDims.begin(), a.gradHIn->viewDims.end() - 1);
  const int64_t d = a.gradHIn->viewDims.back();
  const int64_t n = a.gradHPost->viewDims.back();
  const std::string leadNames = mhcLeadNames(lead);
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "x", *a.x, shapeWithTail(lead, {n, d}),
                                       "[" + leadNames + ", D] of gradHIn with N of gradHPost"));
  GRADKIT_RETURN_IF_ERROR(checkMhcStreamsAndHidden(api, "x", *a.x, profile));
  GRADKIT_RETURN_IF_ERROR(
      checkShapeIs(api, "gradHPost", *a.gradHPost, shapeWithTail(lead, {n}), "[" + leadNames + ", N] of x"));
  int64_t residual = 0;
  GRADKIT_RETURN_IF_ERROR(checkGradHRes(a, lead, n, profile, &residual));
  const int64_t rows = a.phi->viewDims[0];
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "invRms", *a.invRms, lead, "[" + leadNames + "] of x"));
  GRADKIT_RETURN_IF_ERROR(
      checkShapeIs(api, "hMix", *a.hMix, shapeWithTail(lead, {rows}), "[" + leadNames + ", F], F = the rows of phi"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "hPre", *a.hPre, shapeWithTail(lead, {n}), "[" + leadNames + ", N] of x"));
  GRADKIT_RETURN_IF_ERROR(
      checkShapeIs(api, "hPost", *a.hPost, shapeWithTail(lead, {n}), "[" + leadNames + ", N] of x"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "gradX", *a.gradX, a.x->viewDims, "the shape of x"));
  if (a.gradXPost != nullptr) {
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "gradXPostOptional", *a.gradXPost, a.x->viewDims, "the shape of x"));
  }
  GRADKIT_RETURN_IF_ERROR(
      checkShapeIs(api, "alpha", *a.alpha, {3}, "alpha_pre, alpha_post, alpha_res; the backward has no [2] form"));
  GRADKIT_RETURN_IF_ERROR(checkPhiRows(a, n, residual, profile));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "phi", *a.phi, {rows, n * d}, "[F, N*D] with N, D of x"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "gradPhi", *a.gradPhi, {rows, n * d}, "the shape of phi"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "gradAlpha", *a.gradAlpha, {3}, "the shape of alpha"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "gradBias", *a.gradBias, {rows}, "[F], F = the rows of phi"));
  if (a.gamma != nullptr) {
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "gammaOptional", *a.gamma, {n, d}, "[N, D] of x"));
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(api, "gradGamma", *a.gradGamma, {n, d}, "[N, D] of x"));
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkDtypes(const MhcPreBackwardArgs& a) {
  const char* api = a.api;
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "x", *a.x, {ACL_BF16, ACL_FLOAT16}));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "phi", *a.phi, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "alpha", *a.alpha, {ACL_FLOAT}));
  if (a.gamma != nullptr) GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "gammaOptional", *a.gamma, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkSameDtype(api, "gradHIn", *a.gradHIn, "x", *a.x));
  const NamedTensor fp32Inputs[] = {{"gradHPost", a.gradHPost}, {"gradHRes", a.gradHRes}, {"invRms", a.invRms},
                                    {"hMix", a.hMix},           {"hPre", a.hPre},         {"hPost", a.hPost}};
  for (const NamedTensor& named : fp32Inputs) {
    GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, named.name, *named.tensor, {ACL_FLOAT}));
  }
  if (a.gradXPost != nullptr) {
    GRADKIT_RETURN_IF_ERROR(checkSameDtype(api, "gradXPostOptional", *a.gradXPost, "x", *a.x));
  }
  GRADKIT_RETURN_IF_ERROR(checkSameDtype(api, "gradX", *a.gradX, "gradHIn", *a.gradHIn));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "gradPhi", *a.gradPhi, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "gradAlpha", *a.gradAlpha, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "gradBias", *a.gradBias, {ACL_FLOAT}));
  if (a.gamma != nullptr) GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "gradGamma", *a.gradGamma, {ACL_FLOAT}));
  return ACLNN_SUCCESS;
}

}  // namespace

aclnnStatus checkMhcPreBackward(const MhcPreBackwardArgs& args, const uint64_t* workspaceSize,
                                aclOpExecutor* const* executor) {
  GRADKIT_RETURN_IF_ERROR(checkMhcV2Entry(args.api, args.isV2(), args.opImplMode));
  GRADKIT_RETURN_IF_ERROR(checkNulls(args, workspaceSize, executor));
  const std::vector<NamedTensor> inputs = inputsOf(args);
  for (const NamedTensor& named : inputs) {
    if (named.tensor != nullptr) GRADKIT_RETURN_IF_ERROR(checkNotEmpty(args.api, named.name, *named.tensor));
  }
  GRADKIT_RETURN_IF_ERROR(checkRanks(args));
  GRADKIT_RETURN_IF_ERROR(checkShapes(args, currentMhcProfile()));
  GRADKIT_RETURN_IF_ERROR(checkDtypes(args));
  // Upstream checks the inputs' formats only; gradkit computes on ND data, so the outputs are asked too.
  const std::vector<NamedTensor> outputs = outputsOf(args);
  for (const auto* list : {&inputs, &outputs}) {
    for (const NamedTensor& named : *list) {
      if (named.tensor != nullptr) GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormat(args.api, named.name, *named.tensor));
    }
  }
  return checkMemoryRules(args.api, inputs, outputs);
}

}  // namespace gradkit::ops
