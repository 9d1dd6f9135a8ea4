// The host dispatch of PyTorch's native_dropout / native_dropout_backward on top of the dropout aclnn ops, as
// torch_npu's op-plugin does it (with the RFC's Ascend950 change). See docs/dropout.md for every difference from
// PyTorch itself.
//
// Every function checks its arguments first (status + a message for aclGetRecentErrMsg() that names the
// argument, the expected and the given value), then enqueues its work on `stream` (nullptr = the default stream
// of the current context) and returns without waiting: call aclrtSynchronizeStream before reading the results.
// The tensors' memory must stay alive until then; the descriptors may be destroyed at once.
#ifndef GRADKIT_GRADKIT_NATIVE_DROPOUT_H_
#define GRADKIT_GRADKIT_NATIVE_DROPOUT_H_

#include "acl/acl_base.h"
#include "aclnn/aclnn_base.h"

#ifdef __cplusplus
#include "gradkit/device_tensor.h"

namespace gradkit {

/** How native_dropout_backward computes its result. */
enum class DropoutBackwardPath : int32_t {
  kRejected = 0,  // an argument check fails; nothing is launched
  kEmpty = 1,     // grad has no elements: an empty result with grad's shape, nothing launched
  kClone = 2,     // p == 0 (scale == 1): a copy of grad, the mask is not read
  kZeros = 3,     // p == 1 (scale == 0, +Inf or >= 2^54): +0 everywhere, the mask is not read
  kV3Grad = 4,    // aclnnDropoutV3Grad(grad, mask, scale): bit-exact with PyTorch
  kDoMask = 5,    // the legacy aclnnDropoutDoMask(grad, mask, p = 1 - 1/scale)
};

/** How native_dropout computes its output and mask. */
enum class DropoutPath : int32_t {
  kRejected = 0,       // an argument check fails; nothing is launched
  kEmpty = 1,          // input has no elements: nothing launched (the mask has 0 bytes)
  kIdentity = 2,       // train == false or p == 0: a copy of input, mask bytes all 0xFF
  kZeros = 3,          // train and p == 1: +0 everywhere, mask bytes all 0x00
  kV3 = 4,             // aclnnDropoutV3(input, nullptr, p, seed, offset, out, mask)
  kGenMaskDoMask = 5,  // aclnnDropoutGenMaskV2(shape, p, seed, offset, dtype(input), mask), then aclnnDropoutDoMask
};

/** "rejected", "empty", "clone", "zeros", "v3grad", "domask". */
ACL_FUNC_VISIBILITY const char* path_name(DropoutBackwardPath path);

/** "rejected", "empty", "identity", "zeros", "v3", "genmask+domask". */
ACL_FUNC_VISIBILITY const char* path_name(DropoutPath path);

/**
 * The path native_dropout_backward takes for a valid grad of `numel` elements and `scale` in the current
 * profile: kRejected unless scale == 0 or scale >= 1 (NaN included); kEmpty for numel == 0; then
 * p = (scale == 0) ? 1 : 1 - 1/scale (double): kClone for p == 0, kZeros for p == 1; otherwise kV3Grad when the
 * profile is Ascend950 and aclnnDropoutV3Grad is not listed in GRADKIT_DISABLE_OPS, else kDoMask.
 */
ACL_FUNC_VISIBILITY DropoutBackwardPath native_dropout_backward_path(int64_t numel, double scale);

/**
 * The path native_dropout takes for a valid input of `numel` elements: kRejected unless 0 <= p <= 1; kEmpty for
 * numel == 0; kIdentity when !train or p == 0; kZeros for p == 1; otherwise kV3 when the profile is Ascend950 and
 * aclnnDropoutV3 is not listed in GRADKIT_DISABLE_OPS, else kGenMaskDoMask.
 */
ACL_FUNC_VISIBILITY DropoutPath native_dropout_path(int64_t numel, double p, bool train);

/**
 * The scale PyTorch's autograd hands native_dropout_backward for a native_dropout(p, train) forward:
 * 1 when !train, 0 when p == 1, else 1 / (1 - p) in double.
 */
ACL_FUNC_VISIBILITY double native_dropout_scale(double p, bool train);

/**
 * torch_npu's native_dropout_backward(grad, mask, scale) into `out` (grad's shape and dtype, any strides).
 * Checks, in order: grad and out non-null (161001); scale == 0 or scale >= 1, else 161002 with
 * "scale has to be 0 or greater than or equal to 1, but got <scale>"; grad FLOAT, FLOAT16 or BFLOAT16 with at most
 * 8 dims; out with grad's shape and dtype (161002). The path is native_dropout_backward_path(). kClone, kZeros and
 * kEmpty do not read `mask` (it may be null or unpacked, as after an eval or p == 0 forward); kV3Grad and kDoMask
 * require the packed mask: non-null (161001), UINT8 with exactly ceil(n/128)*16 elements (161002), on both paths.
 * `taken`, when not null, receives the path (kRejected when a check fails).
 */
ACL_FUNC_VISIBILITY aclnnStatus native_dropout_backward(const aclTensor* grad, const aclTensor* mask, double scale,
                                                        aclTensor* out, aclrtStream stream,
                                                        DropoutBackwardPath* taken = nullptr);

/**
 * As the overload above, writing into a new contiguous tensor of grad's shape and dtype allocated into `*result`.
 * What `*result` held before is released first (like DeviceTensor::reset: synchronize a stream that still uses
 * it); 161001 when `result` is null, 161002 when it holds the memory grad or mask views. After a failure it holds
 * nothing. An empty grad gives an empty result with grad's shape.
 */
ACL_FUNC_VISIBILITY aclnnStatus native_dropout_backward(const aclTensor* grad, const aclTensor* mask, double scale,
                                                        DeviceTensor* result, aclrtStream stream,
                                                        DropoutBackwardPath* taken = nullptr);

/**
 * native_dropout(input, p, train) with the aclnn dropout ops: writes the output into `out` (input's shape and
 * dtype, any strides) and the packed keep mask into `mask` (UINT8, exactly ceil(n/128)*16 elements, LSB first,
 * 1 = keep; every byte 0xFF on kIdentity, 0x00 on kZeros). Checks: input, out, mask non-null
 * (161001); 0 <= p <= 1 (161002, NaN included, also when !train); input FLOAT, FLOAT16 or BFLOAT16 with at most
 * 8 dims; out with input's shape and dtype; mask as above (161002). `seed` and `offset` select the Philox stream
 * of aclnnDropoutGenMaskV2 (both random paths give the same mask; aclnnDropoutV3 requires offset % 4 == 0).
 * The backward of this call is native_dropout_backward(grad, mask, native_dropout_scale(p, train)).
 */
ACL_FUNC_VISIBILITY aclnnStatus native_dropout(const aclTensor* input, double p, bool train, int64_t seed,
                                               int64_t offset, aclTensor* out, aclTensor* mask, aclrtStream stream,
                                               DropoutPath* taken = nullptr);

/**
 * As the overload above, allocating the output (contiguous, input's shape and dtype) into `*out` and the mask
 * (1-D, ceil(n/128)*16 bytes) into `*mask`; what they held before is released first. 161001 when either is null,
 * 161002 when either holds the memory input views; both hold nothing after a failure.
 */
ACL_FUNC_VISIBILITY aclnnStatus native_dropout(const aclTensor* input, double p, bool train, int64_t seed,
                                               int64_t offset, DeviceTensor* out, DeviceTensor* mask,
                                               aclrtStream stream, DropoutPath* taken = nullptr);

}  // namespace gradkit

extern "C" {
#endif

/**
 * C entry point of gradkit::native_dropout_backward (into `out`), for bindings such as ctypes. `pathTaken`, when
 * not null, receives the gradkit::DropoutBackwardPath value.
 */
ACL_FUNC_VISIBILITY aclnnStatus gradkitNativeDropoutBackward(const aclTensor* grad, const aclTensor* mask, double scale,
                                                             aclTensor* out, aclrtStream stream, int32_t* pathTaken);

/**
 * C entry point of gradkit::native_dropout (into `out` and `mask`). `pathTaken`, when not null, receives the
 * gradkit::DropoutPath value.
 */
ACL_FUNC_VISIBILITY aclnnStatus gradkitNativeDropout(const aclTensor* input, double p, bool train, int64_t seed,
                                                     int64_t offset, aclTensor* out, aclTensor* mask,
                                                     aclrtStream stream, int32_t* pathTaken);

#ifdef __cplusplus
}
#endif

#endif  // GRADKIT_GRADKIT_NATIVE_DROPOUT_H_
