// What the Compressor and CompressorGrad suites share: the case keys, the tensors' default shapes and values, the
// per-batch int32 tensors, a random state-cache history, the upstream two-way criterion of spec compressor.md 6.2
// (reported beside the gate), and the PyTorch peer.
//
// Case keys (besides name, dtype "bf16" | "fp16", seed, expect_status, expect_message):
//   "layout":     "BSH" (default: "batch", "seq") or "TH" (the batches from "cu_seqlens", or "seq_lens")
//   "cu_seqlens": TH prefix sums [B+1] (passed as given, so a rejection case may break the rules)
//   "seq_lens":   TH alternative: a list of B lengths, or {"random": [lo, hi]} with "batch" (lengths drawn)
//   "tokens":     TH rows of x (default cu_seqlens[B] + "extra_tokens" (0): rows that no batch owns)
//   "seqused":    a list [B], or {"random": [lo, hi]} (each drawn, then clamped to [0, len_b]); absent: nullptr
//   "start_pos":  a list [B], or {"random": [lo, hi]}; absent: nullptr
//   "pass_cu_seqlens": whether cuSeqlensOptional is passed (default: TH)
//   "hidden", "head_dim", "coff", "cmp_ratio": H (default 1024), D (128), coff (1), cmp_ratio (4)
// Forward only:
//   "cache_mode":   1 (paged, default) or 2 (one ring buffer per batch)
//   "block_size":   cache block size (default 16 for mode 1; coff*cr + max len_b - 1 for mode 2, the smallest the
//                   ring may be)
//   "block_num":    cache blocks (default: mode 1, 1 + B * table columns; mode 2, B + 1); block 0 is never in the
//                   table (mode 1's "do not write" entry), the others are handed out in a seeded random order
//   "table_columns": mode 1 block-table columns (default: ceil(max(sp_b + len_b) / block_size))
//   "zero_table_entries": [[b, column], ...] set to 0 in the mode 1 table (those blocks are not written)
//   "pass_block_table": true (default) | false (stateBlockTableOptional = nullptr)
//   "state_cache_stride_dim0": the attribute (default 0)
//   "grad_enabled":  true (default) | false
//   "intermediates": "tensor" (default: softmaxScoreOut and kvOut passed) | "null" (nullptr when grad is off)
// Backward only:
//   "padding_rows": "zero" (default, as the forward writes them) | "nan" (whole softmaxScore / kv rows that no batch
//                   owns hold NaN: the backward must not read them)
// and a tensor spec per tensor key to override its view, dtype or shape: the API's argument names without "Ref",
// "Optional" and "Out" ("x", "wkv", "stateCache", "stateBlockTable", "cuSeqlens", "sequsedOptional" (in full: the
// case key "seqused" gives its values), "startPos", "cmpKv", "softmaxScore", "kv", "dCmpKv", "dX", "dApe", ...).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "golden/compressor.h"
#include "harness/op_suite.h"

namespace gradkit::cli {

/** The sizes, per-batch values and options of one Compressor or CompressorGrad case. */
struct CompressorCase {
  golden::CompressorLayout layout;  // what the golden sees (BSH: no cuSeqlens; absent seqused/startPos: empty)
  std::vector<int64_t> cuSeqlens;   // the cuSeqlens tensor's values (TH: the layout's)
  bool passCuSeqlens = false;
  bool passSeqused = false;
  bool passStartPos = false;
  // Forward state cache.
  int64_t cacheMode = 1;
  int64_t blockSize = 16;
  int64_t blockNum = 1;
  int64_t tableColumns = 1;         // mode 1; mode 2's table is [B]
  std::vector<int64_t> blockTable;  // mode 1 [B, tableColumns] row-major; mode 2 [B]
  bool passBlockTable = true;
  int64_t stateCacheStrideDim0 = 0;
  bool gradEnabled = true;
  bool nullIntermediates = false;
  // Backward.
  bool nanPaddingRows = false;

  int64_t tokens() const { return layout.totalTokens(); }
  int64_t channels() const { return layout.coff * layout.headDim; }
  /** x's shape: BSH [B, S, H], TH [T, H]. */
  std::vector<int64_t> xShape() const;
  /** The compressed rows' shape: BSH [B, ceil(S/cr), tail...], TH [min(T, T/cr + B), tail...]. */
  std::vector<int64_t> rowsShape(const std::vector<int64_t>& tail) const;
  /** The state-cache row (block * blockSize + slot) holding batch b's absolute position p. */
  int64_t cacheRow(int64_t b, int64_t p) const;
};

/**
 * Parses the case keys above; `seed` (the case's data seed) draws the random lists and the block table. Throws
 * HarnessError naming a bad key.
 */
CompressorCase parseCompressorCase(const nlohmann::json& testCase, uint64_t seed);

/** Default view and values of the tensor named `key` (the API's argument names). */
std::function<TensorDefaults(const CaseInfo&)> compressorDefaults(const std::string& key);

/** Writes the values of the int32 tensors (cuSeqlens, seqused, startPos; the forward's stateBlockTable too). */
void writeIndexTensors(OpCase& c, const CompressorCase& cc, bool forward);

/** The tensor's aclTensor when `passed`, else nullptr. */
aclTensor* optionalTensor(OpCase& c, const std::string& key, bool passed);

/**
 * A state-cache history for the golden forward when there is no cache tensor (the backward's context): kv and score
 * values uniform in [-1, 1), rounded to fp32, a pure function of (seed, batch, position, channel).
 */
golden::CompressorHistory<double> randomHistory(uint64_t seed, int64_t channels);

/** Per output row (the layout's rows): whether a batch's compressed row lives there. */
std::vector<char> ownedRows(const golden::CompressorLayout& layout);

/** One output as the upstream two-way check of spec 6.2 judges it. */
struct TwoWayOutput {
  std::string key;
  aclDataType row = ACL_FLOAT;    // the tolerance row: BF16, FLOAT16 or FLOAT (d_ape and the fp32 intermediates)
  std::vector<char> mask;         // per element: compared at 99.5 % (empty: every element)
  bool exactOutsideMask = false;  // elements outside the mask must equal the golden's bits (state cache)
};

/**
 * The upstream two-way criterion (spec 6.2) of every output against its golden buffer (the fp64 golden rounded to
 * the output's dtype): |ours - golden| <= atol + rtol * |golden| on at least 99.5 % of the compared elements and the
 * largest relative error of a failing element below 10. Returns e.g. "6.2 PASS min 99.98% (dX) re 0.41".
 */
std::string upstreamTwoWay(OpCase& c, const std::vector<TwoWayOutput>& outputs);

/** The PyTorch reference (spec 4.1, fp32) as the speed peer: the forward, or forward + backward. */
OpCall::Peer compressorTorchPeer(const CompressorCase& cc, const std::string& dtypeText, bool backward);

}  // namespace gradkit::cli
