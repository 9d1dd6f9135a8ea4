// What the FlashAttentionScore and FlashAttentionScoreGrad suites share: the case keys, the tensors' default shapes
// and values, the layouts' element order against golden/flash_attention's canonical order, the golden problem a
// case describes (mask, pse and dropout read back from the case's own tensors), and the softmax statistics layouts.
//
// Case keys (besides name, dtype "fp32" | "fp16" | "bf16", seed, expect_status, expect_message, soc):
//   "layout":   "BNSD" (default) | "BSND" | "BSH" | "SBH" | "TND"
//   "B", "N1", "N2" (default N1), "S1", "S2" (default S1), "D", "DV" (default D): padded sizes
//   "seq_q", "seq_kv": TND per-batch lengths (B = their count; seq_kv defaults to seq_q); 0 allowed
//   "actual_seq_q", "actual_seq_kv": TND cumulative arrays passed as given instead (rejection cases)
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
//               attentionIn, dq, dk, dv and a pse table (suites/flash_attention_suite_fp8.h)
// and a tensor spec per tensor key (views, dtypes, shapes): "query", "key", "value", "pse", "dropMask",
// "attenMask", "softmaxMax", "softmaxSum", forward "attentionOut", backward "dy", "attentionIn", "dq", "dk", "dv",
// FP8 "dScaleQ", "dScaleK", "dScaleV", "dScaleDy", "dScaleO".
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "golden/flash_attention.h"
#include "harness/op_suite.h"

namespace gradkit::cli {

/** The sizes, semantics and entry point of one flash attention case. */
struct FaCase {
  std::string layout = "BNSD";
  bool tnd = false;
  int64_t batch = 1, n1 = 1, n2 = 1, d = 16, dv = 16;
  int64_t headNum = 1;                // the headNum attribute (default N1)
  int64_t s1 = 1, s2 = 1;             // padded sizes; TND: the largest lengths
  std::vector<int64_t> seqQ, seqKv;   // per batch (padded: all s1, s2)
  std::vector<int64_t> cumQ, cumKv;   // TND: the cumulative arrays as passed
  int64_t tokensQ = 0, tokensKv = 0;  // TND: rows of query and key
  double scale = 0.25, keepProb = 1.0;
  std::string dropout = "none";  // "none" | "mask" | "philox"
  int64_t dropSeed = 2, dropOffset = 0;
  int64_t sparseMode = 0, preTokens = 2147483647, nextTokens = 2147483647;
  std::vector<int64_t> prefix;
  std::string mask = "none", maskValues = "random";
  aclDataType maskDtype = ACL_BOOL;
  double maskDensity = 0.3;
  std::string pse = "none";
  int64_t pseType = 1;
  std::vector<int64_t> qStartIdx, kvStartIdx;  // empty: not passed
  int64_t innerPrecise = 0;
  std::string softmaxLayout;
  std::string api;
  std::vector<std::string> nulls;
  bool autoForward = false;
  int64_t checkHeads = -1;  // -1: every head
  bool peer = true;
  bool fp8 = false;                  // query, key, value, dy are FLOAT8 codes with de-quant scales
  aclDataType outDtype = ACL_FLOAT;  // FP8: attentionIn, dq, dk, dv (FLOAT16 | BF16); else the case dtype

  bool expectsRejection = false;  // expect_status != 0: the sizes may be inconsistent on purpose
  bool isNull(const std::string& key) const;
  int64_t groups() const { return n2 > 0 ? n1 / n2 : 1; }
  bool hasMask() const { return mask != "none"; }
  bool hasPse() const { return pse != "none"; }
  bool slopes() const { return pse == "BN" || pse == "N"; }
  /** FP8: a side's de-quant scale shape [B, N, ceil(S / 128), 1]. */
  std::vector<int64_t> fp8ScaleShape(bool querySide) const;
  /** The shape of a tensor of the layout with `heads` heads of `dim` on the query (or key) side. */
  std::vector<int64_t> shape(bool querySide, int64_t heads, int64_t dim) const;
  /** The statistics' shape: padded [B, N1, S1, 8], TND [T1, N1, 8]. */
  std::vector<int64_t> statsShape() const;
};

/** Parses the keys above; throws HarnessError naming a bad key. `backward` picks the default entry point. */
FaCase parseFaCase(const nlohmann::json& testCase, bool backward);

/** Default view and values of the tensor named `key`. */
std::function<TensorDefaults(const CaseInfo&)> faDefaults(const std::string& key, bool backward);

/** Writes the values the case derives rather than draws: mask content, the ALiBi table, the drop mask. */
void writeDerivedInputs(OpCase& c, const FaCase& fc);

/** The tensor's aclTensor, or nullptr when the case leaves it out (absent optional, or listed in "null"). */
aclTensor* faTensor(OpCase& c, const FaCase& fc, const std::string& key);

/** Index maps between a layout tensor's dense elements and the golden's canonical order (its header). */
std::vector<int64_t> canonicalIndex(const FaCase& fc, bool querySide, int64_t heads, int64_t dim);

/** The layout tensor `key`'s values (dense, widened) in canonical order. */
std::vector<double> canonicalValues(OpCase& c, const FaCase& fc, const std::string& key, bool querySide, int64_t heads,
                                    int64_t dim);

/** The statistics tensor's dense element (lane 0) of each canonical query row (b, n1, i) (spec 2.6). */
std::vector<int64_t> statsIndex(const FaCase& fc);

/** Canonical per-row statistics -> the statistics tensor's dense elements (8 lanes), and back (lane 0). */
std::vector<double> statsToLayout(const FaCase& fc, const std::vector<double>& perRow);
std::vector<double> statsFromLayout(const FaCase& fc, const std::vector<double>& dense);

/** Canonical values -> the layout tensor's dense elements. */
std::vector<double> toLayout(const FaCase& fc, const std::vector<double>& canonical, bool querySide, int64_t heads,
                             int64_t dim);

/**
 * The golden problem of the case, its mask, pse and dropout read from the case's tensors as they were before the
 * run. With `heads` > 0 (B = 1, N1 = N2 only) the problem is cut to the first `heads` heads.
 */
golden::FlashAttentionProblem faGoldenProblem(OpCase& c, const FaCase& fc, int64_t heads = 0);

/** Query heads the golden check covers: every head, or the case's check_heads (bench). */
int64_t faCheckedHeads(const FaCase& fc);

/** The unmasked (i, j) pairs of the case summed over batches and query heads (the FLOPs count only those). */
double faUnmaskedPairs(OpCase& c, const FaCase& fc);

/** Resets the process's peak RSS (Linux clear_refs); false when the kernel refuses. */
bool resetPeakRss();
/** The process's peak RSS in bytes since the last reset (VmHWM), 0 when unknown. */
double peakRssBytes();
/** The process's current RSS in bytes (VmRSS), 0 when unknown. */
double currentRssBytes();

/** The PyTorch peer (tools/peers/flash_attention.py): SDPA's flash path, or its math path for dropout and pse. */
OpCall::Peer faTorchPeer(const FaCase& fc, const std::string& dtypeText, bool backward);

}  // namespace gradkit::cli
