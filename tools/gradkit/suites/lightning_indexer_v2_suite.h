// What the LightningIndexerV2 suites share: the case keys, the tensors' defaults, the int32 tensors' values, the
// golden's problem and the judge.
//
// Case keys (besides name, dtype "bf16" | "fp16", seed, expect_status, expect_message, soc):
//   "layout_q":  "BSND" (default; "batch", "s1") or "TND" ("cu_seqlens_q"; "tokens_q": rows of q, default its last)
//   "layout_k":  default layout_q; "BSND" ("s2"), "TND" ("cu_seqlens_k", "tokens_k") or "PA_BBND" ("block_size",
//                default 16; "block_num", default B * columns + 1; "table_columns", default ceil(max seqused_k /
//                block_size); the table holds a seeded permutation of the blocks, or "block_table": [B * columns])
//   "heads" (N1, default 8), "topk" (16), "mask_mode" (0), "cmp_ratio" (1), "return_value" (1), "max_seqlen_q" (-1)
//   "seqused_q", "seqused_k", "residual": lists of B values, passed when given ("pass_residual": force either way)
//   "offsets":   "random" (each row's offset in [0, 1000]) or a list per row of q; absent: no outputIdxOffset
//   "pass_metadata": pass the metadata tensor (default true)
//   "pass_cu_seqlens_q", "pass_cu_seqlens_k", "pass_block_table", "pass_seqused_k": override what is passed
//   "layout_q_text", "layout_k_text": the strings passed (default the layouts; for rejections)
// Tensor keys (the API's names without "Optional"): q, k, w, cuSeqlensQ, cuSeqlensK, sequsedQ, sequsedK,
// cmpResidualK, blockTable, outputIdxOffset, metadata, sparseIndices, sparseValues.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "golden/lightning_indexer_v2.h"
#include "harness/op_suite.h"

namespace gradkit::cli {

struct LiV2Case {
  std::string layoutQ = "BSND", layoutK = "BSND";
  std::string layoutQText, layoutKText;  // what is passed
  int64_t batch = 1, s1 = 1, s2 = 1, heads = 8, topk = 16, maskMode = 0, cmpRatio = 1, returnValue = 1;
  int64_t maxSeqlenQ = -1;
  std::vector<int64_t> cuQ, cuK;
  int64_t tokensQ = 0, tokensK = 0;
  std::vector<int64_t> sequsedQ, sequsedK, residual, offsets;
  int64_t blockSize = 16, blockNum = 1, tableColumns = 1;
  std::vector<int64_t> blockTable;  // [B, tableColumns] row-major
  bool passCuQ = false, passCuK = false, passSequsedQ = false, passSequsedK = false, passResidual = false;
  bool passTable = false, passOffsets = false, passMetadata = true;

  bool tndQ() const { return layoutQ == "TND"; }
  bool paged() const { return layoutK == "PA_BBND"; }
  int64_t queryRows() const { return tndQ() ? tokensQ : batch * s1; }
  std::vector<int64_t> rowLead() const;
  std::vector<int64_t> qShape() const;
  std::vector<int64_t> kShape() const;
  /** The golden's view of a valid call (rows, used keys, residuals). */
  golden::LightningIndexerV2Problem problem() const;
  /** Row `row`'s key s, as an index into the dense k values ([..., 128] rows). */
  int64_t keyRow(int64_t batch, int64_t key) const;
};

/** Parses the keys above; `seed` draws the random offsets and the block table. Throws HarnessError on a bad key. */
LiV2Case parseLiV2Case(const nlohmann::json& testCase, uint64_t seed);

/** Default view and values of the tensor named `key`. */
std::function<TensorDefaults(const CaseInfo&)> liv2Defaults(const std::string& key);

/** Writes the int32 tensors' values (cu_seqlens, seqused, residual, block table, offsets). */
void writeLiV2Ints(OpCase& c, const LiV2Case& lc);

/** The tensor's aclTensor when `passed`, else nullptr. */
inline aclTensor* liv2Optional(OpCase& c, const std::string& key, bool passed) { return passed ? c.acl(key) : nullptr; }

/** The fp64 golden's scores and selection of a case, computed once (OpCall::golden) and judged (OpCall::judge). */
struct LiV2Golden {
  golden::LightningIndexerV2Problem problem;
  std::vector<std::vector<double>> scores;  // per row: its visible keys' fp64 scores
  std::vector<std::vector<int64_t>> selected;
};

/** Computes the golden (fp64) and stores its indices and values as the outputs' goldens (for --dump). */
void runLiV2Golden(OpCase& c, const LiV2Case& lc, LiV2Golden& golden);

/**
 * The gate: per used row, the count of valid slots exact, -1 / -inf after them, the selected set equal to the fp64
 * golden's up to swaps of keys whose fp64 scores lie within max(1e-4 |s_K|, 8 e) of the golden's K-th score s_K (e: the
 * row's largest error of the naive fp32 scores: what fp32 rounding can move), the row sorted (our values
 * non-increasing, equal values by lower index), and the values of the selected keys against their fp64 scores by the
 * double benchmark (L2) with the naive fp32 scores as the benchmark. Unused rows: only -1 / -inf. returnValue 0:
 * sparseValues untouched.
 */
void judgeLiV2(OpCase& c, const LiV2Case& lc, const LiV2Golden& golden, VerifyRow& row);

}  // namespace gradkit::cli
