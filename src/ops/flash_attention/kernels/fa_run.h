// The tile products of the flash attention kernels (a schedule's kernel table picks faRunGemm or faRunGemmScalar).
#pragma once

#include <cstddef>
#include <cstdint>

#include "ops/flash_attention/kernels/fa_kernel.h"
#include "ops/flash_attention/kernels/fa_softmax.h"

namespace gradkit::kernels {

/** Runs `g` through TileGemm (scratch: faGemmScratchBytes of the same or a larger shape); kFaSimdKernels.gemm. */
void faRunGemm(const GemmShape& g, const void* a, const void* b, float* c, void* scratch);

/** Runs `g` with TileGemm's scalar reference (same bits, no scratch); kFaScalarKernels.gemm. */
void faRunGemmScalar(const GemmShape& g, const void* a, const void* b, float* c, void* scratch);

/** TileGemm's scratch for `g`. */
size_t faGemmScratchBytes(const GemmShape& g);

/** The operands of the problem's tile products: BF16 with the path's sums on the native path, else FLOAT. */
struct FaOperands {
  aclDataType type = ACL_FLOAT;
  GemmSums sums = GemmSums::Sequential;
};

inline FaOperands faOperands(const FaProblem& p) {
  if (p.tilePath != TilePath::NativeBf16) return {};
  return {ACL_BF16, p.tileSums};
}

/** The operand type of the problem's tile products. */
inline aclDataType faProductType(const FaProblem& p) { return faOperands(p).type; }

/** A tile product C[m, n] (+)= op(A) op(B) of `operands` (accumulate: beta 1, else 0). */
inline GemmShape faProduct(int64_t m, int64_t n, int64_t k, bool transA, bool transB, int64_t lda, int64_t ldb,
                           int64_t ldc, FaOperands operands, bool accumulate) {
  return {m, n, k, transA, transB, lda, ldb, ldc, operands.type, 1.0f, accumulate ? 1.0f : 0.0f, operands.sums};
}

}  // namespace gradkit::kernels
