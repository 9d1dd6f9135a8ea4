// The one description of a matrix product, shared by Gemm (big, threaded), TileGemm (one tile on the calling
// thread) and the kernels that call them: C[M,N] (fp32) = alpha * op(A)[M,K] * op(B)[K,N] + beta * C.
#pragma once

#include <cstdint>
#include <string>

#include "acl/acl_base.h"

namespace gradkit {

/**
 * The order of a product's sums.
 *   Sequential  acc = fma(a(i,k), b(k,j), acc) for k ascending, from 0 (every TileGemm kernel; Gemm's oneDNN kernels
 *               keep their own order).
 *   Bf16Pairs   bf16 operands, TileGemm only: k in pairs (2p, 2p+1), K padded with one zero to even; per pair
 *               acc = ftz(fma(a(i,2p+1), b(2p+1,j), acc)), then acc = ftz(fma(a(i,2p), b(2p,j), acc)), with bf16
 *               subnormals read as zero and ftz flushing fp32 subnormals to a zero of their sign: what AVX512-BF16's
 *               VDPBF16PS computes (Intel's definition; measured identical on AMD Zen 5), so its kernel and the
 *               scalar emulation give the same bits.
 */
enum class GemmSums { Sequential, Bf16Pairs };

struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  bool transA = false;                // A stored [K, M] row-major (element (i, k) at a[k * lda + i]) when true
  bool transB = false;                // B stored [N, K] row-major (element (k, j) at b[j * ldb + k]) when true
  int64_t lda = 0, ldb = 0, ldc = 0;  // leading dims in elements; 0 = dense
  aclDataType inputType = ACL_FLOAT;  // ACL_FLOAT or ACL_BF16 (A and B alike, BF16 as raw uint16 bits); C is fp32
  float alpha = 1.0f, beta = 0.0f;
  GemmSums sums = GemmSums::Sequential;
};

/**
 * Fills the dense leading dims (those given as 0) and returns what is wrong with the shape ("" when nothing):
 * negative sizes, an input type other than FLOAT / BF16, a leading dim shorter than its stored row, Bf16Pairs sums
 * of FLOAT operands.
 */
std::string completeGemmShape(GemmShape& shape);

/** Elements of A and B (as stored, with their leading dims) that the product reads; 0 for an empty product. */
int64_t gemmExtentA(const GemmShape& shape);
int64_t gemmExtentB(const GemmShape& shape);

}  // namespace gradkit
