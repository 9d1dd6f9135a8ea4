#include "ops/threshold_backward/threshold_backward_check.h"

#include <cfloat>
#include <cmath>
#include <string>

#include "core/check.h"
#include "core/error.h"
#include "core/tensor.h"

namespace gradkit::ops {
namespace {

constexpr int64_t kMaxRank = 8;

// BF16 is supported from Ascend910B on; every profile gradkit emulates is at least that.
aclnnStatus checkDtype(const char* name, const aclTensor& tensor) {
  return checkDtypeIn(kThresholdBackwardApi, name, tensor,
                      {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT8, ACL_UINT8, ACL_INT32, ACL_INT64});
}

// Upstream reads the scalar as float and accepts |t| <= FLT_EPSILON (DECISIONS.md); NaN fails.
aclnnStatus checkThreshold(const aclScalar& threshold) {
  const auto value = static_cast<float>(threshold.toDouble());
  if (std::fabs(value) <= FLT_EPSILON) return ACLNN_SUCCESS;
  return fail(ACLNN_ERR_PARAM_INVALID, kThresholdBackwardApi, "threshold", "0 (|threshold| <= FLT_EPSILON)",
              std::to_string(threshold.toDouble()));
}

}  // namespace

aclnnStatus checkThresholdBackward(const aclTensor* gradOutput, const aclTensor* self, const aclScalar* threshold,
                                   const aclTensor* out, const uint64_t* workspaceSize,
                                   aclOpExecutor* const* executor) {
  const char* api = kThresholdBackwardApi;
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "workspaceSize", workspaceSize));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "executor", executor));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "gradOutput", gradOutput));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "self", self));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "threshold", threshold));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(api, "out", out));

  GRADKIT_RETURN_IF_ERROR(checkDtype("gradOutput", *gradOutput));
  GRADKIT_RETURN_IF_ERROR(checkDtype("self", *self));
  GRADKIT_RETURN_IF_ERROR(checkDtype("out", *out));
  GRADKIT_RETURN_IF_ERROR(checkSameDtype(api, "self", *self, "gradOutput", *gradOutput));
  GRADKIT_RETURN_IF_ERROR(checkSameDtype(api, "out", *out, "gradOutput", *gradOutput));

  GRADKIT_RETURN_IF_ERROR(checkMaxRank(api, "gradOutput", *gradOutput, kMaxRank));
  GRADKIT_RETURN_IF_ERROR(checkMaxRank(api, "self", *self, kMaxRank));
  GRADKIT_RETURN_IF_ERROR(checkMaxRank(api, "out", *out, kMaxRank));
  GRADKIT_RETURN_IF_ERROR(checkSameShape(api, "self", *self, "gradOutput", *gradOutput));
  GRADKIT_RETURN_IF_ERROR(checkSameShape(api, "out", *out, "gradOutput", *gradOutput));

  return checkThreshold(*threshold);
}

}  // namespace gradkit::ops
