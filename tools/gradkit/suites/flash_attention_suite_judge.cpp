// The verdicts of the flash attention suites. Double benchmark (DECISIONS.md): out, dq, dk, dv at L2; the softmax
// statistics with fully masked rows bit-exact (-FLT_MAX, +FLT_MAX) and the rest at L0 (a row max is one rounded score
// and a row sum one short fp32 sum: ratios of such maxima are noisy; the mean metrics keep them close). FP8 cases have
// no naive FP8 computation, so their gate is the one of tests/ops/test_flash_attention_fp8_values.cpp against the FP8
// golden chain (both follow the same quantise / de-quantise steps; what differs is fp32 vs double arithmetic and the
// rare fp8 cast of P_d or dS on the other side of a rounding boundary), per output: relative L2 < 1e-3, max |diff| <
// 2 % of max |golden|, and at most 0.5 % of the elements over spec 5.11's threshold max(max(|a|, |b|) * 0.005,
// fp16(2.5e-5)).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <memory>

#include "harness/case_values.h"
#include "harness/compare.h"
#include "harness/elements.h"
#include "harness/error.h"
#include "harness/metrics.h"
#include "harness/rows.h"
#include "harness/threshold_check.h"
#include "harness/view_checks.h"
#include "suites/flash_attention_suite.h"

namespace gradkit::cli {
namespace {

constexpr double kFp8RelL2Gate = 1e-3;       // measured <= 1.5e-4 on the op tests' shapes
constexpr double kFp8RelMaxGate = 0.02;      // of the largest golden value; measured <= 1.7e-3
constexpr double kFp8Relative = 0.005;       // spec 5.11's relative threshold
constexpr double kFp8Floor = 2.4974346e-05;  // fp16(2.5e-5), as upstream stores it

// The double benchmark: row.passed, bitExact, errors and a note per failing output.
void judge(OpCase& c, const std::vector<FaOutput>& goldens, const std::vector<FaOutput>& naives, VerifyRow& row) {
  bool passed = true, bitExact = true;
  for (size_t out = 0; out < goldens.size(); ++out) {
    const FaOutput& o = goldens[out];
    const aclDataType dtype = c.spec(o.key).dtype;
    const int64_t numel = c.spec(o.key).numel();
    const std::vector<unsigned char> dense = c.tensor(o.key).dense();
    std::vector<double> ours, golden, naive;
    int64_t invalidMismatches = 0;
    for (size_t k = 0; k < o.index.size(); ++k) {
      if (o.index[k] >= numel) {
        ++invalidMismatches;
        continue;
      }
      const double a = loadAsDouble(dtype, dense.data(), o.index[k]), g = roundToDtype(dtype, o.values[k]);
      bitExact = bitExact && (a == g || (std::isnan(a) && std::isnan(g)));
      if (o.stats && std::fabs(g) >= static_cast<double>(FLT_MAX)) {  // an invalid row: exact
        if (a != g) ++invalidMismatches;
        continue;
      }
      const ElementError error = elementError(a, g);
      row.maxAbsErr = std::max(row.maxAbsErr, error.abs);
      row.maxRelErr = std::max(row.maxRelErr, error.rel);
      ours.push_back(a);
      golden.push_back(g);
      naive.push_back(roundToDtype(dtype, naives[out].values[k]));
    }
    const DoubleBenchmark verdict =
        doubleBenchmark(ours.data(), naive.data(), golden.data(), static_cast<int64_t>(ours.size()), dtype,
                        o.stats ? kLevelL0 : kLevelL2);
    if (!verdict.passed) {
      passed = false;
      appendNote(row, o.key + ": " + verdict.reason + " (ours MARE " + formatNumber(verdict.ours.mare) + " MERE " +
                          formatNumber(verdict.ours.mere) + ", naive MARE " + formatNumber(verdict.naive.mare) +
                          " MERE " + formatNumber(verdict.naive.mere) + ")");
    }
    if (invalidMismatches > 0) {
      passed = false;
      appendNote(row, o.key + ": " + std::to_string(invalidMismatches) +
                          " elements of fully masked rows differ from -FLT_MAX / +FLT_MAX (or lie outside the view)");
    }
  }
  row.passed = passed;
  row.bitExact = bitExact;
}

// The FP8 gate on dq, dk, dv, with a note of the measured numbers.
void judgeFp8(OpCase& c, const std::vector<FaOutput>& goldens, VerifyRow& row) {
  bool passed = true, bitExact = true;
  std::string summary;
  for (const FaOutput& o : goldens) {
    const aclDataType dtype = c.spec(o.key).dtype;
    const int64_t numel = c.spec(o.key).numel();
    const std::vector<unsigned char> dense = c.tensor(o.key).dense();
    int64_t over = 0;
    double num = 0, den = 0, worst = 0, top = 0;
    for (size_t k = 0; k < o.index.size(); ++k) {
      if (o.index[k] >= numel) throw HarnessError(o.key + ": golden element outside the output's view");
      const double a = loadAsDouble(dtype, dense.data(), o.index[k]), g = roundToDtype(dtype, o.values[k]);
      const double diff = std::fabs(a - g);
      row.maxAbsErr = std::max(row.maxAbsErr, diff);
      row.maxRelErr = std::max(row.maxRelErr, diff / std::max(std::fabs(g), kFp8Floor));
      bitExact = bitExact && a == g;
      num += diff * diff;
      den += g * g;
      top = std::max(top, std::fabs(g));
      worst = std::max(worst, diff);
      if (!(diff <= std::max(std::max(std::fabs(a), std::fabs(g)) * kFp8Relative, kFp8Floor))) ++over;
    }
    const double relL2 = std::sqrt(num / std::max(den, 1e-300)), relMax = worst / std::max(top, 1e-300);
    const double overShare = static_cast<double>(over) / static_cast<double>(std::max<size_t>(o.index.size(), 1));
    const bool ok = top > 0 && relL2 < kFp8RelL2Gate && relMax < kFp8RelMaxGate && overShare <= kThresholdRatioLimit;
    passed = passed && ok;
    summary += (summary.empty() ? "" : ", ") + o.key + (ok ? "" : " FAIL") + " rel L2 " +
               formatNumberAs("%.2e", relL2) + " max " + formatNumberAs("%.2e", relMax) + " over " +
               formatNumber(100.0 * overShare) + "%";
  }
  appendNote(row,
             "vs the FP8 golden chain (gates rel L2 < 1e-3, max < 2 % of max |golden|, <= 0.5 % over): " + summary);
  row.passed = passed;
  row.bitExact = bitExact;
}

}  // namespace

void faBindVerdict(OpCase& c, const FaCase& fc, bool backward, OpCall& call) {
  const int64_t heads = fc.checkedHeads();
  auto golden = std::make_shared<std::vector<FaOutput>>();
  call.golden = [&c, fc, heads, backward, golden] {
    if (heads > 0) *golden = faCheckedOutputs(c, fc, backward, /*naive=*/false);
    if (heads < fc.n1) return;
    for (const FaOutput& o : *golden) storeGoldenAt(c, o.key, o.index, o.values);  // for --dump
  };
  call.judge = [&c, fc, heads, backward, golden](VerifyRow& row) {
    if (heads == 0) {
      row.passed = true;
      return appendNote(row, "not checked against the golden (check_heads 0)");
    }
    if (fc.fp8) return judgeFp8(c, *golden, row);
    judge(c, *golden, faCheckedOutputs(c, fc, backward, /*naive=*/true), row);
  };
}

}  // namespace gradkit::cli
