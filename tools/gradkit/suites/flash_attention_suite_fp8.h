// The FP8 cases of the FlashAttentionScoreGrad suite (aclnnFlashAttentionScoreGradV4 with FLOAT8_E5M2 /
// FLOAT8_E4M3FN query, key, value and dy, spec fag.md 5.9): the inputs quantised with golden/flash_attention_fp8.h's
// helpers, the FP8 golden forward (attentionIn and the statistics the op receives) and backward read back from the
// case's own tensors, and the verdict. There is no naive FP8 computation for the double benchmark, so the gate is the
// one of tests/ops/test_flash_attention_fp8_values.cpp against the FP8 golden chain (both follow the same quantise /
// de-quantise steps; what differs is fp32 vs double arithmetic and the rare fp8 cast of P_d or dS on the other side
// of a rounding boundary), per output: relative L2 < 1e-3, max |diff| < 2 % of max |golden|, and at most 0.5 % of
// the elements over spec 5.11's threshold max(max(|a|, |b|) * 0.005, fp16(2.5e-5)).
#pragma once

#include <cstdint>

#include "harness/op_suite.h"
#include "suites/flash_attention_suite_common.h"
#include "suites/flash_attention_suite_judge.h"

namespace gradkit::cli {

/**
 * Draws float q, k, v, dy (uniform in [-2, 2), from the case's data seed), quantises each per (batch, head) and
 * 128-row block (fp8QuantizeQuerySide / KeySide) and writes the codes into query, key, value, dy and the de-quant
 * scales into dScaleQ, dScaleK, dScaleV, dScaleDy (dScaleO: dScaleQ, as upstream; the op does not read it).
 */
void writeFp8Inputs(OpCase& c, const FaCase& fc);

/** The FP8 golden forward (double) on the case's quantised tensors and scales, every head. */
FaForwardValues faFp8Forward(OpCase& c, const FaCase& fc);

/**
 * The FP8 golden backward (double, unrounded) on the first `heads` query heads (B = 1 and N1 = N2 when fewer than
 * N1), reading attentionIn and the statistics from the case's tensors as the op does.
 */
FaBackwardValues faFp8Backward(OpCase& c, const FaCase& fc, int64_t heads);

/** The verdict of the file comment on dq, dk, dv (row.passed, bitExact, errors; a note with the measured numbers). */
void faFp8Judge(OpCase& c, const FaCase& fc, const FaBackwardValues& golden, VerifyRow& row);

}  // namespace gradkit::cli
