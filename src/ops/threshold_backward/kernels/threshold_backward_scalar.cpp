#include <cstring>

#include "gradkit/float_convert.h"
#include "ops/threshold_backward/kernels/threshold_backward_kernel.h"

namespace gradkit::kernels {
namespace {

// Integers keep the gradient where self > threshold (or everywhere when the threshold lies below the type).
template <class T>
void keepAbove(const T* grad, int64_t gradStride, const T* self, int64_t selfStride, T* out, int64_t n,
               const ThresholdValue& threshold) {
  const bool all = threshold.keepAll;
  const auto t = static_cast<T>(threshold.asInt);
  for (int64_t i = 0; i < n; ++i) out[i] = (all || self[i * selfStride] > t) ? grad[i * gradStride] : T(0);
}

// Floats keep it where !(float(self) <= threshold): above the threshold, a NaN self, or a NaN threshold.
template <class T, class Widen>
void keepNotAtMost(const T* grad, int64_t gradStride, const T* self, int64_t selfStride, T* out, int64_t n,
                   float threshold, Widen widen) {
  for (int64_t i = 0; i < n; ++i) out[i] = !(widen(self[i * selfStride]) <= threshold) ? grad[i * gradStride] : T(0);
}

}  // namespace

void thresholdBackwardScalar(aclDataType dtype, const void* gradOutput, int64_t gradStride, const void* self,
                             int64_t selfStride, void* out, int64_t n, const ThresholdValue& threshold) {
  switch (dtype) {
    case ACL_FLOAT:
      return keepNotAtMost(static_cast<const float*>(gradOutput), gradStride, static_cast<const float*>(self),
                           selfStride, static_cast<float*>(out), n, threshold.asFloat, [](float v) { return v; });
    case ACL_FLOAT16:  // widening fp16/bf16 to float is exact
      return keepNotAtMost(static_cast<const uint16_t*>(gradOutput), gradStride, static_cast<const uint16_t*>(self),
                           selfStride, static_cast<uint16_t*>(out), n, threshold.asFloat, halfToFloat);
    case ACL_BF16:
      return keepNotAtMost(static_cast<const uint16_t*>(gradOutput), gradStride, static_cast<const uint16_t*>(self),
                           selfStride, static_cast<uint16_t*>(out), n, threshold.asFloat, bf16ToFloat);
    case ACL_INT8:
      return keepAbove(static_cast<const int8_t*>(gradOutput), gradStride, static_cast<const int8_t*>(self), selfStride,
                       static_cast<int8_t*>(out), n, threshold);
    case ACL_UINT8:
      return keepAbove(static_cast<const uint8_t*>(gradOutput), gradStride, static_cast<const uint8_t*>(self),
                       selfStride, static_cast<uint8_t*>(out), n, threshold);
    case ACL_INT32:
      return keepAbove(static_cast<const int32_t*>(gradOutput), gradStride, static_cast<const int32_t*>(self),
                       selfStride, static_cast<int32_t*>(out), n, threshold);
    case ACL_INT64:
      return keepAbove(static_cast<const int64_t*>(gradOutput), gradStride, static_cast<const int64_t*>(self),
                       selfStride, static_cast<int64_t*>(out), n, threshold);
    default:
      return;  // the check rejects every other dtype before a kernel runs
  }
}

const ThresholdBackwardKernels kThresholdBackwardScalarKernels{
    [](aclDataType dtype, const void* gradOutput, int64_t gradStride, const void* self, int64_t selfStride, void* out,
       int64_t n, const ThresholdValue& threshold, bool /*streamStores*/) {
      thresholdBackwardScalar(dtype, gradOutput, gradStride, self, selfStride, out, n, threshold);
    }};

}  // namespace gradkit::kernels
