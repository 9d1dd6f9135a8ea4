// native_dropout: torch_npu's forward dispatch (spec 1.6), producing the packed UINT8 mask on every path so that its
// backward can always be run with the same mask.
#include <memory>
#include <string>
#include <vector>

#include "aclnnop/aclnn_dropout_do_mask.h"
#include "aclnnop/aclnn_dropout_gen_mask.h"
#include "aclnnop/aclnn_dropout_v3.h"
#include "base/error.h"
#include "dispatch/dispatch_checks.h"
#include "dispatch/dispatch_steps.h"
#include "gradkit/native_dropout.h"
#include "opapi/check.h"
#include "ops/dropout/kernels/mask_format.h"
#include "runtime/runtime.h"

namespace gradkit {
namespace {

constexpr const char* kApi = "native_dropout";

bool probabilityAllowed(double p) { return p >= 0.0 && p <= 1.0; }  // false for NaN

/** Checks after the null checks; `out` and `mask` may be null (the allocating overload makes them). */
aclnnStatus checkArguments(const aclTensor& input, double p, const aclTensor* out, const aclTensor* mask) {
  if (!probabilityAllowed(p))
    return fail(ACLNN_ERR_PARAM_INVALID, kApi, "p", "a value in [0, 1]", dispatch::doubleText(p));
  GRADKIT_RETURN_IF_ERROR(dispatch::checkDataTensor(kApi, "input", input));
  if (out != nullptr) GRADKIT_RETURN_IF_ERROR(dispatch::checkLike(kApi, "out", *out, "input", input));
  if (mask != nullptr) GRADKIT_RETURN_IF_ERROR(dispatch::checkPackedMask(kApi, "mask", mask, input.numel()));
  // The overlap rule of every operator (docs/reliability.md), also for the copy and fill short cuts.
  if (out != nullptr) {
    GRADKIT_RETURN_IF_ERROR(checkNoInternalOverlap(kApi, "out", *out));
    GRADKIT_RETURN_IF_ERROR(checkNoPartialOverlap(kApi, "out", *out, "input", input));
  }
  if (mask != nullptr) {
    GRADKIT_RETURN_IF_ERROR(checkNoInternalOverlap(kApi, "mask", *mask));
    GRADKIT_RETURN_IF_ERROR(checkNoPartialOverlap(kApi, "mask", *mask, "input", input));
    if (out != nullptr) GRADKIT_RETURN_IF_ERROR(checkNoPartialOverlap(kApi, "mask", *mask, "out", *out));
  }
  return ACLNN_SUCCESS;
}

struct IntArrayDeleter {
  void operator()(aclIntArray* array) const { aclDestroyIntArray(array); }
};

aclnnStatus runGenMaskDoMask(const aclTensor& input, double p, int64_t seed, int64_t offset, aclTensor* out,
                             aclTensor* mask, aclrtStream stream) {
  std::unique_ptr<aclIntArray, IntArrayDeleter> shape(aclCreateIntArray(input.viewDims.data(), input.viewDims.size()));
  if (shape == nullptr) return failText(ACLNN_ERR_INNER, kApi, "cannot create the shape array");
  GRADKIT_RETURN_IF_ERROR(dispatch::runOp(
      kApi,
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnDropoutGenMaskV2GetWorkspaceSize(shape.get(), p, seed, offset, input.dtype, mask, size, executor);
      },
      aclnnDropoutGenMaskV2, stream));
  return dispatch::runOp(
      kApi,
      [&](uint64_t* size, aclOpExecutor** executor) {
        return aclnnDropoutDoMaskGetWorkspaceSize(&input, mask, p, out, size, executor);
      },
      aclnnDropoutDoMask, stream);
}

aclnnStatus run(const aclTensor& input, double p, int64_t seed, int64_t offset, aclTensor* out, aclTensor* mask,
                DropoutPath path, aclrtStream stream) {
  switch (path) {
    case DropoutPath::kRejected:
    case DropoutPath::kEmpty:
      return ACLNN_SUCCESS;
    case DropoutPath::kIdentity:
      GRADKIT_RETURN_IF_ERROR(dispatch::enqueueCopy(kApi, input, *out, stream));
      return dispatch::enqueueFill(kApi, *mask, 0xFF, stream);
    case DropoutPath::kZeros:
      GRADKIT_RETURN_IF_ERROR(dispatch::enqueueFill(kApi, *out, 0, stream));
      return dispatch::enqueueFill(kApi, *mask, 0x00, stream);
    case DropoutPath::kV3:
      return dispatch::runOp(
          kApi,
          [&](uint64_t* size, aclOpExecutor** executor) {
            return aclnnDropoutV3GetWorkspaceSize(&input, nullptr, p, seed, offset, out, mask, size, executor);
          },
          aclnnDropoutV3, stream);
    case DropoutPath::kGenMaskDoMask:
      return runGenMaskDoMask(input, p, seed, offset, out, mask, stream);
  }
  return ACLNN_SUCCESS;
}

void report(DropoutPath* taken, DropoutPath path) {
  if (taken != nullptr) *taken = path;
}

}  // namespace

const char* path_name(DropoutPath path) {
  switch (path) {
    case DropoutPath::kRejected:
      return "rejected";
    case DropoutPath::kEmpty:
      return "empty";
    case DropoutPath::kIdentity:
      return "identity";
    case DropoutPath::kZeros:
      return "zeros";
    case DropoutPath::kV3:
      return "v3";
    case DropoutPath::kGenMaskDoMask:
      return "genmask+domask";
  }
  return "unknown";
}

DropoutPath native_dropout_path(int64_t numel, double p, bool train) {
  if (!probabilityAllowed(p)) return DropoutPath::kRejected;
  if (numel == 0) return DropoutPath::kEmpty;
  if (!train || p == 0.0) return DropoutPath::kIdentity;
  if (p == 1.0) return DropoutPath::kZeros;
  if (rt::currentSoc() == rt::Soc::Ascend950 && !rt::isOpDisabled("aclnnDropoutV3")) return DropoutPath::kV3;
  return DropoutPath::kGenMaskDoMask;
}

double native_dropout_scale(double p, bool train) {
  if (!train) return 1.0;
  return p == 1.0 ? 0.0 : 1.0 / (1.0 - p);
}

aclnnStatus native_dropout(const aclTensor* input, double p, bool train, int64_t seed, int64_t offset, aclTensor* out,
                           aclTensor* mask, aclrtStream stream, DropoutPath* taken) {
  report(taken, DropoutPath::kRejected);
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "input", input));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "out", out));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "mask", mask));
  GRADKIT_RETURN_IF_ERROR(checkArguments(*input, p, out, mask));
  const DropoutPath path = native_dropout_path(input->numel(), p, train);
  GRADKIT_RETURN_IF_ERROR(run(*input, p, seed, offset, out, mask, path, stream));
  report(taken, path);
  return ACLNN_SUCCESS;
}

aclnnStatus native_dropout(const aclTensor* input, double p, bool train, int64_t seed, int64_t offset,
                           DeviceTensor* out, DeviceTensor* mask, aclrtStream stream, DropoutPath* taken) {
  report(taken, DropoutPath::kRejected);
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "input", input));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "out", out));
  GRADKIT_RETURN_IF_ERROR(checkNotNull(kApi, "mask", mask));
  GRADKIT_RETURN_IF_ERROR(dispatch::checkNotHolding(kApi, "out", *out, {input}));
  GRADKIT_RETURN_IF_ERROR(dispatch::checkNotHolding(kApi, "mask", *mask, {input}));
  out->reset();
  mask->reset();
  GRADKIT_RETURN_IF_ERROR(checkArguments(*input, p, nullptr, nullptr));
  const DropoutPath path = native_dropout_path(input->numel(), p, train);
  GRADKIT_RETURN_IF_ERROR(DeviceTensor::allocate(input->viewDims, input->dtype, out));
  if (const aclnnStatus status = DeviceTensor::allocate({ops::dropoutMaskBytes(input->numel())}, ACL_UINT8, mask);
      status != ACLNN_SUCCESS) {
    out->reset();
    return status;
  }
  if (const aclnnStatus status = run(*input, p, seed, offset, out->get(), mask->get(), path, stream);
      status != ACLNN_SUCCESS) {
    // DoMask can fail after GenMask was queued: let that finish before the memory goes.
    if (path == DropoutPath::kGenMaskDoMask) aclrtSynchronizeStream(stream);
    out->reset();
    mask->reset();
    return status;
  }
  report(taken, path);
  return ACLNN_SUCCESS;
}

}  // namespace gradkit
