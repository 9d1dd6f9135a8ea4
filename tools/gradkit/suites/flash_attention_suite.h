// The parts the FlashAttentionScore / FlashAttentionScoreGrad suites (flash_attention_suites.cpp) and the seed cases'
// runner (flash_attention_seed_case.cpp) share: the case (flash_attention_suite_case.cpp), its tensors and their
// canonical order (_tensors.cpp), the golden (_golden.cpp), the verdicts (_judge.cpp) and the entry points
// (_calls.cpp). FaCase is an ops::FaSizes: every layout shape, stride, statistics shape and TND length the suites use
// comes from the library's size model (ops/flash_attention/fa_layout.h).
//
// Case keys (besides name, dtype "fp32" | "fp16" | "bf16", seed, expect_status, expect_message, soc):
//   "layout":   "BNSD" (default) | "BSND" | "BSH" | "SBH" | "TND"
//   "B", "N1", "N2" (default N1), "S1", "S2" (default S1), "D", "DV" (default D): padded sizes; "D_rope" (0): the
//               rope head dim of queryRope, keyRope, dqRope, dkRope (tensors only the seed cases' suite has)
//   "seq_q", "seq_kv": TND per-batch lengths (B = their count; seq_kv defaults to seq_q); 0 allowed
//   "actual_seq_q", "actual_seq_kv", "T1", "T2": TND cumulative arrays and token counts as given (rejection cases)
//   "head_num": the headNum attribute (default N1)
//   "scale":    scaleValue (default 1/sqrt(D)); "keep_prob" (default 1)
//   "dropout":  "mask" (default when keep_prob < 1: the packed dropMask tensor, its bits the Philox4x32-7 stream of
//               drop_seed/drop_offset) | "philox" (no tensor: the V4 entry points draw it from seed/offset)
//   "drop_seed", "drop_offset": default 2, 0
//   "sparse_mode" (0), "pre_tokens", "next_tokens" (2147483647), "prefix": [B] (modes 5, 6)
//   "mask":     "none" | "SS" | "11SS" | "B1SS" | "BNSS" (a full [.., S1, S2] mask; TND: [maxS1, maxS2]) |
//               "template" (upstream's compressed template: [2048, 2048], mode 6 [3072, 2048]); default: template
//               for modes 2, 3, 4, 6, 7, 8, B1SS for mode 5, none for modes 0 and 1
//   "mask_dtype": "bool" (default) | "uint8"
//   "mask_values": "random" (density "mask_density", default 0.3; the default for modes 0, 1) | "causal_prefix"
//               (mode 5's triu(S2 - S1 + 1) with columns below prefix[b] cleared; its default) | "template" (the
//               template's upstream content; the default for templates) | "ones" (every element masked: a template
//               the op must ignore)
//   "pse_shape": "none" (default) | "BNSS" | "BN1S" | "1NSS" (random values) | "BNHS" | "1NHS" (the 1024-row ALiBi
//               table, constant along diagonals) | "BN" | "N" (FP32 slopes of pse types 2 and 3)
//   "pse_type": 1 (default; V1 entry points always 1), "q_start_idx", "kv_start_idx": [value] arrays when present
//   "inner_precise": 0; "softmax_layout": "" | "same_as_input" (VarLenScoreV4, UnpaddingScoreGradV4, V4)
//   "api":      the entry point: forward "Score", "ScoreV2" (padded default), "ScoreV4", "VarLenScore",
//               "VarLenScoreV2" (TND default), "VarLenScoreV4"; backward "Grad", "GradV2" (padded default),
//               "GradV4", "Unpadding", "UnpaddingV2" (TND default), "UnpaddingV4"
//   "null":     tensor keys passed as nullptr (rejection cases)
//   "auto":     backward only: our forward (the matching entry point) computes attentionIn and the statistics,
//               and the golden is the fp64 forward + backward chain; otherwise the fp64 golden forward's out and
//               statistics, rounded as the op takes them, are the inputs, so that only the backward is measured
//   "check_heads": bench only: golden-check the first this many query heads (B = 1, N1 = N2; 0: no check)
//   "peer":     bench only: false skips the PyTorch peer
//   "compare_to": bench only (backward): an earlier bench row's name; the note gives this row's time / that row's
//   FP8 (backward, GradV4 only, padded layouts, "soc": "Ascend950"): "dtype" "fp8_e5m2" | "fp8_e4m3fn" makes query,
//               key, value and dy FLOAT8 codes quantised per (batch, head) and 128-row block (spec fag.md 5.9) with
//               the de-quant scales "dScaleQ", "dScaleK", "dScaleV", "dScaleDy", "dScaleO" (FLOAT [B, N, ceil(S/128),
//               1]; dScaleO = dScaleQ, as upstream); "out_dtype" "fp16" (default) | "bf16" is the dtype of
//               attentionIn, dq, dk, dv and a pse table
// and a tensor spec per tensor key (views, dtypes, shapes): "query", "key", "value", "pse", "dropMask",
// "attenMask", "softmaxMax", "softmaxSum", forward "attentionOut", backward "dy", "attentionIn", "dq", "dk", "dv",
// FP8 "dScaleQ", "dScaleK", "dScaleV", "dScaleDy", "dScaleO".
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "golden/flash_attention.h"
#include "harness/op_suite.h"
#include "ops/flash_attention/fa_args.h"
#include "ops/flash_attention/fa_layout.h"

namespace gradkit::cli {

// The case (flash_attention_suite_case.cpp): its sizes are the size model's.
struct FaCase : ops::FaSizes {
  std::string layoutName = "BNSD";   // as passed to the op: a rejection case may name an unknown layout
  int64_t headNum = 1;               // the headNum attribute
  std::vector<int64_t> cumQ, cumKv;  // TND: the cumulative arrays as passed
  double scale = 0.25, keepProb = 1.0;
  std::string dropout = "none";  // "none" | "mask" | "philox"
  int64_t dropSeed = 2, dropOffset = 0;
  int64_t sparseMode = 0, preTokens = ops::kFaDefaultTokens, nextTokens = ops::kFaDefaultTokens;
  std::vector<int64_t> prefix;
  std::string mask = "none", maskValues = "random";
  aclDataType maskDtype = ACL_BOOL;
  double maskDensity = 0.3;
  std::string pse = "none";
  int64_t pseType = 1;
  std::vector<int64_t> qStartIdx, kvStartIdx;  // empty: not passed
  int64_t innerPrecise = 0;
  std::string softmaxLayout, api;
  std::vector<std::string> nulls;
  bool autoForward = false;
  int64_t checkHeads = -1;  // -1: every head
  bool peer = true;
  bool fp8 = false;                  // query, key, value, dy are FLOAT8 codes with de-quant scales
  aclDataType outDtype = ACL_FLOAT;  // FP8: attentionIn, dq, dk, dv (FLOAT16 | BF16); else the case dtype
  bool expectsRejection = false;     // expect_status != 0: the sizes may be inconsistent on purpose

  int64_t groups() const { return n2 > 0 ? n1 / n2 : 1; }
  bool hasMask() const { return mask != "none"; }
  bool hasPse() const { return pse != "none"; }
  bool slopes() const { return pse == "BN" || pse == "N"; }
  /** Query heads the golden check covers: every head, or check_heads (bench). */
  int64_t checkedHeads() const { return checkHeads < 0 ? n1 : std::min(checkHeads, n1); }
};

/** Parses the keys above; throws HarnessError naming a bad key. `backward` picks the default entry point. */
FaCase parseFaCase(const nlohmann::json& testCase, bool backward);

// The tensors (flash_attention_suite_tensors.cpp).
/** The rules of the forward or backward suite's tensors (with `rope`: queryRope, keyRope in, dqRope, dkRope out). */
std::vector<TensorRule> faTensorRules(bool backward, bool rope = false);
/** Writes the values the case derives rather than draws: mask content, the ALiBi table, the drop mask. */
void writeDerivedInputs(OpCase& c, const FaCase& fc);
/**
 * FP8: quantises canonical q, k, v, dy per (batch, head) and 128-row block into query, key, value, dy (codes) and
 * dScaleQ, dScaleK, dScaleV, dScaleDy (dScaleO = dScaleQ, as upstream; the op does not read it). Without values:
 * uniform in [-2, 2) from the case's data seed.
 */
void writeFp8Inputs(OpCase& c, const FaCase& fc, const std::array<std::vector<float>, 4>& qkvDy);
void writeFp8Inputs(OpCase& c, const FaCase& fc);
/** The tensor's aclTensor, or nullptr when the case leaves it out (absent optional, or listed in "null"). */
aclTensor* faTensor(OpCase& c, const FaCase& fc, const std::string& key);
/** The tensor's values in canonical order: before the run, or with `written` as the op left them. */
std::vector<double> canonicalValues(OpCase& c, const FaCase& fc, const std::string& key, bool written = false);
/** Canonical values of `key` with the dense element of each (statistics: repeated on all 8 lanes). */
struct FaOutput {
  std::string key;
  bool stats = false;
  std::vector<double> values;
  std::vector<int64_t> index;
};
FaOutput faOutput(const FaCase& fc, const std::string& key, const std::vector<double>& values);
/** Writes canonical values into the tensor (rounded to its dtype; padding 0; statistics on all 8 lanes). */
void writeCanonical(OpCase& c, const FaCase& fc, const std::string& key, const std::vector<double>& values);

// The golden (flash_attention_suite_golden.cpp), in canonical order.
using FaForward = golden::FlashAttentionForwardOutputs<double>;
using FaGrads = golden::FlashAttentionGradOutputs<double>;
/** The problem's sizes, scale and dropout stream: enough for the Philox drop mask and FP8 quantisation. */
golden::FlashAttentionProblem faShapeProblem(const FaCase& fc);
/** The golden forward on every head: golden/flash_attention.h in double, or the FP8 chain. */
FaForward faGoldenForward(OpCase& c, const FaCase& fc);
/**
 * The golden backward on the first `heads` heads, from attentionIn and the statistics as the case's tensors hold
 * them, or with fc.autoForward from the golden forward.
 */
FaGrads faGoldenBackward(OpCase& c, const FaCase& fc, int64_t heads);
/**
 * The outputs of the suite's direction on the checked heads: the golden, or the naive one of the double benchmark
 * (the same code in float; an auto backward's float chain rounds out to the io dtype, as our forward writes it).
 */
std::vector<FaOutput> faCheckedOutputs(OpCase& c, const FaCase& fc, bool backward, bool naive);
/** Writes a forward's out and statistics into attentionIn, softmaxMax, softmaxSum, rounded as the op takes them. */
void writeGoldenForward(OpCase& c, const FaCase& fc, const FaForward& forward);
/** The unmasked (i, j) pairs summed over batches and query heads (the bench's FLOPs count only those). */
double faUnmaskedPairs(OpCase& c, const FaCase& fc);

// The verdicts (flash_attention_suite_judge.cpp).
/** Sets the call's golden (of the checked heads, stored for --dump when it covers every head) and its verdict. */
void faBindVerdict(OpCase& c, const FaCase& fc, bool backward, OpCall& call);

// The entry points (flash_attention_suite_calls.cpp, spec fag.md 2.2).
/**
 * The entry point `api` (default fc.api) of the suite's direction, a forward writing attention out to `forwardOut`:
 * the call's plan and run (its GetWorkspaceSize and second phase); throws for an unknown one.
 */
OpCall faCall(OpCase& c, const FaCase& fc, bool backward, const std::string& api = "",
              const std::string& forwardOut = "attentionOut");
/** Runs the forward of fc.api's family into attentionIn and the statistics (downloaded); throws when it fails. */
void writeOurForward(OpCase& c, const FaCase& fc);

// The seed's cases (flash_attention_seed_case.cpp, which documents the seed's keys).
/** Runs the seed case file `file`: a row "seed_<name>_<mode>" per case and mode (harness/nested_case_files.h). */
std::vector<VerifyRow> runFlashAttentionSeedCases(const std::filesystem::path& file, const VerifyContext& context);

}  // namespace gradkit::cli
