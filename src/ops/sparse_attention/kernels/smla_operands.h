// The product operands of sparse MLA attention's tiles: FLOAT16 / BFLOAT16 io values as BF16 operands on the native
// tile path (bits copied: the native path runs only for BF16 inputs) or widened exactly to fp32 elsewhere, and fp32
// results rounded once to the io dtype. Shared by the forward and backward kernels.
#pragma once

#include <cstdint>
#include <cstring>

#include "acl/acl_base.h"
#include "gradkit/float_convert.h"

namespace gradkit::kernels {

/** Bytes of one product operand. */
inline int64_t smlaOperandBytes(aclDataType productType) { return productType == ACL_BF16 ? 2 : 4; }

/** One io element widened exactly. */
inline float smlaIoToFloat(aclDataType ioType, uint16_t v) {
  return ioType == ACL_BF16 ? bf16ToFloat(v) : halfToFloat(v);
}

/** An fp32 value rounded once (nearest even) to the io dtype. */
inline uint16_t smlaFloatToIo(aclDataType ioType, float v) {
  return ioType == ACL_BF16 ? floatToBf16(v) : floatToHalf(v);
}

/** `count` io elements at src as product operands at dst. */
inline void smlaLoadOperands(aclDataType ioType, aclDataType productType, const void* src, int64_t count, void* dst) {
  const auto* in = static_cast<const uint16_t*>(src);
  if (productType == ACL_BF16) {
    std::memcpy(dst, in, static_cast<size_t>(count) * 2);
    return;
  }
  auto* out = static_cast<float*>(dst);
  for (int64_t e = 0; e < count; ++e) out[e] = smlaIoToFloat(ioType, in[e]);
}

/** An fp32 value as a product operand (rounded to bf16 on the native path). */
inline void smlaStoreOperand(aclDataType productType, float v, void* base, int64_t index) {
  if (productType == ACL_BF16) {
    static_cast<uint16_t*>(base)[index] = floatToBf16(v);
  } else {
    static_cast<float*>(base)[index] = v;
  }
}

}  // namespace gradkit::kernels
