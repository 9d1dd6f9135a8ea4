#include "ops/dropout/dropout_backward_check.h"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <string>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "ops/dropout/masked_dropout_check.h"

namespace gradkit::ops {
namespace {

constexpr int64_t kMaxRank = 8;

std::string scaleText(double scale, double prob) {
  char text[96];
  std::snprintf(text, sizeof text, "%.17g (p = %.17g)", scale, prob);
  return text;
}

}  // namespace

double dropoutBackwardProb(double scale) { return std::fabs(scale) <= DBL_EPSILON ? 1.0 : 1.0 - 1.0 / scale; }

aclnnStatus checkDropoutBackward(const DropoutBackwardArgs& args, const uint64_t* workspaceSize,
                                 aclOpExecutor* const* executor) {
  const char* api = kDropoutBackwardApi;
  const auto [gradOutput, mask, scale, out] = args;
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "gradOutput", gradOutput));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "mask", mask));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "out", out));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "executor", executor));
  // Upstream returns at once for an empty gradOutput, skipping every later rule; gradkit checks dtypes, scale, rank
  // and out's shape first (docs/reliability.md). An empty gradOutput then needs no mask.

  GRADKIT_RETURN_IF_ERROR(checkMaskedDtypes(api, "gradOutput", *gradOutput, *mask, "out", *out));
  const double prob = dropoutBackwardProb(scale);
  if (!(prob >= 0.0 && prob <= 1.0)) {  // scale in (0, 1) or negative; NaN fails too (a gradkit decision)
    return fail(ACLNN_ERR_PARAM_INVALID, api, "scale", "0 or >= 1 (so that p = 1 - 1/scale lies in [0, 1])",
                scaleText(scale, prob));
  }
  GRADKIT_RETURN_IF_ERROR(checkMaxRank(api, "gradOutput", *gradOutput, kMaxRank));
  GRADKIT_RETURN_IF_ERROR(checkSameShape(api, "out", *out, "gradOutput", *gradOutput));
  if (gradOutput->isEmpty()) return ACLNN_SUCCESS;
  GRADKIT_RETURN_IF_ERROR(checkMaskSize(api, *mask, "gradOutput", *gradOutput, /*exact=*/true));
  return checkMaskedOverlaps(api, "gradOutput", *gradOutput, *mask, "out", *out);
}

}  // namespace gradkit::ops
