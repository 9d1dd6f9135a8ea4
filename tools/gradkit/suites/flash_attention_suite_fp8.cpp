#include "suites/flash_attention_suite_fp8.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "golden/flash_attention_fp8.h"
#include "harness/elements.h"
#include "harness/error.h"
#include "harness/fill.h"
#include "harness/rows.h"
#include "harness/view_checks.h"
#include "suites/mhc_suite_common.h"

namespace gradkit::cli {
namespace {

constexpr double kRelL2Gate = 1e-3;       // measured <= 1.5e-4 on the op tests' shapes
constexpr double kRelMaxGate = 0.02;      // of the largest golden value; measured <= 1.7e-3
constexpr double kOverShareGate = 0.005;  // spec 5.11's ratio
constexpr double kRelative = 0.005;       // spec 5.11's relative threshold
constexpr double kFloor = 2.4974346e-05;  // fp16(2.5e-5), as upstream stores it

golden::Fp8Format formatOf(OpCase& c) {
  return c.spec("query").dtype == ACL_FLOAT8_E5M2 ? golden::Fp8Format::E5M2 : golden::Fp8Format::E4M3FN;
}

// `count` floats uniform in [-2, 2) from the case's data seed and a per-tensor stream.
std::vector<float> drawFloats(uint64_t seed, uint64_t stream, size_t count) {
  SplitMix64 random(seed ^ (0x9e3779b97f4a7c15ull * (stream + 1)));
  std::vector<float> values(count);
  for (float& value : values) value = static_cast<float>(4.0 * random.uniform() - 2.0);
  return values;
}

std::vector<double> wide(const std::vector<float>& values) { return std::vector<double>(values.begin(), values.end()); }

std::vector<float> narrow(const std::vector<double>& values) {
  return std::vector<float>(values.begin(), values.end());
}

// The first `count` values.
template <class T>
std::vector<T> cut(std::vector<T> values, size_t count) {
  if (values.size() > count) values.resize(count);
  return values;
}

int64_t rowsOf(const std::vector<int64_t>& lengths) {
  int64_t rows = 0;
  for (const int64_t length : lengths) rows += length;
  return rows;
}

/** The case's quantised tensors (values, not codes) and scales as the golden reads them, cut to `heads`. */
struct Fp8Tensors {
  std::vector<float> q, k, v, dy, dsQ, dsK, dsV, dsDy;
  golden::FlashAttentionFp8Inputs inputs;

  Fp8Tensors(OpCase& c, const FaCase& fc, int64_t heads) {
    const int64_t kvHeads = std::max<int64_t>(heads / fc.groups(), 1);
    const auto qRows = static_cast<size_t>(rowsOf(fc.seqQ) * heads);
    const auto kvRows = static_cast<size_t>(rowsOf(fc.seqKv) * kvHeads);
    q = narrow(cut(canonicalValues(c, fc, "query", true, fc.n1, fc.d), qRows * fc.d));
    k = narrow(cut(canonicalValues(c, fc, "key", false, fc.n2, fc.d), kvRows * fc.d));
    v = narrow(cut(canonicalValues(c, fc, "value", false, fc.n2, fc.dv), kvRows * fc.dv));
    dy = narrow(cut(canonicalValues(c, fc, "dy", true, fc.n1, fc.dv), qRows * fc.dv));
    // [B][N][blocks]: with B = 1 the first heads' blocks come first.
    dsQ = narrow(denseValues(c, "dScaleQ"));
    dsK = narrow(denseValues(c, "dScaleK"));
    dsV = narrow(denseValues(c, "dScaleV"));
    dsDy = narrow(denseValues(c, "dScaleDy"));
    inputs = {formatOf(c), q.data(), k.data(), v.data(), dsQ.data(), dsK.data(), dsV.data()};
  }
};

struct Diff {
  double relL2 = 0, relMax = 0, overShare = 0, top = 0;
  bool bitExact = true;
};

Diff diffOf(const std::vector<double>& ours, const std::vector<double>& want) {
  Diff d;
  double num = 0, den = 0, worst = 0;
  int64_t over = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double diff = std::fabs(ours[i] - want[i]);
    d.bitExact = d.bitExact && ours[i] == want[i];
    num += diff * diff;
    den += want[i] * want[i];
    d.top = std::max(d.top, std::fabs(want[i]));
    worst = std::max(worst, diff);
    const double threshold = std::max(std::max(std::fabs(ours[i]), std::fabs(want[i])) * kRelative, kFloor);
    if (!(diff <= threshold)) ++over;
  }
  d.relL2 = std::sqrt(num / std::max(den, 1e-300));
  d.relMax = worst / std::max(d.top, 1e-300);
  d.overShare = static_cast<double>(over) / static_cast<double>(std::max<size_t>(want.size(), 1));
  return d;
}

std::string scientific(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.2e", value);
  return text;
}

}  // namespace

void writeFp8Inputs(OpCase& c, const FaCase& fc) {
  const golden::Fp8Format format = formatOf(c);
  const golden::FlashAttentionProblem p = faGoldenProblem(c, fc);
  const uint64_t seed = c.info().seed;
  const auto quantised = [&](const char* key, uint64_t stream, bool querySide, int64_t heads, int64_t dim) {
    const std::vector<float> x =
        drawFloats(seed, stream, static_cast<size_t>(rowsOf(querySide ? fc.seqQ : fc.seqKv) * heads * dim));
    golden::Fp8Quantized q = querySide ? golden::fp8QuantizeQuerySide(p, format, x.data(), dim)
                                       : golden::fp8QuantizeKeySide(p, format, x.data(), dim);
    // The values are exact in the format: storing them writes the quantiser's codes.
    writeView(c, key, toLayout(fc, wide(q.values), querySide, heads, dim));
    return q;
  };
  const golden::Fp8Quantized q = quantised("query", 0, true, fc.n1, fc.d);
  const golden::Fp8Quantized k = quantised("key", 1, false, fc.n2, fc.d);
  const golden::Fp8Quantized v = quantised("value", 2, false, fc.n2, fc.dv);
  const golden::Fp8Quantized dy = quantised("dy", 3, true, fc.n1, fc.dv);
  writeView(c, "dScaleQ", wide(q.dScale));
  writeView(c, "dScaleK", wide(k.dScale));
  writeView(c, "dScaleV", wide(v.dScale));
  writeView(c, "dScaleDy", wide(dy.dScale));
  writeView(c, "dScaleO", wide(q.dScale));
}

FaForwardValues faFp8Forward(OpCase& c, const FaCase& fc) {
  const Fp8Tensors t(c, fc, fc.n1);
  const golden::FlashAttentionForwardOutputs<double> out =
      golden::flashAttentionFp8Forward(faGoldenProblem(c, fc), t.inputs);
  return {out.out, out.softmaxMax, out.softmaxSum};
}

FaBackwardValues faFp8Backward(OpCase& c, const FaCase& fc, int64_t heads) {
  const golden::FlashAttentionProblem problem = faGoldenProblem(c, fc, heads);
  const Fp8Tensors t(c, fc, heads);
  const auto qRows = static_cast<size_t>(rowsOf(fc.seqQ) * heads);
  const std::vector<double> attentionIn = cut(canonicalValues(c, fc, "attentionIn", true, fc.n1, fc.dv), qRows * fc.dv);
  const std::vector<double> max = cut(statsFromLayout(fc, denseValues(c, "softmaxMax")), qRows);
  const std::vector<double> sum = cut(statsFromLayout(fc, denseValues(c, "softmaxSum")), qRows);
  golden::FlashAttentionFp8GradInputs in;
  in.tensors = t.inputs;
  in.dy = t.dy.data();
  in.dScaleDy = t.dsDy.data();
  in.attentionIn = attentionIn.data();
  in.softmaxMax = max.data();
  in.softmaxSum = sum.data();
  const golden::FlashAttentionGradOutputs<double> grads = golden::flashAttentionFp8Backward(problem, in);
  return {grads.dq, grads.dk, grads.dv};
}

void faFp8Judge(OpCase& c, const FaCase& fc, const FaBackwardValues& golden, VerifyRow& row) {
  bool passed = true, bitExact = true;
  const std::vector<FaOutput> outputs = faBackwardOutputs(c, fc, golden, golden);
  std::string summary;
  for (const FaOutput& output : outputs) {
    const aclDataType dtype = c.spec(output.key).dtype;
    const std::vector<unsigned char> dense = c.tensor(output.key).dense();
    const auto numel = static_cast<int64_t>(dense.size() / std::max<size_t>(1, c.tensor(output.key).elementSize()));
    std::vector<double> ours, want;
    for (size_t k = 0; k < output.index.size(); ++k) {
      if (output.index[k] >= numel) throw HarnessError(output.key + ": golden element outside the output's view");
      const double a = loadAsDouble(dtype, dense.data(), output.index[k]);
      unsigned char bytes[8] = {};
      storeFromDouble(dtype, bytes, 0, output.golden[k]);
      const double g = loadAsDouble(dtype, bytes, 0);
      row.maxAbsErr = std::max(row.maxAbsErr, std::fabs(a - g));
      row.maxRelErr = std::max(row.maxRelErr, std::fabs(a - g) / std::max(std::fabs(g), kFloor));
      ours.push_back(a);
      want.push_back(g);
    }
    const Diff d = diffOf(ours, want);
    bitExact = bitExact && d.bitExact;
    const bool ok = d.top > 0 && d.relL2 < kRelL2Gate && d.relMax < kRelMaxGate && d.overShare <= kOverShareGate;
    passed = passed && ok;
    summary += (summary.empty() ? "" : ", ") + output.key + (ok ? "" : " FAIL") + " rel L2 " + scientific(d.relL2) +
               " max " + scientific(d.relMax) + " over " + formatNumber(100.0 * d.overShare) + "%";
  }
  appendNote(row,
             "vs the FP8 golden chain (gates rel L2 < 1e-3, max < 2 % of max |golden|, <= 0.5 % over): " + summary);
  row.passed = passed;
  row.bitExact = bitExact;
}

}  // namespace gradkit::cli
