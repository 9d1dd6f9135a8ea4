// Golden Compressor (forward, what training needs) and CompressorGrad, written from the formulas of spec
// compressor.md 3.2-3.6 and 4.2 (DECISIONS.md "Compressor"), never from the kernels. Templated on the arithmetic
// type: double is the fp64 golden; float is the naive same-dtype computation that the double-benchmark precision
// gate compares against (plain sequential sums, one operation at a time, no compensation).
//
// Conventions shared by both directions:
// - x is the flat [T, H] view (BSH: T = B*S, batch b starts at row b*S; TH: batch b starts at row cu[b]).
//   Inputs come already widened (a BF16/FP16 value is passed as its exact value); outputs are unrounded, the caller
//   rounds cmp_kv, dX, dWkv, dWgate to x's dtype.
// - Token i < u_b of batch b has absolute position p = sp_b + i. Compressed row j of batch b is the aligned block
//   q = sp_b / cr + j (positions [q*cr, (q+1)*cr)); with coff = 2 it also pools block q - 1 through channels [0, D).
// - The N = coff*cr rows of a block are stored interleaved: row r*coff + h is half h (0 = prev, 1 = cur; coff = 1:
//   h = 0 is cur) at position p = (q - (coff-1) + h)*cr + r, so row r of the [cr, coff, D] view has p mod cr = r.
// - Output rows: BSH [B*ceil(S/cr)] (row b*ceil(S/cr) + j); TH [min(T, T/cr + B)] packed batch after batch.
//   Padding rows (no block) are zero in every forward output and are never read by the backward.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace gradkit::golden {

/** Shapes and per-batch options of one Compressor problem (spec compressor.md 2, 3.1). */
struct CompressorLayout {
  bool th = false;                 // false: BSH x [B, S, H]; true: TH x [T, H] with cuSeqlens
  int64_t batch = 0;               // B
  int64_t seqLen = 0;              // S (BSH only)
  int64_t tokens = 0;              // T (TH only; may exceed cuSeqlens[B]: those rows belong to no batch)
  int64_t hidden = 0;              // H
  int64_t headDim = 0;             // D
  int64_t coff = 1;                // 1 or 2
  int64_t cmpRatio = 4;            // cr >= 1 (upstream's [2, 128] limit is not the golden's business)
  std::vector<int64_t> cuSeqlens;  // TH: [B+1], non-decreasing from 0, cu[B] <= T; BSH: empty
  std::vector<int64_t> seqused;    // [B] (0 <= u_b <= len_b) or empty: u_b = len_b
  std::vector<int64_t> startPos;   // [B] (>= 0) or empty: all 0

  int64_t totalTokens() const;                    // T: BSH B*S, TH tokens
  int64_t channels() const;                       // coff*D, the width of wkv / wgate / ape rows
  int64_t blockRows() const;                      // N = coff*cr
  int64_t firstToken(int64_t b) const;            // row0_b in the flat [T, H] view
  int64_t length(int64_t b) const;                // len_b
  int64_t used(int64_t b) const;                  // u_b
  int64_t start(int64_t b) const;                 // sp_b
  int64_t blocks(int64_t b) const;                // n_b = max(0, (sp_b + u_b)/cr - sp_b/cr), spec 3.3
  int64_t outputRows() const;                     // BSH B*ceil(S/cr); TH min(T, T/cr + B)
  int64_t outputRow(int64_t b, int64_t j) const;  // where compressed row j of batch b is placed
};

/**
 * Checks a layout (sizes positive, cuSeqlens/seqused/startPos sizes and ranges, sum of n_b fitting the output rows);
 * throws std::invalid_argument naming the violation.
 */
void checkCompressorLayout(const CompressorLayout& layout);

/** Who owns an output row: batch -1 marks a padding row. */
struct CompressorRow {
  int64_t batch = -1;
  int64_t block = -1;  // j, the batch's compressed row index
};

/** The owner of every output row, [outputRows()]. */
std::vector<CompressorRow> compressorRowMap(const CompressorLayout& layout);

/**
 * The state-cache history read for positions 0 <= p < sp_b: fills kvState and scoreState (coff*D values each; the
 * score row already includes the APE it got when it was written) for batch b at absolute position p.
 */
template <class Real>
using CompressorHistory = std::function<void(int64_t batch, int64_t position, Real* kvState, Real* scoreState)>;

template <class Real>
struct CompressorInputs {
  CompressorLayout layout;
  const Real* x = nullptr;          // [T, H]; rows of tokens >= u_b and rows no batch owns are never read
  const Real* wkv = nullptr;        // [coff*D, H]
  const Real* wgate = nullptr;      // [coff*D, H]
  const Real* ape = nullptr;        // [cr, coff*D]
  CompressorHistory<Real> history;  // may be empty when no block reaches a position below its batch's sp_b
};

template <class Real>
struct CompressorOutputs {
  std::vector<Real> cmpKv;         // [rows, D], unrounded
  std::vector<Real> softmaxScore;  // [rows, N, D], interleaved rows
  std::vector<Real> kv;            // [rows, N, D], the raw gathered kv_state rows (not S * K), interleaved
};

/**
 * Compressor forward (spec 3.2-3.6): KV = x.wkv^T, G = x.wgate^T + ape[p mod cr]; per block the position rule of 3.4
 * (p < 0: kv 0, score -inf; p < sp_b: history; else KV / G of token p - sp_b); S = softmax over the N rows per
 * channel (max subtracted); cmp_kv = sum_n S_n * K_n.
 */
template <class Real>
CompressorOutputs<Real> compressor(const CompressorInputs<Real>& in);

template <class Real>
struct CompressorGradInputs {
  CompressorLayout layout;
  const Real* x = nullptr;             // [T, H]; rows of tokens that no block routes to are never read
  const Real* wkv = nullptr;           // [coff*D, H]
  const Real* wgate = nullptr;         // [coff*D, H]
  const Real* dCmpKv = nullptr;        // [rows, D]; padding rows never read
  const Real* softmaxScore = nullptr;  // [rows, N, D] as the forward wrote it; padding rows never read
  const Real* kv = nullptr;            // [rows, N, D] as the forward wrote it; padding rows never read
  // Upstream's "two" golden (spec 6.1) and gradkit's native-bf16 path: dNewKv and dNewScore rounded to bf16 (nearest
  // even) after their per-token sums, before the matmuls. False: no rounding (the fp64 golden, the fp32 naive).
  bool roundRoutedToBf16 = false;
};

template <class Real>
struct CompressorGradOutputs {
  std::vector<Real> dX;      // [T, H], unrounded; rows no block routes to are exactly 0
  std::vector<Real> dWkv;    // [coff*D, H], unrounded
  std::vector<Real> dWgate;  // [coff*D, H], unrounded
  std::vector<Real> dApe;    // [cr, coff*D]
};

/**
 * CompressorGrad (spec 4.2): per block dK = dC * S, dZ = S * (dC*K - sum_k S_k * dC * K_k) (all N rows in the sum);
 * rows with p >= sp_b route dK, dZ to token p - sp_b (dNewKv, dNewScore) and dZ to dApe[p mod cr]; cache and padding
 * rows are dropped. dX = dNewKv.wkv + dNewScore.wgate, dWkv = dNewKv^T.x, dWgate = dNewScore^T.x.
 */
template <class Real>
CompressorGradOutputs<Real> compressorGrad(const CompressorGradInputs<Real>& in);

extern template CompressorOutputs<double> compressor(const CompressorInputs<double>&);
extern template CompressorOutputs<float> compressor(const CompressorInputs<float>&);
extern template CompressorGradOutputs<double> compressorGrad(const CompressorGradInputs<double>&);
extern template CompressorGradOutputs<float> compressorGrad(const CompressorGradInputs<float>&);

}  // namespace gradkit::golden
