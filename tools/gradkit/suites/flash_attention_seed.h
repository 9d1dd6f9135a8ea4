// The seed's six cases (spec fag.md 5.3, 5.12; cases/flash_attention_seed.json, docs/flash_attention_cases.md) inside
// the flash_attention_score_grad suite: the entry {"name": "seed_cases", "seed_cases": "flash_attention_seed.json"}
// (relative to cases/, or absolute) runs that file's cases, one row per case and mode. Each seed case is restated as a
// case of the backward suite (aclnnFlashAttentionScoreGradV4 under the Ascend950 profile, the entry point the seed
// targets) with the seed's own inputs and verdict (harness/threshold_check.h), in the seed's modes:
// "grad_only" (the golden forward's out and statistics, rounded as the op takes them, are the backward's inputs) and
// "auto_grad" (our aclnnFlashAttentionScoreV4 forward first; its out is judged too).
//
// The seed's keys: "name"; "B", "N1", "N2", "S1", "S2", "D", "D_V"; "actual_seq_qlen", "actual_seq_kvlen" (TND
// per-batch lengths, not cumulative); "dtype": fp16 | bf16 | fp32 | fp8_e5m2 | fp8_e4m3fn; "out_dtype"; "seed",
// "offset" (the dropout stream's, spec 3); "sparse_mode"; "pre_tockens_input", "next_tockens_input" (the seed's
// spelling; both the golden and the operator get them, unlike upstream, spec 5.13); "drop_out_possibility" (the KEEP
// probability, despite the name); "pse_type" 0..3; "pse_shape": NONE | BN1S | 1NSS | BNSS | BNHS | 1NHS | BN | N;
// "atten_mask_dtype": NONE | BOOL | uint8; "atten_mask_shape": NONE | SS | 11SS | B1SS | BNSS; "rope": 0 | 1 (Q and K
// of head dim D split at 128 into query + queryRope, key + keyRope); "input_layout".
// gradkit's own keys: "modes" (default ["grad_only", "auto_grad"]); "data_seed" (of the standard normal inputs,
// default 0); "pending" (a reason: the case is reported as pending instead of run) and "pending_modes" ({mode:
// reason}); "expect_first_keep_bits" (the '0'/'1' keep bits the dropout stream must give row 0 of batch 0, head 0:
// spec 3.6's worked values).
#pragma once

#include <filesystem>
#include <vector>

#include "harness/suite.h"

namespace gradkit::cli {

/** Runs the seed case file `file`: a row "seed_<name>_<mode>" per case and mode (harness/nested_case_files.h). */
std::vector<VerifyRow> runFlashAttentionSeedCases(const std::filesystem::path& file, const VerifyContext& context);

}  // namespace gradkit::cli
