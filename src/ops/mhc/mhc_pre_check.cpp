// aclnnMhcPre[V2]: spec mhc.md 2.8 in upstream's order, with the V2 gate first (spec 11.1), the platform limits of
// the emulated SoC (DECISIONS.md) where upstream checks N and D, and gradkit's memory rules last.
#include "ops/mhc/mhc_pre_check.h"

#include <string>
#include <vector>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "ops/mhc/kernels/mhc_sizes.h"
#include "ops/mhc/mhc_check_common.h"

namespace gradkit::ops {
namespace {

// The call's sizes once x's rank is known: leading dims ([B, S] or [T]), N, D.
struct ForwardDims {
  std::vector<int64_t> lead;
  int64_t n;
  int64_t d;
};

ForwardDims forwardDimsOf(const aclTensor& x) {
  const int64_t rank = x.dim();
  return {std::vector<int64_t>(x.viewDims.begin(), x.viewDims.end() - 2), x.viewDims[rank - 2], x.viewDims[rank - 1]};
}

aclnnStatus checkNulls(const MhcPreArgs& a, const uint64_t* workspaceSize, aclOpExecutor* const* executor) {
  GRADKIT_RETURN_IF_ERROR(checkNotNull(a.api, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(a.api, "executor", executor));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(a.api, "x", a.x));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(a.api, "phi", a.phi));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(a.api, "alpha", a.alpha));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(a.api, "bias", a.bias));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(a.api, "hIn", a.hIn));
  return checkNotNull(a.api, "hPost", a.hPost);
}

aclnnStatus checkInputRanks(const MhcPreArgs& a) {
  GRADKIT_RETURN_IF_ERROR(checkNotEmpty(a.api, "x", *a.x));
  GRADKIT_RETURN_IF_ERROR(checkNotEmpty(a.api, "phi", *a.phi));
  GRADKIT_RETURN_IF_ERROR(checkNotEmpty(a.api, "alpha", *a.alpha));
  GRADKIT_RETURN_IF_ERROR(checkNotEmpty(a.api, "bias", *a.bias));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(a.api, "x", *a.x, {3, 4}, "TND [T, N, D] or BSND [B, S, N, D]"));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(a.api, "phi", *a.phi, {2}, "[F, N*D]"));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(a.api, "alpha", *a.alpha, {1}, "[3] or [2]"));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(a.api, "bias", *a.bias, {1}, "[F]"));
  if (a.gamma != nullptr) GRADKIT_RETURN_IF_ERROR(checkRankIn(a.api, "gammaOptional", *a.gamma, {2}, "[N, D]"));
  const int64_t alphaLength = a.alpha->viewDims[0];
  if (alphaLength != 2 && alphaLength != 3) {
    return fail(ACLNN_ERR_PARAM_INVALID, a.api, "alpha",
                "shape [3] (alpha_pre, alpha_post, alpha_res) or [2] (no residual)", "shape " + a.alpha->shapeString());
  }
  if (alphaLength == 3 && a.hRes == nullptr) {
    return fail(ACLNN_ERR_PARAM_NULLPTR, a.api, "hRes", "a non-null pointer (alpha has 3 elements)", "nullptr");
  }
  return ACLNN_SUCCESS;
}

aclnnStatus checkOutputRanks(const MhcPreArgs& a, const MhcProfile& profile) {
  const int64_t rank = a.x->dim();
  GRADKIT_RETURN_IF_ERROR(checkRankIn(a.api, "hIn", *a.hIn, {rank - 1}, "rank of x - 1"));
  GRADKIT_RETURN_IF_ERROR(checkRankIn(a.api, "hPost", *a.hPost, {rank - 1}, "rank of x - 1"));
  if (a.alpha->viewDims[0] == 3) {
    if (profile.factorialResidual) {
      GRADKIT_RETURN_IF_ERROR(checkRankIn(a.api, "hRes", *a.hRes, {rank, rank - 1},
                                          "rank of x for [.., N, N], rank of x - 1 for [.., N!]"));
    } else {
      GRADKIT_RETURN_IF_ERROR(checkRankIn(a.api, "hRes", *a.hRes, {rank},
                                          std::string("rank of x: [.., N, N]; the [.., N!] form exists only in the "
                                                      "Ascend910B / Ascend910_93 profiles, this is the ") +
                                              profile.name + " profile"));
    }
  }
  const int present = (a.invRms != nullptr) + (a.hMix != nullptr) + (a.hPre != nullptr);
  if (present != 0 && present != 3) {
    const auto state = [](const aclTensor* t) { return t == nullptr ? std::string("null") : std::string("given"); };
    return failText(ACLNN_ERR_PARAM_INVALID, a.api,
                    "the caches invRmsOptional, hMixOptional, hPreOptional must be all given or all null, given " +
                        state(a.invRms) + ", " + state(a.hMix) + ", " + state(a.hPre));
  }
  if (present == 3) {
    GRADKIT_RETURN_IF_ERROR(checkRankIn(a.api, "invRmsOptional", *a.invRms, {rank - 2}, "rank of x - 2"));
    GRADKIT_RETURN_IF_ERROR(checkRankIn(a.api, "hMixOptional", *a.hMix, {rank - 1}, "rank of x - 1"));
    GRADKIT_RETURN_IF_ERROR(checkRankIn(a.api, "hPreOptional", *a.hPre, {rank - 1}, "rank of x - 1"));
  }
  return ACLNN_SUCCESS;
}

// phi's rows: 2N with alpha of 2; 2N + N*N (any profile) or 2N + N! (A2/A3) with alpha of 3.
aclnnStatus checkPhiRows(const MhcPreArgs& a, const ForwardDims& dims, const MhcProfile& profile) {
  const int64_t n = dims.n;
  const int64_t rows = a.phi->viewDims[0];
  const std::string given = "shape " + a.phi->shapeString();
  if (a.alpha->viewDims[0] == 2) {
    if (rows == kernels::mhcFusionRows(n, 0)) return ACLNN_SUCCESS;
    return fail(ACLNN_ERR_PARAM_INVALID, a.api, "phi",
                std::to_string(kernels::mhcFusionRows(n, 0)) + " rows (2N for N = " + std::to_string(n) +
                    ", alpha of 2 elements)",
                given);
  }
  const int64_t square = kernels::mhcSquareRows(n);
  const int64_t factorial = kernels::mhcFactorialRows(n);
  if (rows == square || (profile.factorialResidual && rows == factorial)) return ACLNN_SUCCESS;
  if (profile.factorialResidual) {
    return fail(ACLNN_ERR_PARAM_INVALID, a.api, "phi",
                std::to_string(square) + " or " + std::to_string(factorial) + " rows (2N + N*N or 2N + N! for N = " +
                    std::to_string(n) + ", alpha of 3 elements, " + profile.name + " profile)",
                given);
  }
  return fail(ACLNN_ERR_PARAM_INVALID, a.api, "phi",
              std::to_string(square) + " rows (2N + N*N for N = " + std::to_string(n) +
                  ", alpha of 3 elements; the N! residual exists only in the Ascend910B / Ascend910_93 profiles, "
                  "this is the " +
                  profile.name + " profile)",
              given);
}

aclnnStatus checkShapes(const MhcPreArgs& a, const MhcProfile& profile) {
  GRADKIT_RETURN_IF_ERROR(checkMhcStreamsAndHidden(a.api, "x", *a.x, profile));
  const ForwardDims dims = forwardDimsOf(*a.x);
  const int64_t n = dims.n;
  const int64_t d = dims.d;
  GRADKIT_RETURN_IF_ERROR(checkPhiRows(a, dims, profile));
  const int64_t rows = a.phi->viewDims[0];
  const int64_t residual = kernels::mhcResidualWidth(rows, n);
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(a.api, "phi", *a.phi, {rows, n * d}, "[F, N*D] with N, D of x"));
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(a.api, "bias", *a.bias, {rows}, "[F], F = the rows of phi"));
  if (a.gamma != nullptr) {
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(a.api, "gammaOptional", *a.gamma, {n, d}, "[N, D] of x"));
  }
  const std::string lead = mhcLeadNames(dims.lead);
  GRADKIT_RETURN_IF_ERROR(checkShapeIs(a.api, "hIn", *a.hIn, shapeWithTail(dims.lead, {d}), "[" + lead + ", D] of x"));
  GRADKIT_RETURN_IF_ERROR(
      checkShapeIs(a.api, "hPost", *a.hPost, shapeWithTail(dims.lead, {n}), "[" + lead + ", N] of x"));
  if (a.alpha->viewDims[0] == 3) {
    const bool square = rows == kernels::mhcSquareRows(n);
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(
        a.api, "hRes", *a.hRes, shapeWithTail(dims.lead, kernels::mhcResidualTail(n, residual)),
        square ? "[" + lead + ", N, N]: phi has 2N + N*N rows" : "[" + lead + ", N!]: phi has 2N + N! rows"));
  }
  if (a.invRms != nullptr) {
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(a.api, "invRmsOptional", *a.invRms, dims.lead, "[" + lead + "] of x"));
    GRADKIT_RETURN_IF_ERROR(checkShapeIs(a.api, "hMixOptional", *a.hMix, shapeWithTail(dims.lead, {rows}),
                                         "[" + lead + ", F], F = the rows of phi"));
    GRADKIT_RETURN_IF_ERROR(
        checkShapeIs(a.api, "hPreOptional", *a.hPre, shapeWithTail(dims.lead, {n}), "[" + lead + ", N] of x"));
  }
  return ACLNN_SUCCESS;
}

// hRes is used only with alpha of 3 elements; with 2 it is ignored (never written), as upstream gives it shape (0).
const aclTensor* usedHRes(const MhcPreArgs& a) { return a.alpha->viewDims[0] == 3 ? a.hRes : nullptr; }

aclnnStatus checkDtypes(const MhcPreArgs& a) {
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(a.api, "x", *a.x, {ACL_BF16, ACL_FLOAT16}));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(a.api, "phi", *a.phi, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(a.api, "alpha", *a.alpha, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(a.api, "bias", *a.bias, {ACL_FLOAT}));
  if (a.gamma != nullptr) GRADKIT_RETURN_IF_ERROR(checkDtypeIn(a.api, "gammaOptional", *a.gamma, {ACL_FLOAT}));
  GRADKIT_RETURN_IF_ERROR(checkSameDtype(a.api, "hIn", *a.hIn, "x", *a.x));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(a.api, "hPost", *a.hPost, {ACL_FLOAT}));
  if (const aclTensor* hRes = usedHRes(a)) GRADKIT_RETURN_IF_ERROR(checkDtypeIn(a.api, "hRes", *hRes, {ACL_FLOAT}));
  if (a.invRms != nullptr) {
    GRADKIT_RETURN_IF_ERROR(checkDtypeIn(a.api, "invRmsOptional", *a.invRms, {ACL_FLOAT}));
    GRADKIT_RETURN_IF_ERROR(checkDtypeIn(a.api, "hMixOptional", *a.hMix, {ACL_FLOAT}));
    GRADKIT_RETURN_IF_ERROR(checkDtypeIn(a.api, "hPreOptional", *a.hPre, {ACL_FLOAT}));
  }
  return ACLNN_SUCCESS;
}

std::vector<NamedTensor> inputsOf(const MhcPreArgs& a) {
  return {{"x", a.x}, {"phi", a.phi}, {"alpha", a.alpha}, {"bias", a.bias}, {"gammaOptional", a.gamma}};
}

std::vector<NamedTensor> outputsOf(const MhcPreArgs& a) {
  return {{"hIn", a.hIn},           {"hPost", a.hPost},      {"hRes", usedHRes(a)}, {"invRmsOptional", a.invRms},
          {"hMixOptional", a.hMix}, {"hPreOptional", a.hPre}};
}

aclnnStatus checkFormats(const MhcPreArgs& a) {
  for (const auto& list : {inputsOf(a), outputsOf(a)}) {
    for (const NamedTensor& named : list) {
      if (named.tensor != nullptr) GRADKIT_RETURN_IF_ERROR(checkNotPrivateFormat(a.api, named.name, *named.tensor));
    }
  }
  return ACLNN_SUCCESS;
}

}  // namespace

aclnnStatus checkMhcPre(const MhcPreArgs& args, const uint64_t* workspaceSize, aclOpExecutor* const* executor) {
  GRADKIT_RETURN_IF_ERROR(checkMhcV2Entry(args.api, args.isV2(), args.opImplMode));
  GRADKIT_RETURN_IF_ERROR(checkNulls(args, workspaceSize, executor));
  GRADKIT_RETURN_IF_ERROR(checkInputRanks(args));
  const MhcProfile profile = currentMhcProfile();
  GRADKIT_RETURN_IF_ERROR(checkOutputRanks(args, profile));
  GRADKIT_RETURN_IF_ERROR(checkShapes(args, profile));
  GRADKIT_RETURN_IF_ERROR(checkDtypes(args));
  GRADKIT_RETURN_IF_ERROR(checkFormats(args));
  return checkMemoryRules(args.api, inputsOf(args), outputsOf(args));
}

}  // namespace gradkit::ops
