#include "ops/dropout/dropout_check.h"

#include <cstdio>
#include <string>

#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "ops/dropout/kernels/mask_format.h"
#include "ops/dropout/masked_dropout_check.h"

namespace gradkit::ops {
namespace {

constexpr int64_t kMaxRank = 8;

}  // namespace

aclnnStatus checkDropout(const DropoutArgs& args, const uint64_t* workspaceSize, aclOpExecutor* const* executor) {
  const char* api = kDropoutApi;
  const auto& [input, p, train, seed, offset, out, maskOut] = args;
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "input", input));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "out", out));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "maskOut", maskOut));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "executor", executor));

  // Upstream: CanCast(input -> out), then input's dtype list, then maskOut's.
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "out", *out, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "input", *input, {ACL_FLOAT, ACL_FLOAT16, ACL_BF16}));
  GRADKIT_RETURN_IF_ERROR(checkDtypeIn(api, "maskOut", *maskOut, {ACL_UINT8}));
  if (!(p >= 0.0 && p <= 1.0)) {  // NaN fails too (upstream lets it through; DECISIONS.md "check early")
    return fail(ACLNN_ERR_PARAM_INVALID, api, "p", "a drop probability in [0, 1]", exactNumberText(p));
  }

  GRADKIT_RETURN_IF_ERROR(checkMaxRank(api, "input", *input, kMaxRank));
  GRADKIT_RETURN_IF_ERROR(checkSameShape(api, "out", *out, "input", *input));
  GRADKIT_RETURN_IF_ERROR(checkProducedMaskSize(api, "maskOut", *maskOut, input->numel()));
  return checkDropoutOutputOverlaps(api, *input, *out, *maskOut);
}

}  // namespace gradkit::ops
