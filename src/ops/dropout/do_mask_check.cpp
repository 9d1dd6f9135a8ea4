#include "ops/dropout/do_mask_check.h"

#include <cstdio>
#include <string>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "ops/dropout/masked_dropout_check.h"

namespace gradkit::ops {
namespace {

constexpr int64_t kMaxRank = 8;

}  // namespace

aclnnStatus checkDropoutDoMask(const DropoutDoMaskArgs& args, const uint64_t* workspaceSize,
                               aclOpExecutor* const* executor) {
  const char* api = kDropoutDoMaskApi;
  const auto [self, mask, prob, out] = args;
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "self", self));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "mask", mask));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "out", out));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "executor", executor));
  // Upstream returns at once for an empty self or an empty mask, skipping every later rule. gradkit checks dtypes,
  // prob, rank and out's shape first (docs/reliability.md); an empty self then needs no mask, and an empty mask
  // with a non-empty self fails the mask-size rule instead of leaving out unwritten.
  GRADKIT_RETURN_IF_ERROR(checkMaskedDtypes(api, "self", *self, *mask, "out", *out));
  if (!(prob >= 0.0 && prob <= 1.0)) {  // NaN fails too
    return fail(ACLNN_ERR_PARAM_INVALID, api, "prob", "a drop probability in [0, 1]", exactNumberText(prob));
  }
  GRADKIT_RETURN_IF_ERROR(checkMaxRank(api, "self", *self, kMaxRank));
  GRADKIT_RETURN_IF_ERROR(checkSameShape(api, "out", *out, "self", *self));
  if (self->isEmpty()) return ACLNN_SUCCESS;
  GRADKIT_RETURN_IF_ERROR(checkMaskSize(api, *mask, "self", *self, /*exact=*/false));
  return checkMaskedOverlaps(api, "self", *self, *mask, "out", *out);
}

}  // namespace gradkit::ops
