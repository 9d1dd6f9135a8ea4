// The pieces of a sparse MLA key tile every kernel of the family shares (forward, softmax L1 norm): the product
// operands' size, the score product S = Q K^T of up to kSmlaKeyTile gathered keys as a TileGemm shape, its scratch,
// and loading 16-bit io values as product operands (bf16 bits copied on the native path, else widened exactly to fp32).
#pragma once

#include <algorithm>
#include <cstring>

#include "core/tile_gemm.h"
#include "gradkit/float_convert.h"
#include "ops/sparse_attention/kernels/smla_kernel.h"

namespace gradkit::kernels {

/** Bytes of one product operand element: 2 (bf16, the native path) or 4 (fp32). */
inline int64_t smlaOperandBytes(aclDataType productType) { return productType == ACL_BF16 ? 2 : 4; }

/** S[n1][keys] (ld kSmlaKeyTile) = Q[n1][d] K[keys][d]^T. */
inline GemmShape smlaScoreShape(const SmlaProblem& p, int64_t keys) {
  const aclDataType type = smlaProductType(p);
  return {p.n1, keys, p.d, false, true, p.d, p.d, kSmlaKeyTile, type, 1.0f, 0.0f, p.tileSums};
}

/** count 16-bit elements of `ioType` at src as product operands at dst (bf16 bits copied, else widened exactly). */
inline void smlaLoadOperands(aclDataType ioType, aclDataType productType, const void* src, int64_t count, void* dst) {
  const auto* in = static_cast<const uint16_t*>(src);
  if (productType == ACL_BF16) {  // the native path runs only for BF16 inputs
    std::memcpy(dst, in, static_cast<size_t>(count) * 2);
    return;
  }
  auto* out = static_cast<float*>(dst);
  if (ioType == ACL_BF16) {
    for (int64_t e = 0; e < count; ++e) out[e] = bf16ToFloat(in[e]);
  } else {
    for (int64_t e = 0; e < count; ++e) out[e] = halfToFloat(in[e]);
  }
}

/** Gathers the `keys` rows at rows[] as product operands into dst ([keys][d]). */
inline void smlaGatherKeys(const SmlaProblem& p, const void* const* rows, int64_t keys, void* dst) {
  const aclDataType type = smlaProductType(p);
  const int64_t keyBytes = p.d * smlaOperandBytes(type);
  for (int64_t r = 0; r < keys; ++r) {
    smlaLoadOperands(p.ioType, type, rows[r], p.d, static_cast<char*>(dst) + r * keyBytes);
  }
}

}  // namespace gradkit::kernels
