// The steps of the sparse MLA backward around its score and dq products, as a kernel table: Highway (dispatched per
// CPU; x86 from AVX2 on) and the plain scalar reference. Every SIMD step computes the scalar step's operations in the
// scalar step's order (the row sums in flash attention's 8 stripes, one vector lane per stripe; the key gradients as
// TileGemmRowsAdd defines them), so the two tables give the same bits.
#pragma once

#include <cstddef>
#include <cstdint>

#include "acl/acl_base.h"
#include "core/gemm_shape.h"

namespace gradkit::kernels {

struct SmlaGradOps {
  /**
   * One head's draw: returns sum_j p[j] dp[j] (8 stripes, faReduceSum) and replaces dp by dS = flush(p (dp - d))
   * (faFlushSubnormal), j < keys.
   */
  float (*scoreGradients)(const float* p, float* dp, int64_t keys, float d);
  /** sum_j x[j] y[j] of two FLOAT16 / BFLOAT16 rows widened exactly (8 stripes, faReduceSum): D = rowsum(dO * O). */
  float (*ioDot)(aclDataType ioType, const uint16_t* x, const uint16_t* y, int64_t count);
  /**
   * The keys' gradient rows: rows[r] += first + second (TileGemmRowsAdd's sum of alpha1 op(A1) op(B1) and alpha2
   * op(A2) op(B2)), r < first.m in order; `tile` holds first.m x first.n floats, `scratch`
   * smlaKeyGradientsScratchBytes.
   */
  void (*keyGradients)(const GemmShape& first, const void* a1, const void* b1, const GemmShape& second, const void* a2,
                       const void* b2, float* const* rows, float* tile, void* scratch);
  /** dst[e] = src[e] rounded once (nearest even) to the FLOAT16 / BFLOAT16 io dtype, e < count. */
  void (*roundToIo)(aclDataType ioType, const float* src, int64_t count, uint16_t* dst);
  /** rows x cols fp32 values (row stride ld) rounded to bf16 bits at dst (row stride dstLd), as faRoundRowsToBf16. */
  void (*roundRowsToBf16)(const float* src, int64_t ld, int64_t rows, int64_t cols, uint16_t* dst, int64_t dstLd);
};

/** Highway, dispatched per CPU (the scalar steps where a target has no 8-lane float vectors with FMA). */
extern const SmlaGradOps kSmlaGradSimdOps;
/** Plain C++, the reference. */
extern const SmlaGradOps kSmlaGradScalarOps;

/** Scratch bytes keyGradients needs for these products (either table). */
size_t smlaKeyGradientsScratchBytes(const GemmShape& first, const GemmShape& second);

/** The table a plan runs with: scalar when GRADKIT_FORCE_SCALAR is set, else SIMD. */
const SmlaGradOps& smlaGradOps();

}  // namespace gradkit::kernels
