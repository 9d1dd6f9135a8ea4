// Scalar element access shared by the plain kernels of the mask-consuming dropout ops: read one fp32 / fp16 /
// bf16 element as float (exact), write a float rounded once to nearest even.
#pragma once

#include <cstdint>
#include <cstring>

#include "acl/acl_base.h"
#include "gradkit/float_convert.h"

namespace gradkit::kernels::masked {

/** Element i of a dense FLOAT / FLOAT16 / BF16 buffer, widened exactly (a NaN comes back quiet). */
inline float loadFloat(aclDataType dtype, const void* base, int64_t i) {
  if (dtype == ACL_FLOAT) {
    float value;
    std::memcpy(&value, static_cast<const float*>(base) + i, sizeof(value));
    return value;
  }
  uint16_t bits;
  std::memcpy(&bits, static_cast<const uint16_t*>(base) + i, sizeof(bits));
  return dtype == ACL_FLOAT16 ? halfToFloat(bits) : bf16ToFloat(bits);
}

/** Stores `value` as element i of a dense FLOAT / FLOAT16 / BF16 buffer (RNE; NaN stays NaN). */
inline void storeFloat(aclDataType dtype, void* base, int64_t i, float value) {
  if (dtype == ACL_FLOAT) {
    std::memcpy(static_cast<float*>(base) + i, &value, sizeof(value));
    return;
  }
  const uint16_t bits = dtype == ACL_FLOAT16 ? floatToHalf(value) : floatToBf16(value);
  std::memcpy(static_cast<uint16_t*>(base) + i, &bits, sizeof(bits));
}

}  // namespace gradkit::kernels::masked
