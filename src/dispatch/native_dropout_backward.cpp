// native_dropout_backward: torch_npu's host dispatch with the RFC's Ascend950 branch (spec 1.6).
#include <string>

#include "aclnnop/aclnn_dropout_do_mask.h"
#include "aclnnop/aclnn_dropout_v3_grad.h"
#include "base/error.h"
#include "dispatch/dispatch_checks.h"
#include "dispatch/dispatch_steps.h"
#include "gradkit/native_dropout.h"
#include "opapi/check.h"
#include "runtime/runtime.h"

namespace gradkit {
namespace {

constexpr const char* kApi = "native_dropout_backward";

bool scaleAllowed(double scale) { return scale == 0.0 || scale >= 1.0; }  // false for NaN

/** The drop probability the legacy chain derives from scale; used for branching (and by DoMask). */
double dropProbability(double scale) { return scale == 0.0 ? 1.0 : 1.0 - 1.0 / scale; }

/** The checks every path shares, after the null checks. */
aclnnStatus checkCommon(const aclTensor& grad, double scale) {
  if (!scaleAllowed(scale)) {
    return failText(ACLNN_ERR_PARAM_INVALID, kApi,
                    "argument 'scale': scale has to be 0 or greater than or "
                    "equal to 1, but got " +
                        dispatch::doubleText(scale));
  }
  return dispatch::checkDataTensor(kApi, "grad", grad);
}

aclnnStatus run(const aclTensor& grad, const aclTensor* mask, double scale, const aclTensor& out,
                DropoutBackwardPath path, aclrtStream stream) {
  switch (path) {
    case DropoutBackwardPath::kEmpty:
    case DropoutBackwardPath::kRejected:
      return ACLNN_SUCCESS;
    case DropoutBackwardPath::kClone:
      return dispatch::enqueueCopy(kApi, grad, out, stream);
    case DropoutBackwardPath::kZeros:
      return dispatch::enqueueFill(kApi, out, 0, stream);
    case DropoutBackwardPath::kV3Grad:
    case DropoutBackwardPath::kDoMask:
      break;
  }
  GRADKIT_RETURN_IF_ERROR(dispatch::checkPackedMask(kApi, "mask", mask, grad.numel()));
  aclTensor* result = const_cast<aclTensor*>(&out);  // the aclnn signatures take a non-const output
  if (path == DropoutBackwardPath::kV3Grad) {        // the original scale, multiplied once
    return dispatch::runOp(
        kApi,
        [&](uint64_t* size, aclOpExecutor** executor) {
          return aclnnDropoutV3GradGetWorkspaceSize(&grad, mask, scale, result, size, executor);
        },
        aclnnDropoutV3Grad, stream);
  }
  const double p = dropProbability(scale);  // the legacy round trip: DoMask rebuilds 1 / (1 - p)
  return dispatch::runOp(
      kApi,
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnDropoutDoMaskGetWorkspaceSize(&grad, mask, p, result, size, executor);
      },
      aclnnDropoutDoMask, stream);
}

void report(DropoutBackwardPath* taken, DropoutBackwardPath path) {
  if (taken != nullptr) *taken = path;
}

}  // namespace

const char* path_name(DropoutBackwardPath path) {
  switch (path) {
    case DropoutBackwardPath::kRejected:
      return "rejected";
    case DropoutBackwardPath::kEmpty:
      return "empty";
    case DropoutBackwardPath::kClone:
      return "clone";
    case DropoutBackwardPath::kZeros:
      return "zeros";
    case DropoutBackwardPath::kV3Grad:
      return "v3grad";
    case DropoutBackwardPath::kDoMask:
      return "domask";
  }
  return "unknown";
}

DropoutBackwardPath native_dropout_backward_path(int64_t numel, double scale) {
  if (!scaleAllowed(scale)) return DropoutBackwardPath::kRejected;
  if (numel == 0) return DropoutBackwardPath::kEmpty;
  const double p = dropProbability(scale);
  if (p == 0.0) return DropoutBackwardPath::kClone;
  if (p == 1.0) return DropoutBackwardPath::kZeros;
  if (rt::currentSoc() == rt::Soc::Ascend950 && !rt::isOpDisabled("aclnnDropoutV3Grad")) {
    return DropoutBackwardPath::kV3Grad;
  }
  return DropoutBackwardPath::kDoMask;
}

aclnnStatus native_dropout_backward(const aclTensor* grad, const aclTensor* mask, double scale, aclTensor* out,
                                    aclrtStream stream, DropoutBackwardPath* taken) {
  report(taken, DropoutBackwardPath::kRejected);
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "grad", grad));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "out", out));
  GRADKIT_RETURN_IF_ERROR(checkCommon(*grad, scale));
  GRADKIT_RETURN_IF_ERROR(dispatch::checkLike(kApi, "out", *out, "grad", *grad));
  // The overlap rule of every operator (docs/reliability.md), also for the clone and zeros short cuts.
  GRADKIT_RETURN_IF_ERROR(checkNoInternalOverlap(kApi, "out", *out));
  GRADKIT_RETURN_IF_ERROR(checkNoPartialOverlap(kApi, "out", *out, "grad", *grad));
  if (mask != nullptr) GRADKIT_RETURN_IF_ERROR(checkNoPartialOverlap(kApi, "out", *out, "mask", *mask));
  const DropoutBackwardPath path = native_dropout_backward_path(grad->numel(), scale);
  GRADKIT_RETURN_IF_ERROR(run(*grad, mask, scale, *out, path, stream));
  report(taken, path);
  return ACLNN_SUCCESS;
}

aclnnStatus native_dropout_backward(const aclTensor* grad, const aclTensor* mask, double scale, DeviceTensor* result,
                                    aclrtStream stream, DropoutBackwardPath* taken) {
  report(taken, DropoutBackwardPath::kRejected);
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "grad", grad));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "result", result));
  GRADKIT_RETURN_IF_ERROR(dispatch::checkNotHolding(kApi, "result", *result, {grad, mask}));
  result->reset();
  GRADKIT_RETURN_IF_ERROR(checkCommon(*grad, scale));
  const DropoutBackwardPath path = native_dropout_backward_path(grad->numel(), scale);
  if (path == DropoutBackwardPath::kV3Grad || path == DropoutBackwardPath::kDoMask) {
    GRADKIT_RETURN_IF_ERROR(dispatch::checkPackedMask(kApi, "mask", mask, grad->numel()));  // before allocating
  }
  GRADKIT_RETURN_IF_ERROR(DeviceTensor::allocate(grad->viewDims, grad->dtype, result));
  if (const aclnnStatus status = run(*grad, mask, scale, *result->get(), path, stream); status != ACLNN_SUCCESS) {
    result->reset();
    return status;
  }
  report(taken, path);
  return ACLNN_SUCCESS;
}

}  // namespace gradkit
