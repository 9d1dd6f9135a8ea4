// The SparseFlashMla suite's cases (cases/sparse_flash_mla.json): the keys, the tensors' default shapes and values,
// the INT32 tensors' values (prefix sums, used lengths, residuals, shuffled block tables, index lists drawn per row
// from the row's own window) and the logical golden problem of golden/sparse_flash_mla.h they describe.
//
// Case keys (besides name, dtype "bf16" | "fp16", seed, expect_status, expect_message, soc):
//   "layout_q":  "TND" (default) | "BSND";  "layout_kv": "BSND" | "TND" | "PA_BBND" (default: layout_q)
//   "q_lens":    TND rows per batch (B = its size);  "B", "S1": BSND;  "extra_q_rows": TND rows after cu_q[B]
//   "seqused_q": [B] (absent: nullptr)
//   "ori_lens":  [B] or one number: S2act per batch; "ori_rows": [B] or a number, the rows the tensor holds per batch
//                (default ori_lens; BSND: the largest; paged: the table's columns * block_size)
//   "pass_seqused_ori": whether sequsedOriKvOptional = ori_lens is passed (default: paged, or ori_rows != ori_lens)
//   "cmp_lens", "cmp_rows", "pass_seqused_cmp": the same for cmpKv (absent "cmp_lens": no cmpKv)
//   "residual":  [B] or a number (default where the op needs one, cmp mask 3 with ratio > 1: ori_len - cmp_len * r
//                clamped to [0, r)); "pass_residual" overrides whether it is passed
//   "block_size" (128), "spare_blocks" (1): paged KV; blocks handed out in a seeded random order
//   "cmp_ratio" (1), "ori_mask_mode" (4), "ori_win_left" / "ori_win_right" (127 / 0 with mask 4, else -1),
//   "cmp_mask_mode" (3 with cmpKv, else 0), "scale" (1/sqrt(512)), "topk_value_mode" (1)
//   "ori_topk", "cmp_topk": K, K2 (0: dense part)
//   "ori_indices", "cmp_indices": how each computed row's K slots are drawn from its window (ori: the mask's
//                [lo, hi); cmp: [0, cmpThr)): "valid" (default: min(K, window) distinct window entries, then -1),
//                "hostile" (window entries, duplicates, entries outside the window or the batch, a negative entry
//                ending the list), "uniform" (uniform over the batch's rows, as upstream's example), "arange" (the
//                window in order, as the torch CP example), or a flat list of K entries per computed row
//   "ori_topk_lengths", "cmp_topk_lengths": with that part's mask 0 (ignored otherwise): "full" (default; min(K, the
//                mask's count)), "random" (uniform in [0, that]), or a flat list per computed row
//   "return_lse" (true); "lse_shape": the placeholder passed with return_lse false (default: nullptr)
//   "check_heads": the heads the golden checks (default all; bench rows check fewer)
//   "torch_check": true: tools/peers/sparse_flash_mla.py --check judges our attnOut too (reported, not gated)
//   "omit": tensor keys passed as nullptr; "include": tensor keys passed although the case has no use for them
//   "cu_seqlens_q", "cu_seqlens_ori", "seqused_ori", "ori_block_table": values written instead of the derived ones
// and a tensor spec per tensor key (the API's argument names without "Optional" / "Out": "q", "oriKv", "cmpKv",
// "oriSparseIndices", "cmpSparseIndices", "oriBlockTable", "cmpBlockTable", "cuSeqlensQ", "cuSeqlensOriKv",
// "cuSeqlensCmpKv", "sequsedQ", "sequsedOriKv", "sequsedCmpKv", "cmpResidualKv", "oriTopkLength", "cmpTopkLength",
// "sinks", "metadata", "attnOut", "softmaxLse"), e.g. "oriKv": {"strides": [...]} for a block stride.
// Default values: q and the KV uniform in [-2, 2], sinks in [-1, 1], metadata 0.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "golden/sparse_flash_mla.h"
#include "golden/sparse_flash_mla_layouts.h"
#include "harness/op_suite.h"

namespace gradkit::cli {

/** One KV side of a case. */
struct SmlaKvCase {
  bool present = false;
  std::vector<int64_t> lens, rows;  // used rows and held rows per batch
  bool passUsed = false;
  std::vector<int64_t> cu;                     // TND
  std::vector<int64_t> table;                  // paged [B][cols]
  int64_t cols = 0, blocks = 0, perBatch = 0;  // paged; BSND: perBatch = S2
};

/** One index list of a case. */
struct SmlaListCase {
  int64_t k = 0;
  nlohmann::json kind = "valid";
  nlohmann::json lengths;  // null: no lengths tensor
};

struct SmlaSuiteCase {
  std::string layoutQ = "TND", layoutKv = "TND";
  int64_t batch = 1, n1 = 16, d = 512, s1 = 0, tokens = 0;
  std::vector<int64_t> qRows, qUsed, cuQ;
  SmlaKvCase ori, cmp;
  std::vector<int64_t> residual;
  bool passResidual = false;
  int64_t blockSize = 128;
  int64_t ratio = 1, oriMode = 4, cmpMode = 0, winLeft = 127, winRight = 0, topkValueMode = 1;
  SmlaListCase oriList, cmpList;
  double scale = 0.044194173824159216;
  bool returnLse = true;
  std::vector<int64_t> lseShape;  // the placeholder's shape (return_lse false); empty: nullptr
  int64_t checkHeads = 0;
  bool torchCheck = false;
  std::set<std::string> passed;  // the tensor keys passed to the call (the rest are nullptr)
  bool expectsRejection = false;

  bool tndQ() const { return layoutQ == "TND"; }
  bool paged() const { return layoutKv == "PA_BBND"; }
  /** Per-token shape prefix: BSND [B, S1, 1], TND [T, 1]. */
  std::vector<int64_t> perToken() const;
};

/** Parses the keys above (seed: the case's data seed, for the block tables). Throws HarnessError naming a bad key. */
SmlaSuiteCase parseSmlaCase(const nlohmann::json& testCase, uint64_t seed);

/** Default view and values of the tensor `key`. */
std::function<TensorDefaults(const CaseInfo&)> smlaDefaults(const std::string& key);

/** The tensor's aclTensor when the case passes it, else nullptr. */
aclTensor* smlaTensor(OpCase& c, const SmlaSuiteCase& sc, const std::string& key);

/**
 * The torch peer tools/peers/`script` of a case: the case's attributes as its arguments and, of `keys`, the tensors
 * the case passes as its .npy files (stem = key).
 */
OpCall::Peer smlaTorchPeer(const SmlaSuiteCase& sc, const std::string& dtypeText, const std::string& script,
                           const std::vector<std::string>& keys);

/** The logical problem of a case that is not a rejection: its rows, index lists and lengths (q / KV values apart). */
struct SmlaSuiteProblem {
  golden::SmlaLayoutRows rows;
  golden::SparseFlashMlaProblem problem;  // sinks filled by the golden (the case's values)
  std::vector<char> sees;                 // per q layout row: the row sees a key
  double visibleKeys = 0;                 // summed over the computed rows
};

/**
 * Writes every passed INT32 tensor (rejection cases: the derived values or the case's overrides, index lists 0) and,
 * unless the case expects a rejection, returns its logical problem (index lists drawn per row from the case seed).
 */
std::shared_ptr<const SmlaSuiteProblem> writeSmlaInts(OpCase& c, const SmlaSuiteCase& sc);

}  // namespace gradkit::cli
