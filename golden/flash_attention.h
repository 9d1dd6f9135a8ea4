// Golden flash attention forward (FlashAttentionScore) and backward (FlashAttentionScoreGrad), written from the
// formulas of spec fag.md 1.2, 1.3, 2.7-2.12 and the dropout stream of 3 (DECISIONS.md "Flash attention"), never
// from the kernels: it has its own problem description, its own mask/pse rules and its own Philox4x32-7. Templated
// on the arithmetic type: double is the fp64 golden; float is the naive same-dtype computation that the
// double-benchmark precision gate compares against (plain sequential sums, one operation at a time).
//
// Canonical tensor order (callers rearrange BNSD/BSND/BSH/SBH/TND into it; outputs come back in it):
// - Batches are stored one after the other; batch b holds [heads][rows_b][dim]. For padded layouts every batch has
//   the same rows, so this is plain BNSD [B][N][S][dim]; for TND it is the per-batch blocks [N][S_b][dim].
// - Query-side row (b, n1, i) is qRow(b, n1, i) = N1 * (S1_0 + ... + S1_{b-1}) + n1 * S1_b + i: q [.., D],
//   qRope [.., dRope], dy / attentionIn / out [.., D_V], dq [.., D], dqRope [.., dRope], softmaxMax / softmaxSum [..].
// - Key-side row (b, n2, j) is kvRow(b, n2, j) = N2 * (S2_0 + ... + S2_{b-1}) + n2 * S2_b + j: k [.., D],
//   kRope [.., dRope], v [.., D_V], dk, dkRope, dv alike.
// - Query head n1 uses kv head n1 / G, G = N1 / N2; dk, dv of a kv head sum over its G query heads.
// - Inputs come already widened (an fp16/bf16 value is passed as its exact value); outputs are unrounded.
//
// The softmax statistics here are one value per (b, n1, i). The op's tensors (spec 2.6), which callers build from
// them: padded [B, N1, S1, 8] with the value in all 8 lanes; TND default layout (softmax*Layout "") a [T1, N1, 8]
// tensor whose data is batch after batch [N1][S1_b][8] (exactly qRow order times 8 lanes); TND "same_as_input" a
// true [T1, N1, 8] (token t = cumQ[b-1] + i, head n1).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace gradkit::golden {

/** One flash attention problem in logical terms (spec fag.md 1.1, 2.3, 2.7-2.11). */
struct FlashAttentionProblem {
  // Shapes. s1[b], s2[b]: per-batch query / key rows (padded layouts: all equal; TND: any, 0 allowed).
  int64_t batch = 0;  // B
  int64_t n1 = 1;     // query heads (headNum)
  int64_t n2 = 1;     // key/value heads, N1 % N2 == 0
  int64_t d = 0;      // head dim of q and k (without the rope part)
  int64_t dv = 0;     // head dim of v, dy, out
  int64_t dRope = 0;  // head dim of queryRope / keyRope (0: none); scores use q.k + qRope.kRope
  std::vector<int64_t> s1, s2;
  float scale = 1.0f;     // scaleValue narrowed to float32
  float keepProb = 1.0f;  // float32; 1 disables dropout
  // The chain of bf16 tile products (gradkit's native-bf16 path, Ascend's cube unit, GPU FlashAttention): the
  // dropped probabilities and dS are rounded to bf16 (nearest even) before they multiply. For the naive benchmark
  // of that path; the fp64 golden leaves it false.
  bool bf16ProductOperands = false;

  // Mask (spec 2.7, 2.8). hasMask false (no attenMask tensor): nothing is masked, whatever the mode and tokens.
  // Otherwise, per batch with d0 = S2_b - S1_b, (i, j) is masked when
  //   0: attenMask(i, j) or j > i + next or j < i - pre          (mask OR band, top-left origin; fag.md 7 item 7)
  //   1: attenMask(i, j)
  //   2: j > i
  //   3: j > i + d0
  //   4: j > i + d0 + next or j < i + d0 - pre
  //   5: attenMask(i, j) when attenMask is set, else mode 6's formula
  //   6: j > i + d0 and j >= prefix[b]
  //   7: mode 4 for the band batch (the last batch with S1_b > 0), mode 3 for the others
  //   8: mode 4 for the band batch (the first batch with S1_b > 0), mode 2 for the others
  bool hasMask = false;
  int64_t sparseMode = 0;
  int64_t preTokens = 2147483647;
  int64_t nextTokens = 2147483647;
  std::vector<int64_t> prefix;  // [B], modes 5 (without attenMask) and 6
  // The attenMask tensor value (true = masked) at [b][n1][row][col] of a [B][N1][maskRows][maskCols] tensor; the
  // caller resolves its broadcast ([S1,S2], [1,1,..], [B,1,..], [B,N1,..]). Batch b reads the bottom-right
  // [S1_b, S2_b] corner in modes 3/4/5 (row = maskRows - S1_b + i, col = maskCols - S2_b + j), the top-left corner
  // otherwise (spec 2.7, matters only for TND). Needed for modes 0, 1 (and 5 unless prefix is used).
  std::function<bool(int64_t b, int64_t n1, int64_t row, int64_t col)> attenMask;
  int64_t maskRows = 0, maskCols = 0;  // the mask tensor's last two dims; 0: max S1_b, max S2_b

  // Position bias (spec 1.2 step 2, 2.9). pseType 0: S = X*scale + pse; 1: S = (X + pse)*scale; 2, 3: S = X*scale +
  // bias with bias = -slope * dist (2) or -slope * sqrt(dist) (3), dist = |(j + kvStartIdx) - (i + qStartIdx)|.
  bool hasPse = false;  // false: no bias at all
  int64_t pseType = 1;
  // Types 0/1: the logical bias at (b, n1, i, j); callers expand BNSS/BN1S/1NSS and the 1024-row ALiBi forms
  // (expandAlibiPse below). Values are those of the pse tensor (exact in float).
  std::function<double(int64_t b, int64_t n1, int64_t i, int64_t j)> pse;
  std::vector<float> slopes;  // types 2/3: [N1] or [B][N1] (size decides)
  int64_t qStartIdx = 0, kvStartIdx = 0;

  // Dropout (spec 2.11, 3), only when keepProb < 1: element (b, n1, i, j) is kept by bit e % 8 of dropMask[e / 8]
  // (LSB first, e = dropElementIndex) when dropMask is set, else by the Philox4x32-7 stream of (seed, offset):
  // stream byte dropStreamIndex(..) <= dropThreshold(keepProb). Kept values are scaled by 1 / keepProb.
  const uint8_t* dropMask = nullptr;  // at least ceil(dropElements() / 8) bytes
  uint64_t seed = 0, offset = 0;

  int64_t groups() const;                                 // G = N1 / N2
  int64_t qRowsBefore(int64_t b) const;                   // S1_0 + ... + S1_{b-1}
  int64_t kvRowsBefore(int64_t b) const;                  // S2_0 + ... + S2_{b-1}
  int64_t qRows() const;                                  // N1 * sum S1_b: rows of q, out, dy, statistics
  int64_t kvRows() const;                                 // N2 * sum S2_b: rows of k, v
  int64_t qRow(int64_t b, int64_t n1, int64_t i) const;   // see the canonical order above
  int64_t kvRow(int64_t b, int64_t n2, int64_t j) const;  // see the canonical order above
  int64_t dropElements() const;                           // N1 * sum S1_b * S2_b
  int64_t dropElementIndex(int64_t b, int64_t n1, int64_t i, int64_t j) const;  // packed-mask bit (spec 2.11)
  int64_t dropStreamBytes() const;                                              // N1 * sum S1_b * ceil(S2_b / 16) * 16
  int64_t dropStreamIndex(int64_t b, int64_t n1, int64_t i, int64_t j) const;   // Philox byte (spec 3.4)
};

/** Checks sizes, heads, sparse mode, tokens arrays, pse and mask sources; throws std::invalid_argument. */
void checkFlashAttentionProblem(const FlashAttentionProblem& problem);

/** True when element (b, n1, i, j) is masked out (the rules listed in FlashAttentionProblem). */
bool flashAttentionMasked(const FlashAttentionProblem& problem, int64_t b, int64_t n1, int64_t i, int64_t j);

/** The bias added at (b, n1, i, j) as the problem defines it (0 without pse), computed in Real. */
template <class Real>
Real flashAttentionBias(const FlashAttentionProblem& problem, int64_t b, int64_t n1, int64_t i, int64_t j);

/** True when element (b, n1, i, j) survives dropout (always true for keepProb == 1). */
bool flashAttentionKept(const FlashAttentionProblem& problem, int64_t b, int64_t n1, int64_t i, int64_t j);

template <class Real>
struct FlashAttentionInputs {
  const Real* q = nullptr;      // [qRows][D]
  const Real* k = nullptr;      // [kvRows][D]
  const Real* v = nullptr;      // [kvRows][D_V]
  const Real* qRope = nullptr;  // [qRows][dRope], only with dRope > 0
  const Real* kRope = nullptr;  // [kvRows][dRope], only with dRope > 0
};

template <class Real>
struct FlashAttentionForwardOutputs {
  std::vector<Real> out;         // [qRows][D_V]; 0 for fully masked rows
  std::vector<Real> softmaxMax;  // [qRows]; -FLT_MAX for fully masked rows
  std::vector<Real> softmaxSum;  // [qRows]; +FLT_MAX for fully masked rows
};

/**
 * Forward (spec 1.2): s = scores with pse and scale, masked s = -FLT_MAX (replacing the bias), m = row max, l = sum
 * exp(s - m), P = exp(s - m) / l, P_d = P * keep / keepProb, out = P_d V. A row whose every column is masked (or
 * S2_b = 0) is invalid (spec 2.12): out 0, m = -FLT_MAX, l = +FLT_MAX.
 */
template <class Real>
FlashAttentionForwardOutputs<Real> flashAttentionForward(const FlashAttentionProblem& problem,
                                                         const FlashAttentionInputs<Real>& in);

template <class Real>
struct FlashAttentionGradInputs {
  FlashAttentionInputs<Real> tensors;
  const Real* dy = nullptr;           // [qRows][D_V]
  const Real* attentionIn = nullptr;  // [qRows][D_V], the forward's out
  const Real* softmaxMax = nullptr;   // [qRows]
  const Real* softmaxSum = nullptr;   // [qRows]
};

template <class Real>
struct FlashAttentionGradOutputs {
  std::vector<Real> dq;      // [qRows][D]
  std::vector<Real> dk;      // [kvRows][D], summed over each group
  std::vector<Real> dv;      // [kvRows][D_V], summed over each group
  std::vector<Real> dqRope;  // [qRows][dRope] (empty without rope)
  std::vector<Real> dkRope;  // [kvRows][dRope] (empty without rope)
};

/**
 * Backward (spec 1.3) from the GIVEN statistics: P = exp(s - m) / l (0 where masked), Drow = rowsum(dy * attentionIn),
 * dP = dy V^T, dS = P * (dP * keep / keepProb - Drow), dq = scale * dS K, dk = scale * dS^T Q, dv = P_d^T dy (rope
 * parts alike). With the forward's own statistics and out this is the exact gradient of sum(out * dy).
 */
template <class Real>
FlashAttentionGradOutputs<Real> flashAttentionBackward(const FlashAttentionProblem& problem,
                                                       const FlashAttentionGradInputs<Real>& in);

/**
 * Standard ALiBi slopes get_slopes(N) (spec 2.9): p = 2^floor(log2 N), (2^(-8/p))^k for k = 1..p, then, when p < N,
 * (2^(-4/p))^k for k = 1, 3, ..., 2(N - p) - 1.
 */
std::vector<double> alibiSlopes(int64_t heads);

/**
 * A compressed ALiBi pse table of `shape` [Bp, N1, R, C] from the standard slopes of `heads` heads:
 * slope_n * min(0, (c - C) - (r - R) + shift), constant along diagonals; `shift` moves the diagonal (the seed cuts its
 * table from a larger grid).
 */
std::vector<double> alibiPseTable(const std::vector<int64_t>& shape, int64_t heads, int64_t shift = 0);

/**
 * Expands a compressed ALiBi pse table [rows][cols] (rows = 1024 upstream) of one (batch, head) into the logical
 * [s1][s2] bias (spec 2.9): (i, j) reads table row rows - s1 + i, column cols - s2 + j (non-TND: cols = S2; TND:
 * cols = S2max); a row before the table (s1 > rows) is taken along its diagonal (column minus the negative row, row
 * 0). Cells outside the table read 0.
 */
std::vector<double> expandAlibiPse(const double* table, int64_t rows, int64_t cols, int64_t s1, int64_t s2);

/**
 * Sets p.attenMask (and maskRows, maskCols) to read a dense mask tensor of `shape` ([S1, S2] or [B | 1, N1 | 1, S1,
 * S2]; a leading 1 broadcasts), non-zero = masked (golden/flash_attention_tensors.cpp).
 */
void setMaskTensor(FlashAttentionProblem& p, std::shared_ptr<const std::vector<uint8_t>> bytes,
                   const std::vector<int64_t>& shape);

/**
 * Sets p.pse to read a dense pse tensor of `shape` [B | 1, N1, S1 | 1, S2] (a leading 1 and one row broadcast), or
 * with `alibiTable` the compressed ALiBi table [B | 1, N1, rows, cols] expanded by expandAlibiPse for each batch's
 * p.s1 / p.s2 (set those first). Not thread-safe: the expansion of the last (b, n) is kept.
 */
void setPseTensor(FlashAttentionProblem& p, std::shared_ptr<const std::vector<double>> values,
                  const std::vector<int64_t>& shape, bool alibiTable);

/** One Philox4x32 block with `rounds` rounds (Random123 constants; 7 for flash attention, spec 3.1). */
std::array<uint32_t, 4> flashAttentionPhilox(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key, int rounds);

/**
 * Bytes [first, first + count) of the flash attention dropout stream (spec 3.2, 3.3): key (low32 seed, high32 seed),
 * block t uses the 128-bit counter ceil(offset / 16) + t, its words x, y, z, w split least significant byte first.
 */
std::vector<uint8_t> flashAttentionPhiloxBytes(uint64_t seed, uint64_t offset, uint64_t first, uint64_t count);

/** The keep threshold trunc(float32(keepProb) * 255) computed in float32 (spec 3.5): keep iff byte <= it. */
uint32_t flashAttentionDropThreshold(float keepProb);

/**
 * The external drop mask (spec 2.11) that the Philox stream of (problem.seed, problem.offset) draws for `problem`
 * (16-padded rows, spec 3.4): bit e (LSB first) = keep of the element with dropElementIndex e; ceil(elements/8) bytes.
 */
std::vector<uint8_t> flashAttentionPhiloxDropMask(const FlashAttentionProblem& problem);

extern template double flashAttentionBias(const FlashAttentionProblem&, int64_t, int64_t, int64_t, int64_t);
extern template float flashAttentionBias(const FlashAttentionProblem&, int64_t, int64_t, int64_t, int64_t);
extern template FlashAttentionForwardOutputs<double> flashAttentionForward(const FlashAttentionProblem&,
                                                                           const FlashAttentionInputs<double>&);
extern template FlashAttentionForwardOutputs<float> flashAttentionForward(const FlashAttentionProblem&,
                                                                          const FlashAttentionInputs<float>&);
extern template FlashAttentionGradOutputs<double> flashAttentionBackward(const FlashAttentionProblem&,
                                                                         const FlashAttentionGradInputs<double>&);
extern template FlashAttentionGradOutputs<float> flashAttentionBackward(const FlashAttentionProblem&,
                                                                        const FlashAttentionGradInputs<float>&);

}  // namespace gradkit::golden
