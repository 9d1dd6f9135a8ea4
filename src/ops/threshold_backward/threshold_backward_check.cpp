#include "ops/threshold_backward/threshold_backward_check.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <string>
#include <vector>

#include "base/dtype.h"
#include "base/error.h"
#include "opapi/check.h"
#include "opapi/tensor.h"
#include "runtime/runtime.h"

namespace gradkit::ops {
namespace {

constexpr int64_t kMaxRank = 8;

// Mainline's list (spec 2.5): BF16 needs Ascend910B or later (every profile gradkit emulates), INT64 needs
// Ascend950 (and a zero threshold, checked below).
aclnnStatus checkDtype(const char* name, const aclTensor& tensor) {
  if (rt::currentSoc() == rt::Soc::Ascend950) {
    return checkDtypeIn(kThresholdBackwardApi, name, tensor,
                        {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT8, ACL_UINT8, ACL_INT32, ACL_INT64});
  }
  return checkDtypeIn(kThresholdBackwardApi, name, tensor,
                      {ACL_FLOAT, ACL_FLOAT16, ACL_BF16, ACL_INT8, ACL_UINT8, ACL_INT32});
}

// Any real scalar dtype; complex and undefined ones have no order to compare with.
aclnnStatus checkThresholdDtype(const aclScalar& threshold) {
  switch (threshold.dtype) {
    case ACL_FLOAT:
    case ACL_FLOAT16:
    case ACL_BF16:
    case ACL_DOUBLE:
    case ACL_INT8:
    case ACL_UINT8:
    case ACL_INT16:
    case ACL_UINT16:
    case ACL_INT32:
    case ACL_UINT32:
    case ACL_INT64:
    case ACL_UINT64:
    case ACL_BOOL:
    case ACL_FLOAT8_E5M2:
    case ACL_FLOAT8_E4M3FN:
    case ACL_FLOAT8_E8M0:
      return ACLNN_SUCCESS;
    default:
      return fail(ACLNN_ERR_PARAM_INVALID, kThresholdBackwardApi, "threshold", "a real scalar dtype",
                  "dtype " + dtypeName(threshold.dtype));
  }
}

// INT64 runs ReluGrad only: the threshold, read as float, must be 0 within FLT_EPSILON (NaN fails).
aclnnStatus checkInt64Threshold(const aclTensor& gradOutput, const aclScalar& threshold) {
  if (gradOutput.dtype != ACL_INT64) return ACLNN_SUCCESS;
  const auto value = static_cast<float>(threshold.toDouble());
  if (std::fabs(value) <= FLT_EPSILON) return ACLNN_SUCCESS;
  return fail(ACLNN_ERR_PARAM_INVALID, kThresholdBackwardApi, "threshold",
              "0 (|threshold| <= FLT_EPSILON) for INT64 tensors", std::to_string(threshold.toDouble()));
}

// numpy broadcasting of two shapes; false when a pair of dims is neither equal nor 1.
bool broadcastShapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b, std::vector<int64_t>& result) {
  const size_t rank = std::max(a.size(), b.size());
  result.assign(rank, 1);
  for (size_t k = 0; k < rank; ++k) {
    const int64_t x = k + a.size() >= rank ? a[k + a.size() - rank] : 1;
    const int64_t y = k + b.size() >= rank ? b[k + b.size() - rank] : 1;
    if (x != y && x != 1 && y != 1) return false;
    result[k] = x == 1 ? y : x;
  }
  return true;
}

aclnnStatus checkShapes(const aclTensor& gradOutput, const aclTensor& self, const aclTensor& out) {
  std::vector<int64_t> broadcast;
  if (!broadcastShapes(gradOutput.viewDims, self.viewDims, broadcast)) {
    return fail(ACLNN_ERR_PARAM_INVALID, kThresholdBackwardApi, "self",
                "a shape that broadcasts with gradOutput's " + gradOutput.shapeString(), "shape " + self.shapeString());
  }
  if (out.viewDims != broadcast) {
    return fail(ACLNN_ERR_PARAM_INVALID, kThresholdBackwardApi, "out",
                "shape " + dimsString(broadcast) + " (gradOutput " + gradOutput.shapeString() +
                    " broadcast with self " + self.shapeString() + ")",
                "shape " + out.shapeString());
  }
  return ACLNN_SUCCESS;
}

}  // namespace

aclnnStatus checkThresholdBackward(const ThresholdBackwardArgs& args, const uint64_t* workspaceSize,
                                   aclOpExecutor* const* executor) {
  const char* api = kThresholdBackwardApi;
  const auto [gradOutput, self, threshold, out] = args;
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
  GRADKIT_RETURN_IF_ERROR(checkThresholdDtype(*threshold));
  GRADKIT_RETURN_IF_ERROR(checkInt64Threshold(*gradOutput, *threshold));

  GRADKIT_RETURN_IF_ERROR(checkMaxRank(api, "gradOutput", *gradOutput, kMaxRank));
  GRADKIT_RETURN_IF_ERROR(checkMaxRank(api, "self", *self, kMaxRank));
  GRADKIT_RETURN_IF_ERROR(checkMaxRank(api, "out", *out, kMaxRank));
  GRADKIT_RETURN_IF_ERROR(checkShapes(*gradOutput, *self, *out));
  // The overlap rule (docs/reliability.md): results must not depend on the thread count.
  GRADKIT_RETURN_IF_ERROR(checkNoInternalOverlap(api, "out", *out));
  GRADKIT_RETURN_IF_ERROR(checkNoPartialOverlap(api, "out", *out, "gradOutput", *gradOutput));
  return checkNoPartialOverlap(api, "out", *out, "self", *self);
}

}  // namespace gradkit::ops
