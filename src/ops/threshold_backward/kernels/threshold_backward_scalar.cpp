#include <cmath>
#include <cstring>

#include "gradkit/float_convert.h"
#include "ops/threshold_backward/kernels/threshold_backward_kernel.h"

namespace gradkit::kernels {
namespace {

// Integers keep the gradient where self > 0.
template <class T>
void keepPositive(const T* grad, const T* self, T* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = self[i] > T(0) ? grad[i] : T(0);
}

// Floats keep it where self > 0 or self is NaN, i.e. where !(self <= 0). Widening fp16/bf16 is exact.
template <class Widen>
void keepPositiveOrNan16(const uint16_t* grad, const uint16_t* self, uint16_t* out, int64_t n, Widen widen) {
  for (int64_t i = 0; i < n; ++i) out[i] = !(widen(self[i]) <= 0.0f) ? grad[i] : uint16_t(0);
}

}  // namespace

void thresholdBackwardScalar(aclDataType dtype, const void* gradOutput, const void* self, void* out, int64_t n) {
  switch (dtype) {
    case ACL_FLOAT: {
      const auto* g = static_cast<const float*>(gradOutput);
      const auto* s = static_cast<const float*>(self);
      auto* o = static_cast<float*>(out);
      for (int64_t i = 0; i < n; ++i) o[i] = !(s[i] <= 0.0f) ? g[i] : 0.0f;
      return;
    }
    case ACL_FLOAT16:
      return keepPositiveOrNan16(static_cast<const uint16_t*>(gradOutput), static_cast<const uint16_t*>(self),
                                 static_cast<uint16_t*>(out), n, halfToFloat);
    case ACL_BF16:
      return keepPositiveOrNan16(static_cast<const uint16_t*>(gradOutput), static_cast<const uint16_t*>(self),
                                 static_cast<uint16_t*>(out), n, bf16ToFloat);
    case ACL_INT8:
      return keepPositive(static_cast<const int8_t*>(gradOutput), static_cast<const int8_t*>(self),
                          static_cast<int8_t*>(out), n);
    case ACL_UINT8:
      return keepPositive(static_cast<const uint8_t*>(gradOutput), static_cast<const uint8_t*>(self),
                          static_cast<uint8_t*>(out), n);
    case ACL_INT32:
      return keepPositive(static_cast<const int32_t*>(gradOutput), static_cast<const int32_t*>(self),
                          static_cast<int32_t*>(out), n);
    case ACL_INT64:
      return keepPositive(static_cast<const int64_t*>(gradOutput), static_cast<const int64_t*>(self),
                          static_cast<int64_t*>(out), n);
    default:
      return;  // the check rejects every other dtype before a kernel runs
  }
}

}  // namespace gradkit::kernels
