// MhcPreBackward kernels on dense buffers (spec mhc.md 3.4). They know nothing about aclTensor: the plan hands them
// rows of x-dtype (FLOAT16 or BF16) and fp32 data. Each kernel is single-threaded and deterministic; the SIMD and the
// scalar table need not agree bit for bit (the h_pre gradient sums in another order), only closely; the segment
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
 * Columns of a block strip, at most: the fused kernel computes one strip of every token of a block at a time (the
 * SIMD kernel's strips are 16 or, on AVX-512, 32 columns wide; xgStrip is booked for the widest).
 */
inline constexpr int64_t kMhcStripColumns = 32;

/**
 * Rows of a tile of dm in MhcColumnSegment::dmTiles: tile j holds dm[j * kMhcDmTileRows + i, f] at
 * (j * fusion + f) * kMhcDmTileRows + i. A multiple of the SIMD kernel's row tiles (6 rows on AVX2, 8 on AVX-512),
 * so that each of them finds one f's values of its rows side by side.
 */
inline constexpr int64_t kMhcDmTileRows = 24;

/** Where dm[row, f] lies in MhcColumnSegment::dmTiles (rows counted from a tile's start). */
constexpr int64_t mhcDmTileIndex(int64_t row, int64_t f, int64_t fusion) {
  return (row / kMhcDmTileRows * fusion + f) * kMhcDmTileRows + row % kMhcDmTileRows;
}

/**
 * Rows of memory the next block will read or write, for a kernel to prefetch the first lines of while it ends a
 * segment (rows of a block lie a whole token apart, a pattern the hardware prefetchers do not follow). A hint only.
 */
struct MhcPrefetchRows {
  static constexpr int kRegions = 4;
  const unsigned char* at[kRegions] = {};  // row 0 of each region, or null
  int64_t ld[kRegions] = {};               // bytes from one row to the next
  int64_t bytes[kRegions] = {};            // bytes of a row
  bool write[kRegions] = {};               // the block writes the region
  int64_t rows = 0;
};

/**
 * One column segment of a token block, all its columns inside one stream (inputs of `dtype` unless stated). Row r
 * is token t0 + r of the block; pointers are at row 0 and the segment's first column.
 */
struct MhcColumnSegment {
  int64_t rows = 0;                 // tokens of the block
  int64_t cols = 0;                 // columns of the segment
  int64_t fusion = 0;               // F
  const float* dm = nullptr;        // [rows, fusion] dm (HF32-rounded in mode 1)
  const float* dmTiles = nullptr;   // the same values in tiles of kMhcDmTileRows rows (row 0 starts a tile)
  const float* rmsCoef = nullptr;   // [rows] -g_r * r^3 / K
  const float* hPre = nullptr;      // hPre[t0, stream]; row r at hPre[r * ldHPre] (with hc_eps)
  int64_t ldHPre = 0;               // streams
  const float* phi = nullptr;       // [fusion, ldPhi] phi's columns (HF32-rounded in mode 1)
  int64_t ldPhi = 0;                // leading dim of phi, phiSum and phiComp
  const void* x = nullptr;          // row r at x + r * ldx elements
  int64_t ldx = 0;                  // K: the leading dim of x, gradXPost and gradX
  const void* gin = nullptr;        // gradHIn at the segment's first d; row r at gin + r * ldGin elements
  int64_t ldGin = 0;                // hidden
  const float* gamma = nullptr;     // [cols] fp32, or null (ones)
  const void* gradXPost = nullptr;  // or null (zeros)
  void* gradX = nullptr;            // output
  float* gammaSum = nullptr;        // [cols] fp32: += x * dxg per token in row order, or null (no gamma)
  float* phiSum = nullptr;          // [fusion, ldPhi] grad_phi running sums, Kahan-added
  float* phiComp = nullptr;         // [fusion, ldPhi] their compensations
  float* xgStrip = nullptr;         // [rows, kMhcStripColumns] fp32 scratch
  bool hf32 = false;                // opImplMode 1: x * gamma rounded to HF32 as a matmul operand
  MhcPrefetchRows next;             // the next block's rows, their first lines prefetched (SIMD kernel only)
};

/**
 * Pass 2 on one segment, strip by strip (kMhcStripColumns columns): for r < rows, c < cols
 *  - dxg = sum_f dm[r, f] * phi[f, c]: one fused multiply-add chain over f ascending, from 0;
 *  - gradX[r, c] = RNE_dtype(((gin[r, c] * hPre[r] + x[r, c] * rmsCoef[r]) + gamma[c] * dxg) + gradXPost[r, c]),
 *    each product and sum rounded to fp32 on its own (no fused multiply-add); gradX may alias gradXPost exactly;
 *  - gammaSum[c] += x[r, c] * dxg (rows in order) when gammaSum is given;
 *  - xg = x[r, c] * gamma[c] (rounded with roundToHf32 when hf32), and for f < fusion: p = sum_r dm[r, f] * xg (one
 *    fused multiply-add chain over r ascending, from 0), Kahan-added: y = p - comp, t = sum + y,
 *    comp = (t - sum) - y, sum = t with sum = phiSum[f * ldPhi + c], comp = phiComp[f * ldPhi + c].
 */
using MhcSegmentFn = void (*)(aclDataType dtype, const MhcColumnSegment& segment);

/** The kernels a plan runs with, chosen once (core/kernel_select.h). */
struct MhcPreBackwardKernels {
  MhcStreamDotsFn streamDots;
  MhcSegmentFn segment;
};
extern const MhcPreBackwardKernels kMhcPreBackwardSimdKernels;
extern const MhcPreBackwardKernels kMhcPreBackwardScalarKernels;

/** The scalar kernels (the scalar table; also the SIMD table's fallback where a target cannot convert exactly). */
void mhcStreamDotsScalar(aclDataType dtype, const void* x, const void* gin, int64_t streams, int64_t hidden,
                         float* gPre);
void mhcSegmentScalar(aclDataType dtype, const MhcColumnSegment& segment);

}  // namespace gradkit::kernels
