#include "suites/flash_attention_suite_judge.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <type_traits>

#include "core/tile_path.h"
#include "harness/compare.h"
#include "harness/elements.h"
#include "harness/metrics.h"
#include "harness/rows.h"
#include "harness/view_checks.h"
#include "suites/mhc_suite_common.h"

namespace gradkit::cli {
namespace {

constexpr BenchmarkLevel kStatsLevel = kLevelL0;

// The first `count` values (the checked heads of a B = 1 case come first in canonical order).
std::vector<double> cut(std::vector<double> values, size_t count) {
  if (values.size() > count) values.resize(count);
  return values;
}

size_t qRows(const FaCase& fc, int64_t heads) {
  int64_t rows = 0;
  for (const int64_t length : fc.seqQ) rows += length;
  return static_cast<size_t>(rows * heads);
}

size_t kvRows(const FaCase& fc, int64_t heads) {
  int64_t rows = 0;
  for (const int64_t length : fc.seqKv) rows += length;
  return static_cast<size_t>(rows * std::max<int64_t>(heads / fc.groups(), 1));
}

double roundTo(aclDataType dtype, double value) {
  unsigned char bytes[8] = {};
  storeFromDouble(dtype, bytes, 0, value);
  return loadAsDouble(dtype, bytes, 0);
}

template <class Real>
std::vector<Real> real(const std::vector<double>& values) {
  return std::vector<Real>(values.begin(), values.end());
}

template <class Real>
std::vector<double> wide(const std::vector<Real>& values) {
  return std::vector<double>(values.begin(), values.end());
}

// Canonical index of the first `count` values of a layout tensor, or of a statistics tensor (8 lanes each).
std::vector<int64_t> outputIndex(const FaCase& fc, bool querySide, int64_t heads, int64_t dim, size_t count) {
  std::vector<int64_t> index = canonicalIndex(fc, querySide, heads, dim);
  if (index.size() > count) index.resize(count);
  return index;
}

FaOutput statsOutput(const FaCase& fc, const std::string& key, const std::vector<double>& golden,
                     const std::vector<double>& naive) {
  const std::vector<int64_t> rows = statsIndex(fc);
  FaOutput output{key, true, {}, {}, {}};
  for (size_t r = 0; r < golden.size() && r < rows.size(); ++r) {
    for (int64_t lane = 0; lane < 8; ++lane) {
      output.golden.push_back(golden[r]);
      output.naive.push_back(naive[r]);
      output.index.push_back(rows[r] + lane);
    }
  }
  return output;
}

// The naive benchmark follows the path the op runs: on the native-bf16 tile path it multiplies bf16 P and dS too.
template <class Real>
golden::FlashAttentionProblem goldenProblem(OpCase& c, const FaCase& fc, int64_t heads) {
  golden::FlashAttentionProblem problem = faGoldenProblem(c, fc, heads);
  problem.bf16ProductOperands = std::is_same_v<Real, float> && c.spec("query").dtype == ACL_BF16 &&
                                chooseTilePath(ACL_BF16).path == TilePath::NativeBf16;
  return problem;
}

}  // namespace

template <class Real>
FaForwardValues faForward(OpCase& c, const FaCase& fc, int64_t heads) {
  const golden::FlashAttentionProblem problem = goldenProblem<Real>(c, fc, heads);
  const int64_t kvHeads = std::max<int64_t>(heads / fc.groups(), 1);
  const std::vector<Real> q =
      real<Real>(cut(canonicalValues(c, fc, "query", true, fc.n1, fc.d), qRows(fc, heads) * fc.d));
  const std::vector<Real> k =
      real<Real>(cut(canonicalValues(c, fc, "key", false, fc.n2, fc.d), kvRows(fc, kvHeads * fc.groups()) * fc.d));
  const std::vector<Real> v =
      real<Real>(cut(canonicalValues(c, fc, "value", false, fc.n2, fc.dv), kvRows(fc, kvHeads * fc.groups()) * fc.dv));
  golden::FlashAttentionInputs<Real> in;
  in.q = q.data();
  in.k = k.data();
  in.v = v.data();
  const golden::FlashAttentionForwardOutputs<Real> out = golden::flashAttentionForward<Real>(problem, in);
  return {wide(out.out), wide(out.softmaxMax), wide(out.softmaxSum)};
}

template <class Real>
FaBackwardValues faBackward(OpCase& c, const FaCase& fc, int64_t heads) {
  const golden::FlashAttentionProblem problem = goldenProblem<Real>(c, fc, heads);
  const size_t kvCount = kvRows(fc, std::max<int64_t>(heads / fc.groups(), 1) * fc.groups());
  const std::vector<Real> q =
      real<Real>(cut(canonicalValues(c, fc, "query", true, fc.n1, fc.d), qRows(fc, heads) * fc.d));
  const std::vector<Real> k = real<Real>(cut(canonicalValues(c, fc, "key", false, fc.n2, fc.d), kvCount * fc.d));
  const std::vector<Real> v = real<Real>(cut(canonicalValues(c, fc, "value", false, fc.n2, fc.dv), kvCount * fc.dv));
  const std::vector<Real> dy =
      real<Real>(cut(canonicalValues(c, fc, "dy", true, fc.n1, fc.dv), qRows(fc, heads) * fc.dv));
  std::vector<double> out, max, sum;
  if (fc.autoForward) {
    FaForwardValues forward = faForward<Real>(c, fc, heads);
    out = std::move(forward.out);
    if (std::is_same_v<Real, float>) {
      const aclDataType io = c.spec("query").dtype;
      for (double& value : out) value = roundTo(io, value);
    }
    max = std::move(forward.max);
    sum = std::move(forward.sum);
  } else {
    out = cut(canonicalValues(c, fc, "attentionIn", true, fc.n1, fc.dv), qRows(fc, heads) * fc.dv);
    max = cut(statsFromLayout(fc, denseValues(c, "softmaxMax")), qRows(fc, heads));
    sum = cut(statsFromLayout(fc, denseValues(c, "softmaxSum")), qRows(fc, heads));
  }
  const std::vector<Real> attentionIn = real<Real>(out), softmaxMax = real<Real>(max), softmaxSum = real<Real>(sum);
  golden::FlashAttentionGradInputs<Real> in;
  in.tensors.q = q.data();
  in.tensors.k = k.data();
  in.tensors.v = v.data();
  in.dy = dy.data();
  in.attentionIn = attentionIn.data();
  in.softmaxMax = softmaxMax.data();
  in.softmaxSum = softmaxSum.data();
  const golden::FlashAttentionGradOutputs<Real> grads = golden::flashAttentionBackward<Real>(problem, in);
  return {wide(grads.dq), wide(grads.dk), wide(grads.dv)};
}

template FaForwardValues faForward<double>(OpCase&, const FaCase&, int64_t);
template FaForwardValues faForward<float>(OpCase&, const FaCase&, int64_t);
template FaBackwardValues faBackward<double>(OpCase&, const FaCase&, int64_t);
template FaBackwardValues faBackward<float>(OpCase&, const FaCase&, int64_t);

std::vector<FaOutput> faForwardOutputs(OpCase& c, const FaCase& fc, const FaForwardValues& golden,
                                       const FaForwardValues& naive, const std::string& outKey) {
  (void)c;
  std::vector<FaOutput> outputs;
  outputs.push_back({outKey, false, golden.out, naive.out, outputIndex(fc, true, fc.n1, fc.dv, golden.out.size())});
  outputs.push_back(statsOutput(fc, "softmaxMax", golden.max, naive.max));
  outputs.push_back(statsOutput(fc, "softmaxSum", golden.sum, naive.sum));
  return outputs;
}

std::vector<FaOutput> faBackwardOutputs(OpCase& c, const FaCase& fc, const FaBackwardValues& golden,
                                        const FaBackwardValues& naive) {
  (void)c;
  return {{"dq", false, golden.dq, naive.dq, outputIndex(fc, true, fc.n1, fc.d, golden.dq.size())},
          {"dk", false, golden.dk, naive.dk, outputIndex(fc, false, fc.n2, fc.d, golden.dk.size())},
          {"dv", false, golden.dv, naive.dv, outputIndex(fc, false, fc.n2, fc.dv, golden.dv.size())}};
}

void faStoreGolden(OpCase& c, const std::vector<FaOutput>& outputs) {
  for (const FaOutput& output : outputs) {
    std::vector<unsigned char>& golden = c.golden(output.key);
    const aclDataType dtype = c.spec(output.key).dtype;
    const int64_t numel = c.spec(output.key).numel();
    for (size_t k = 0; k < output.index.size(); ++k) {
      if (output.index[k] < numel) storeFromDouble(dtype, golden.data(), output.index[k], output.golden[k]);
    }
  }
}

void faJudge(OpCase& c, const std::vector<FaOutput>& outputs, VerifyRow& row) {
  bool passed = true, bitExact = true;
  for (const FaOutput& output : outputs) {
    const aclDataType dtype = c.spec(output.key).dtype;
    const std::vector<unsigned char> dense = c.tensor(output.key).dense();
    const auto numel = static_cast<int64_t>(dense.size() / std::max<size_t>(1, c.tensor(output.key).elementSize()));
    std::vector<double> ours, golden, naive;
    int64_t invalidMismatches = 0;
    for (size_t k = 0; k < output.index.size(); ++k) {
      if (output.index[k] >= numel) {
        ++invalidMismatches;
        continue;
      }
      const double a = loadAsDouble(dtype, dense.data(), output.index[k]);
      const double g = roundTo(dtype, output.golden[k]);
      const double n = roundTo(dtype, output.naive[k]);
      bitExact = bitExact && (a == g || (std::isnan(a) && std::isnan(g)));
      if (output.stats && std::fabs(g) >= static_cast<double>(FLT_MAX)) {  // an invalid row: exact
        if (a != g) ++invalidMismatches;
        continue;
      }
      const ElementError error = elementError(a, g);
      row.maxAbsErr = std::max(row.maxAbsErr, error.abs);
      row.maxRelErr = std::max(row.maxRelErr, error.rel);
      ours.push_back(a);
      golden.push_back(g);
      naive.push_back(n);
    }
    const DoubleBenchmark verdict =
        doubleBenchmark(ours.data(), naive.data(), golden.data(), static_cast<int64_t>(ours.size()), dtype,
                        output.stats ? kStatsLevel : kLevelL2);
    if (!verdict.passed) {
      passed = false;
      appendNote(row, output.key + ": " + verdict.reason + " (ours MARE " + formatNumber(verdict.ours.mare) + " MERE " +
                          formatNumber(verdict.ours.mere) + ", naive MARE " + formatNumber(verdict.naive.mare) +
                          " MERE " + formatNumber(verdict.naive.mere) + ")");
    }
    if (invalidMismatches > 0) {
      passed = false;
      appendNote(row, output.key + ": " + std::to_string(invalidMismatches) +
                          " elements of fully masked rows differ from -FLT_MAX / +FLT_MAX (or lie outside the view)");
    }
  }
  row.passed = passed;
  row.bitExact = bitExact;
}

}  // namespace gradkit::cli
