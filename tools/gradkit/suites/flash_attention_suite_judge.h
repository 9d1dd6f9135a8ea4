// How the flash attention suites judge a run: golden/flash_attention's fp64 forward or backward (double) and the
// same code in float (the naive same-dtype computation of the double benchmark), on the case's inputs in canonical
// order, cut to the heads the case checks; then out, dq, dk, dv under the double benchmark at L2 (DECISIONS.md) and
// the softmax statistics with invalid rows bit-exact (-FLT_MAX, +FLT_MAX) and the rest under the double benchmark at
// L0 (a row max is one rounded score and a row sum one short fp32 sum: ratios of such maxima are noisy; the mean
// metrics keep them close).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/op_suite.h"
#include "suites/flash_attention_suite_common.h"

namespace gradkit::cli {

/** One output: its golden and naive values in canonical order and where each sits in the output's dense view. */
struct FaOutput {
  std::string key;
  bool stats = false;
  std::vector<double> golden;
  std::vector<double> naive;
  std::vector<int64_t> index;  // dense element of each canonical value
};

/** The forward's outputs in canonical order (statistics one value per query row). */
struct FaForwardValues {
  std::vector<double> out, max, sum;
};

/** The backward's outputs in canonical order. */
struct FaBackwardValues {
  std::vector<double> dq, dk, dv;
};

/** The golden (Real = double) or naive (float) forward of the case on the first `heads` query heads. */
template <class Real>
FaForwardValues faForward(OpCase& c, const FaCase& fc, int64_t heads);

/**
 * The golden (double) or naive (float) backward on the first `heads` heads. Without fc.autoForward it reads
 * attentionIn and the statistics from the case's tensors; with it, it runs faForward<Real> first and takes its out
 * (the float chain rounds it to the io dtype, as our forward writes it) and statistics.
 */
template <class Real>
FaBackwardValues faBackward(OpCase& c, const FaCase& fc, int64_t heads);

/** The forward's outputs as FaOutput (index maps for attentionOut / outKey, softmaxMax, softmaxSum). */
std::vector<FaOutput> faForwardOutputs(OpCase& c, const FaCase& fc, const FaForwardValues& golden,
                                       const FaForwardValues& naive, const std::string& outKey);

/** The backward's outputs as FaOutput (dq, dk, dv). */
std::vector<FaOutput> faBackwardOutputs(OpCase& c, const FaCase& fc, const FaBackwardValues& golden,
                                        const FaBackwardValues& naive);

/** Stores every output's golden (rounded to its dtype) into OpCase::golden for --dump (full checks only). */
void faStoreGolden(OpCase& c, const std::vector<FaOutput>& outputs);

/** The verdict: row.passed, bitExact, errors and a note per failing output. */
void faJudge(OpCase& c, const std::vector<FaOutput>& outputs, VerifyRow& row);

extern template FaForwardValues faForward<double>(OpCase&, const FaCase&, int64_t);
extern template FaForwardValues faForward<float>(OpCase&, const FaCase&, int64_t);
extern template FaBackwardValues faBackward<double>(OpCase&, const FaCase&, int64_t);
extern template FaBackwardValues faBackward<float>(OpCase&, const FaCase&, int64_t);

}  // namespace gradkit::cli
