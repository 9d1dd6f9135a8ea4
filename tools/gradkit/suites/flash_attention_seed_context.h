// The seed's CalculationContext (spec fag.md 5.2): every input of one case generated once — standard normal q, k, v,
// dy from a fixed seed cast to the case dtype, the mask and pse built as spec 5.5 / 5.6 build them, the dropout named
// by its Philox seed / offset — and handed unchanged to both the golden and the operator; plus the golden itself:
// golden/flash_attention's fp64 forward and backward (upstream's golden is fp32; fp64 leaves the rounding to the
// operator alone).
//
// Values are kept in the golden's canonical order (golden/flash_attention.h: per batch [heads][rows][dim]); the
// operator's layout tensors are made from them with the suites' layout helpers (flash_attention_suite_common.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "acl/acl_base.h"
#include "golden/flash_attention.h"
#include "golden/flash_attention_fp8.h"
#include "suites/flash_attention_seed_case.h"

namespace gradkit::cli {

/** A tensor handed to the operator as it is, not through a layout (mask, pse). */
struct SeedPlainTensor {
  aclDataType dtype = ACL_FLOAT;
  std::vector<int64_t> shape;  // empty: the operator gets nullptr
  std::vector<double> values;  // dense, row-major, exact in dtype
};

/** One case's inputs, golden problem and golden results. */
struct SeedContext {
  SeedCase sc;
  FaCase fc;  // the layout the operator's tensors use
  // Canonical inputs, exact in the case dtype (FP8 cases: the fp32 values before quantisation).
  std::vector<double> q, k, v, dy;   // q, k with head dim dQk()
  std::vector<double> qRope, kRope;  // head dim dRope() (rope cases)
  SeedPlainTensor attenMask, pse;
  // FP8 cases (spec 5.9): q, k, v, dy quantised per (batch, head) and 128-row block (golden/flash_attention_fp8.h);
  // the operator gets their codes and de-quant scales, the golden their values.
  golden::Fp8Format fp8Format = golden::Fp8Format::E5M2;
  golden::Fp8Quantized fp8Q, fp8K, fp8V, fp8Dy;
  golden::FlashAttentionProblem problem;  // mask, pse, dropout of the case for the golden
  // The fp64 golden forward (out, statistics per query row), canonical order.
  golden::FlashAttentionForwardOutputs<double> forward;
  // The golden the cases are judged by: the fp64 backward (dq, dk, dv, rope parts) of the forward's out and
  // statistics rounded as the operator receives them (out to the case dtype, statistics to fp32), so that the
  // rounding of attention_in, which every backward inherits through Drow = rowsum(dy * attention_in), is on both
  // sides and only the backward's own arithmetic is measured.
  golden::FlashAttentionGradOutputs<double> grads;
  // The backward of the unrounded forward (upstream's golden chain), reported beside the verdict: against it an
  // exact backward of the rounded inputs already puts 0.85 % of TND_06's dq over the threshold.
  golden::FlashAttentionGradOutputs<double> chainGrads;
};

/** Generates every input of `sc` and its golden problem (no golden run yet). Throws HarnessError. */
SeedContext makeSeedContext(const SeedCase& sc);

/**
 * Runs the fp64 golden forward and both backwards on the context (fills forward, grads and chainGrads); FP8 cases
 * run golden/flash_attention_fp8's chain on the quantised inputs instead.
 */
void runSeedGolden(SeedContext& context);

/**
 * The keep bits ('1' kept, '0' dropped) the context's dropout gives the first `count` columns of row 0 of batch 0,
 * head 0: the stream's first bytes against its threshold (spec 3.5, 3.6).
 */
std::string seedFirstKeepBits(const SeedContext& context, int64_t count);

/** `value` rounded to `dtype` (round to nearest even; bool / integers as the harness stores them). */
double roundToDtype(aclDataType dtype, double value);

}  // namespace gradkit::cli
