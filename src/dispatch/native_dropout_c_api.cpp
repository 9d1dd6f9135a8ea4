// The C entry points of the host dispatch (for ctypes and other C bindings).
#include "gradkit/native_dropout.h"

extern "C" aclnnStatus gradkitNativeDropoutBackward(const aclTensor* grad, const aclTensor* mask, double scale,
                                                    aclTensor* out, aclrtStream stream, int32_t* pathTaken) {
  gradkit::DropoutBackwardPath path = gradkit::DropoutBackwardPath::kRejected;
  const aclnnStatus status = gradkit::native_dropout_backward(grad, mask, scale, out, stream, &path);
  if (pathTaken != nullptr) *pathTaken = static_cast<int32_t>(path);
  return status;
}

extern "C" aclnnStatus gradkitNativeDropout(const aclTensor* input, double p, bool train, int64_t seed, int64_t offset,
                                            aclTensor* out, aclTensor* mask, aclrtStream stream, int32_t* pathTaken) {
  gradkit::DropoutPath path = gradkit::DropoutPath::kRejected;
  const aclnnStatus status = gradkit::native_dropout(input, p, train, seed, offset, out, mask, stream, &path);
  if (pathTaken != nullptr) *pathTaken = static_cast<int32_t>(path);
  return status;
}
