// The flash attention kernel tables: the tile product (TileGemm) and the softmax of a score tile, forward (online:
// running max and sum) and backward (P from the given statistics). Two tables with the same bits: Highway (TileGemm's
// dispatched kernel; the softmax on x86 from AVX2 on, other targets run the scalar code) and the plain scalar
// reference (GRADKIT_FORCE_SCALAR=1).
//
// Numerics of both tables (element order inside a row matters only for the two reductions):
//   v        = x * scale                                   (fp32; masked scores are -Inf and stay -Inf)
//   row max  = max over 8 stripes (stripe k takes columns j = k mod 8, in column order, with
//              max(a, v) = (v > a or v is NaN) ? v : a, so a NaN score makes the max NaN and the row NaN), then
//              ((s0 s1)(s2 s3))((s4 s5)(s6 s7)) with the same max
//   row sum  = the same stripes and tree with +
//   exp      = faExp (fa_exp.h)
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>

#include "core/gemm_shape.h"
#include "ops/flash_attention/kernels/fa_kernel.h"

namespace gradkit::kernels {

/** Columns of the stripes of a row reduction. */
inline constexpr int kFaStripes = 8;

/**
 * One score tile in the forward, rows x cols at s (row r at s + r * ld). For each row: v = s * scale; the tile's row
 * max t; m' = max(m, t) (faMaxStep); when m' = -Inf (every score so far masked) p = 0 and
 * alpha = 1, else alpha = exp(m - m') and p = exp(v - m'); l = l * alpha + rowsum(p). p replaces s, m' and l are
 * written back, alpha is the factor the caller applies to the row's output accumulator.
 */
struct FaForwardRows {
  float* s = nullptr;
  int64_t ld = 0, rows = 0, cols = 0;
  float scale = 1.0f;
  float* rowMax = nullptr;    // [rows] running max m (in, out); -Inf before the first tile
  float* rowSum = nullptr;    // [rows] running sum l (in, out); 0 before the first tile
  float* rowAlpha = nullptr;  // [rows] out
};

/**
 * One score tile in the backward: P = exp(s * scale - m) / l with (m, l) the row's given statistics, 0 below FLT_MIN
 * (faFlushSubnormal); every P of a row with m == -FLT_MAX (a fully masked row) is 0. P replaces s.
 */
struct FaBackwardRows {
  float* s = nullptr;
  int64_t ld = 0, rows = 0, cols = 0;
  float scale = 1.0f;
  const float* rowMax = nullptr;  // [rows]
  const float* rowSum = nullptr;  // [rows]
};

/**
 * Bytes of the dropout's Philox4x32-7 stream (fa_semantics.h faPhiloxByte): blocks [firstBlock, firstBlock + blocks)
 * (counter = dropout.counterLow + block, key = dropout.key), 16 bytes each (words x, y, z, w, least significant byte
 * first) into out.
 */
using FaPhiloxBytesFn = void (*)(const FaDropout& dropout, uint64_t firstBlock, int64_t blocks, uint8_t* out);

struct FaKernelTable {
  /** One tile product on the calling thread through TileGemm (fp32 or bf16 operands, fp32 C). */
  void (*gemm)(const GemmShape& g, const void* a, const void* b, float* c, void* scratch);
  void (*forwardRows)(const FaForwardRows& tile);
  void (*backwardRows)(const FaBackwardRows& tile);
  void (*exp)(const float* x, float* y, int64_t count);  // faExp element-wise (for tests)
  FaPhiloxBytesFn philoxBytes;
  /** rows x cols fp32 values (row stride ld) rounded to bf16 bits at dst (row stride dstLd): floatToBf16 (nearest
   *  even, NaN kept quiet), what the native path feeds its products (P, dS). */
  void (*roundRowsToBf16)(const float* src, int64_t ld, int64_t rows, int64_t cols, uint16_t* dst, int64_t dstLd);
};

/** Highway kernels (dynamic dispatch). */
extern const FaKernelTable kFaSimdKernels;
/** The plain scalar reference. */
extern const FaKernelTable kFaScalarKernels;

/** The table the entry points use: scalar when GRADKIT_FORCE_SCALAR is set, else SIMD. */
const FaKernelTable& faKernels();

/** kFaSimdKernels.roundRowsToBf16: Highway on x86 from AVX2 on, else faRoundRowsToBf16 (fa_tile.h); same bits. */
void faRoundRowsToBf16Simd(const float* src, int64_t ld, int64_t rows, int64_t cols, uint16_t* dst, int64_t dstLd);

/** The scalar FaPhiloxBytesFn. */
void faPhiloxBytesScalar(const FaDropout& dropout, uint64_t firstBlock, int64_t blocks, uint8_t* out);

/** faExp on one float (the scalar kernels' exp). */
float faExpScalar(float x);

/**
 * 0 for |x| < FLT_MIN, else x (NaN stays): P / l and dS are flushed so that no subnormal reaches a tile product (Intel
 * cores take a microcode assist on every FMA that touches one).
 */
inline float faFlushSubnormal(float x) { return std::fabs(x) < FLT_MIN ? 0.0f : x; }

/** The stripe max step: max(a, v) = (v > a or v is NaN) ? v : a (a NaN stays: nothing compares greater). */
inline float faMaxStep(float a, float v) { return v > a || v != v ? v : a; }

/** The stripes' tree reductions, as defined above. */
inline float faReduceMax(const float* p) {
  return faMaxStep(faMaxStep(faMaxStep(p[0], p[1]), faMaxStep(p[2], p[3])),
                   faMaxStep(faMaxStep(p[4], p[5]), faMaxStep(p[6], p[7])));
}
inline float faReduceSum(const float* p) { return ((p[0] + p[1]) + (p[2] + p[3])) + ((p[4] + p[5]) + (p[6] + p[7])); }

namespace fa_detail {
// The scalar steps both tables share: the SIMD kernels run full groups of 8 columns in vectors, then these on the
// rest of the row (column `from` on, `from` a multiple of 8) with their stripes stored in `part`.

/** v = s * scale written back, part[j % 8] = max(part[j % 8], v), for columns [from, cols). */
void scaleMaxTail(float* s, int64_t from, int64_t cols, float scale, float* part);
/** e = exp(s - m) written back, part[j % 8] += e, for columns [from, cols). */
void expSumTail(float* s, int64_t from, int64_t cols, float m, float* part);
/** P = exp(s * scale - m) / l written back for columns [from, cols). */
void backwardTail(float* s, int64_t from, int64_t cols, float scale, float m, float l);
/** The forward row update from the tile's max t: returns m' (writes alpha); see FaForwardRows. */
float newRowMax(float m, float t, float* alpha);

}  // namespace fa_detail

}  // namespace gradkit::kernels
