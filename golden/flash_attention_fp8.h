// Golden FP8 flash attention (spec fag.md 5.9: fp8_e5m2 / fp8_e4m3fn inputs with per-128-row-block de-quant scales),
// written from the spec's quantise / de-quantise chains, never from the kernels. It shares the problem description,
// the canonical tensor order, the mask / pse / dropout rules and the output structs of golden/flash_attention.h
// (read that header first); the arithmetic is double, the fp8 casts are correctly rounded from the double values.
//
// How a caller builds an FP8 case (what the op, aclnnFlashAttentionScoreGradV4, receives):
//  1. Draw q, k, v, dy as float tensors in canonical order (q, dy: [qRows][dim]; k, v: [kvRows][dim]).
//  2. Quantise each per (batch, head) and 128-row block (spec 5.9 get_block_quant_scale), all in float32:
//       scale = fp8Max(format) / max|x| over the block's rows x all dim columns
//       x_q   = fp8(x * scale)        (round to nearest even, the format's overflow rule)
//       dScale = 1 / scale            (the de-quant scale the op takes)
//     fp8QuantizeQuerySide (q, dy) and fp8QuantizeKeySide (k, v) do exactly this and return the fp8 bytes (what the
//     op's FLOAT8 tensor holds, canonical order), their values as floats, and dScale in [B][N][ceil(S/128)] order,
//     which is the content of the op's dScaleQ / dScaleDy [B, N1, ceil(S1/128), 1] and dScaleK / dScaleV
//     [B, N2, ceil(S2/128), 1]. Unlike upstream (scale = inf, then NaN), an all-zero block gets scale 1.
//  3. The forward: flashAttentionFp8Forward gives out, softmaxMax, softmaxSum (double). The op receives
//     attentionIn = out rounded to its out dtype (outDtype 0: FLOAT16, 1: BFLOAT16) and the statistics as float32
//     [B, N1, S1, 8]; pass those same rounded values to flashAttentionFp8Backward. dScaleO: upstream fills it with
//     dScaleQ; gradkit checks its shape and does not read it (attentionIn is already de-quantised).
//  4. flashAttentionFp8Backward gives dq, dk, dv (double, unrounded); the op's outputs are them rounded to the out
//     dtype.
//
// The fp8 format of the intermediate casts (P_d and dS) is the inputs' format (the spec names one fp8 dtype per case).
// Rounding: RNE; e5m2 overflows to +-Inf, e4m3fn (no Inf) to NaN, as ml_dtypes / PyTorch casts do; the block scales
// keep every quantised magnitude at or below fp8Max, so no overflow happens on the chain itself.
#pragma once

#include <cstdint>
#include <vector>

#include "golden/flash_attention.h"

namespace gradkit::golden {

enum class Fp8Format { E5M2, E4M3FN };

inline constexpr int64_t kFp8BlockRows = 128;  // PER_BLOCK_SIZE: rows of a de-quant scale block (and dS columns)
inline constexpr double kFp8DsEpsilon = 1e-8;  // dS blocks with max |dS| below this get scale 0 (spec 5.9)

/** FP8_MAX: 57344 (e5m2) or 448 (e4m3fn). */
float fp8Max(Fp8Format format);

/** float -> fp8 bits: RNE; e5m2 overflow -> +-Inf, e4m3fn overflow, Inf -> NaN (0x7f / 0xff); NaN -> 0x7f | sign. */
uint8_t fp8Encode(Fp8Format format, float value);

/** fp8 bits -> float (exact). */
float fp8Decode(Fp8Format format, uint8_t bits);

/** The float rounded to the format and widened back (fp8Decode(fp8Encode(x))). */
float fp8Round(Fp8Format format, float value);

/** The double rounded once (correctly) to the format and widened back. */
double fp8RoundDouble(Fp8Format format, double value);

/** A tensor quantised in row blocks. */
struct Fp8Quantized {
  std::vector<uint8_t> codes;  // fp8 bits, same element order as the input
  std::vector<float> values;   // the codes decoded (quantised values, not de-quantised)
  std::vector<float> dScale;   // one de-quant scale (1 / scale) per block, in block order
};

/**
 * One [rows][cols] slab quantised in blocks of `blockRows` rows (the last block may be shorter), float32 arithmetic:
 * scale = fp8Max / max|x| over the block (1 when max|x| == 0), x_q = fp8(x * scale), dScale = 1 / scale.
 */
Fp8Quantized fp8QuantizeRowBlocks(Fp8Format format, const float* x, int64_t rows, int64_t cols,
                                  int64_t blockRows = kFp8BlockRows);

/**
 * A query-side tensor of `problem` (q or dy, canonical [qRows][dim]) quantised per (b, n1) and 128-row block of S1_b.
 * dScale: [B][N1][ceil(maxS1 / 128)] (blocks past a batch's rows stay 1); codes / values in canonical order.
 */
Fp8Quantized fp8QuantizeQuerySide(const FlashAttentionProblem& problem, Fp8Format format, const float* x, int64_t dim);

/** The same for a key-side tensor (k or v, canonical [kvRows][dim]): per (b, n2); dScale [B][N2][ceil(maxS2/128)]. */
Fp8Quantized fp8QuantizeKeySide(const FlashAttentionProblem& problem, Fp8Format format, const float* x, int64_t dim);

/** The number of 128-row blocks of a side: ceil(max_b S_b / 128). */
int64_t fp8Blocks(const std::vector<int64_t>& rowsPerBatch);

/** FP8 inputs: quantised values (fp8 values as floats, canonical order) and their de-quant scales. */
struct FlashAttentionFp8Inputs {
  Fp8Format format = Fp8Format::E5M2;
  const float* q = nullptr;        // [qRows][D]
  const float* k = nullptr;        // [kvRows][D]
  const float* v = nullptr;        // [kvRows][D_V]
  const float* dScaleQ = nullptr;  // [B][N1][ceil(maxS1/128)]
  const float* dScaleK = nullptr;  // [B][N2][ceil(maxS2/128)]
  const float* dScaleV = nullptr;  // [B][N2][ceil(maxS2/128)]
};

struct FlashAttentionFp8GradInputs {
  FlashAttentionFp8Inputs tensors;
  const float* dy = nullptr;            // [qRows][D_V] fp8 values
  const float* dScaleDy = nullptr;      // [B][N1][ceil(maxS1/128)]
  const double* attentionIn = nullptr;  // [qRows][D_V] as the op receives it (fp16 / bf16 values)
  const double* softmaxMax = nullptr;   // [qRows] as the op receives them (float32 values)
  const double* softmaxSum = nullptr;   // [qRows]
};

/**
 * FP8 forward (spec 5.9): x = (q8 k8^T) * (dScaleQ[row block] * dScaleK[col block]); s, mask, softmax, statistics as
 * flashAttentionForward (fully masked rows included); P_d = P * keep / keepProb cast to fp8 without a scale;
 * out = sum over 128-column blocks of (P_d8[:, blk] v8[blk]) * dScaleV[blk]. No rope.
 */
FlashAttentionForwardOutputs<double> flashAttentionFp8Forward(const FlashAttentionProblem& problem,
                                                              const FlashAttentionFp8Inputs& in);

/**
 * FP8 backward (spec 5.9 "flash" branch), per (b, n1), with P = exp(s - m) / l from the given statistics (0 where
 * masked) and s from the de-quantised scores as in the forward:
 *   dv   = sum over S1 blocks of (P_d8^T[:, blk] dy8[blk]) * dScaleDy[blk]
 *   dp   = (dy8 v8^T) * dScaleDy[row blk] * dScaleV[col blk];  dp_d = dp * keep / keepProb
 *   Drow = rowsum(attentionIn o (dy8 * dScaleDy[row blk]));    ds = (dp_d - Drow) o P
 *   per 128 x 128 block of ds: scale = fp8Max / max|ds| (0 when max < 1e-8), ds8 = fp8(ds * scale),
 *   dsDeq = 1 / scale (0 when scale is 0)
 *   dq   = scale * sum over blocks of (ds8 k8) * dsDeq * dScaleK[col blk]
 *   dk   = scale * sum over blocks of (ds8^T q8) * dsDeq * dScaleQ[row blk]
 * dk and dv summed over the group's query heads. dqRope / dkRope come back empty.
 */
FlashAttentionGradOutputs<double> flashAttentionFp8Backward(const FlashAttentionProblem& problem,
                                                            const FlashAttentionFp8GradInputs& in);

}  // namespace gradkit::golden
