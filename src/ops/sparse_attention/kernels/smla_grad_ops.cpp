// The scalar reference of the sparse MLA backward's steps (smla_grad_ops.h); the Highway table is in
// smla_grad_ops_hwy.cpp.
#include "ops/sparse_attention/kernels/smla_grad_ops.h"

#include "core/kernel_select.h"
#include "core/tile_gemm_rows_add.h"
#include "ops/flash_attention/kernels/fa_run.h"
#include "ops/flash_attention/kernels/fa_softmax.h"
#include "ops/flash_attention/kernels/fa_tile.h"
#include "ops/sparse_attention/kernels/smla_operands.h"

namespace gradkit::kernels {
namespace {

/** sum_j term(j) in flash attention's row-sum order: stripe k takes the terms j = k mod 8 in order, then the tree. */
template <class Term>
float stripedSum(int64_t count, const Term& term) {
  float part[kFaStripes] = {};
  int64_t j = 0;
  for (; j + kFaStripes <= count; j += kFaStripes) {  // blocks of 8 keep the stripes in registers (same bits)
    for (int k = 0; k < kFaStripes; ++k) part[k] += term(j + k);
  }
  for (int k = 0; j < count; ++j, ++k) part[k] += term(j);
  return faReduceSum(part);
}

float scoreGradientsScalar(const float* p, float* dp, int64_t keys, float d) {
  const float sum = stripedSum(keys, [&](int64_t j) { return p[j] * dp[j]; });
  for (int64_t j = 0; j < keys; ++j) dp[j] = faFlushSubnormal(p[j] * (dp[j] - d));
  return sum;
}

float ioDotScalar(aclDataType ioType, const uint16_t* x, const uint16_t* y, int64_t count) {
  return stripedSum(count, [&](int64_t j) { return smlaIoToFloat(ioType, x[j]) * smlaIoToFloat(ioType, y[j]); });
}

void keyGradientsScalar(const GemmShape& first, const void* a1, const void* b1, const GemmShape& second, const void* a2,
                        const void* b2, float* const* rows, float* tile, void*) {
  const TileGemmRowsAdd sum(first, second);  // the shapes of its composition, run by the scalar products
  faRunGemmScalar(sum.firstIntoTile(), a1, b1, tile, nullptr);
  faRunGemmScalar(sum.secondIntoTile(), a2, b2, tile, nullptr);
  for (int64_t r = 0; r < first.m; ++r) {
    for (int64_t j = 0; j < first.n; ++j) rows[r][j] += tile[r * first.n + j];
  }
}

void roundToIoScalar(aclDataType ioType, const float* src, int64_t count, uint16_t* dst) {
  for (int64_t e = 0; e < count; ++e) dst[e] = smlaFloatToIo(ioType, src[e]);
}

}  // namespace

const SmlaGradOps kSmlaGradScalarOps{scoreGradientsScalar, ioDotScalar, keyGradientsScalar, roundToIoScalar,
                                     faRoundRowsToBf16};

size_t smlaKeyGradientsScratchBytes(const GemmShape& first, const GemmShape& second) {
  return TileGemmRowsAdd(first, second).scratchBytes();
}

const SmlaGradOps& smlaGradOps() { return chooseKernels(kSmlaGradSimdOps, kSmlaGradScalarOps); }

}  // namespace gradkit::kernels
