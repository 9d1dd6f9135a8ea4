// MhcPreBackward kernels on dense buffers (spec mhc.md 3.4). They know nothing about aclTensor: the plan hands them
// rows of x-dtype (FLOAT16 or BF16) and fp32 data. Each kernel is single-threaded and deterministic; the SIMD and the
// scalar table need not agree bit for bit (the h_pre gradient sums in another order), only closely; the two matmul
// kernels agree bit for bit on targets with fused multiply-add.
#pragma once

#include <cstdint>

#include "acl/acl_base.h"

namespace gradkit::kernels {

/**
 * The h_pre gradient of one token: gPre[i] = sum_d gin[d] * x[i * hidden + d] for i < streams, in fp32 (x and gin
 * of `dtype`, widened exactly).
 */
using MhcStreamDotsFn = void (*)(aclDataType dtype, const void* x, const void* gin, int64_t streams, int64_t hidden,
                                 float* gPre);

/**
 * Stages the matmul input of a block: xg[r * ldxg + c] = float(x[r * ldx + c]) * gamma[c] (gamma null: times 1,
 * i.e. the exact value), rounded with roundToHf32 when `hf32`, for r < rows, c < cols. x of `dtype`, ldx in elements.
 */
using MhcStageXgFn = void (*)(aclDataType dtype, const void* x, int64_t ldx, const float* gamma, int64_t rows,
                              int64_t cols, bool hf32, float* xg, int64_t ldxg);

/** One row segment of grad_x, all inside one stream (inputs of `dtype` unless stated). */
struct MhcGradXRow {
  const void* x;          // [n] the token's x from the segment's first column
  const void* gin;        // [n] gradHIn of the token from the segment's first d
  float hPre;             // hPre[t, stream] (with hc_eps)
  float rmsCoef;          // -g_r * r^3 / K of the token
  const float* dxg;       // [n] dm . phi, fp32
  const float* gamma;     // [n] fp32, or null (ones)
  const void* gradXPost;  // [n], or null (zeros)
  void* gradX;            // [n] output
  float* gammaSum;        // [n] fp32: += x * dxg per column, or null (no gamma)
};

/**
 * gradX[c] = RNE_dtype(((gin[c] * hPre + x[c] * rmsCoef) + gamma[c] * dxg[c]) + gradXPost[c]) for c < n, each product
 * and sum rounded to fp32 on its own (no fused multiply-add); gammaSum[c] += x[c] * dxg[c] when gammaSum is given.
 * gradX may alias x or gradXPost exactly (each element is read before it is written).
 */
using MhcGradXRowFn = void (*)(aclDataType dtype, const MhcGradXRow& row, int64_t n);

/**
 * dxg[r * ldDxg + c] = sum_f dm[r * fusion + f] * phi[f * ldPhi + c] for r < rows, c < cols: per element one fused
 * multiply-add chain over f ascending, from 0.
 */
using MhcDxgBlockFn = void (*)(const float* dm, int64_t fusion, int64_t rows, const float* phi, int64_t ldPhi,
                               int64_t cols, float* dxg, int64_t ldDxg);

/**
 * The grad_phi contribution of a token block, Kahan-added: for f < fusion, c < cols, p = sum_r dm[r * fusion + f] *
 * xg[r * ldXg + c] (one fused multiply-add chain over r ascending, from 0), then y = p - comp, t = sum + y,
 * comp = (t - sum) - y, sum = t with sum = gradPhi[f * ldPhi + c] and comp = comp[f * ldPhi + c].
 */
using MhcPhiGradBlockFn = void (*)(const float* dm, int64_t fusion, int64_t rows, const float* xg, int64_t ldXg,
                                   int64_t cols, float* gradPhi, float* comp, int64_t ldPhi);

/** The kernels a plan runs with, chosen once (core/kernel_select.h). */
struct MhcPreBackwardKernels {
  MhcStreamDotsFn streamDots;
  MhcStageXgFn stageXg;
  MhcGradXRowFn gradXRow;
  MhcDxgBlockFn dxgBlock;
  MhcPhiGradBlockFn phiGradBlock;
};
extern const MhcPreBackwardKernels kMhcPreBackwardSimdKernels;
extern const MhcPreBackwardKernels kMhcPreBackwardScalarKernels;

/** The scalar kernels (the scalar table; also the SIMD table's fallback where a target cannot convert exactly). */
void mhcStreamDotsScalar(aclDataType dtype, const void* x, const void* gin, int64_t streams, int64_t hidden,
                         float* gPre);
void mhcStageXgScalar(aclDataType dtype, const void* x, int64_t ldx, const float* gamma, int64_t rows, int64_t cols,
                      bool hf32, float* xg, int64_t ldxg);
void mhcGradXRowScalar(aclDataType dtype, const MhcGradXRow& row, int64_t n);
void mhcDxgBlockScalar(const float* dm, int64_t fusion, int64_t rows, const float* phi, int64_t ldPhi, int64_t cols,
                       float* dxg, int64_t ldDxg);
void mhcPhiGradBlockScalar(const float* dm, int64_t fusion, int64_t rows, const float* xg, int64_t ldXg, int64_t cols,
                           float* gradPhi, float* comp, int64_t ldPhi);

}  // namespace gradkit::kernels
