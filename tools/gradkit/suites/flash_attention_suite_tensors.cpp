// The tensors of a flash attention case (suites/flash_attention_suite.h): rules, default shapes from the size model,
// the values a case derives rather than draws, and the map between dense elements and the canonical order.
#include <algorithm>
#include <optional>
#include <sstream>

#include "golden/flash_attention_fp8.h"
#include "harness/case_values.h"
#include "harness/error.h"
#include "harness/fill.h"
#include "harness/tensor_spec.h"
#include "suites/flash_attention_suite.h"

namespace gradkit::cli {
namespace {

const std::array<std::string, 4> kFp8Inputs = {"query", "key", "value", "dy"};
const std::array<std::string, 4> kFp8Scales = {"dScaleQ", "dScaleK", "dScaleV", "dScaleDy"};

// A tensor laid out like query (querySide) or key, with its heads and last dim.
struct LayoutTensor {
  bool querySide;
  int64_t heads, dim;
};

std::optional<LayoutTensor> layoutTensorOf(const FaCase& fc, const std::string& key) {
  if (key == "query" || key == "dq") return LayoutTensor{true, fc.n1, fc.d};
  if (key == "key" || key == "dk") return LayoutTensor{false, fc.n2, fc.d};
  if (key == "value" || key == "dv") return LayoutTensor{false, fc.n2, fc.dv};
  if (key == "dy" || key == "attentionIn" || key == "attentionOut") return LayoutTensor{true, fc.n1, fc.dv};
  if (key == "queryRope" || key == "dqRope") return LayoutTensor{true, fc.n1, fc.dRope};
  if (key == "keyRope" || key == "dkRope") return LayoutTensor{false, fc.n2, fc.dRope};
  return std::nullopt;
}

bool isStats(const std::string& key) { return key == "softmaxMax" || key == "softmaxSum"; }

// The dense element of each canonical value (b, n, row, e) of a tensor laid out as `s.layout`, by its axis strides.
std::vector<int64_t> layoutIndex(const ops::FaSizes& s, const LayoutTensor& t) {
  const std::vector<int64_t> shape = ops::faLayoutShape(s, t.querySide, t.heads, t.dim);
  const ops::FaAxisStrides axis = ops::faAxisStrides(s.layout, contiguousStrides(shape), t.dim);
  const std::vector<int64_t>& lengths = t.querySide ? s.seqQ : s.seqKv;
  std::vector<int64_t> index;
  int64_t before = 0;  // TND: the rows of the earlier batches
  for (size_t b = 0; b < lengths.size(); ++b) {
    for (int64_t n = 0; n < t.heads; ++n) {
      for (int64_t row = before; row < before + lengths[b]; ++row) {
        for (int64_t e = 0; e < t.dim; ++e) {
          index.push_back(static_cast<int64_t>(b) * axis.batch + n * axis.head + row * axis.row + e * axis.element);
        }
      }
    }
    if (s.tnd()) before += lengths[b];
  }
  return index;
}

// The dense element of each canonical value of `key` (golden/flash_attention.h's order: per batch [heads][rows][dim];
// the statistics one value per query row, at the first of its 8 lanes, spec 2.6).
std::vector<int64_t> canonicalIndex(const FaCase& fc, const std::string& key) {
  if (const std::optional<LayoutTensor> layout = layoutTensorOf(fc, key)) return layoutIndex(fc, *layout);
  if (!isStats(key)) throw HarnessError("'" + key + "' has no canonical order");
  // The statistics [B, N1, S1, 8] ([T1, N1, 8]) are a BNSD (TND) tensor of 8 lanes per row; TND's default softmax
  // layout keeps the rows in canonical order instead.
  ops::FaSizes stats = fc;
  stats.layout = fc.tnd() ? ops::FaLayout::TND : ops::FaLayout::BNSD;
  const std::vector<int64_t> lanes = layoutIndex(stats, {true, fc.n1, 8});
  std::vector<int64_t> rows;
  for (size_t k = 0; k < lanes.size(); k += 8) {
    rows.push_back(fc.tnd() && fc.softmaxLayout != "same_as_input" ? static_cast<int64_t>(k) : lanes[k]);
  }
  return rows;
}

std::vector<double> maskValues(const FaCase& fc, const std::vector<int64_t>& shape, int64_t numel, uint64_t seed) {
  std::vector<double> values(static_cast<size_t>(numel), 0.0);
  const int64_t rows = shape.size() >= 2 ? shape[shape.size() - 2] : 1, cols = shape.back();
  SplitMix64 random(seed ^ 0x6d61736b76616c73ull);
  for (int64_t e = 0; e < numel; ++e) {
    const int64_t col = e % cols, row = (e / cols) % rows, outer = e / (rows * cols);
    bool masked = fc.maskValues == "ones";
    if (fc.maskValues == "random") {
      masked = random.uniform() < fc.maskDensity;
    } else if (fc.maskValues == "template") {
      masked = row < ops::kFaMaskTemplate ? col > row : col >= ops::kFaMaskTemplate / 2;
    } else if (fc.maskValues == "causal_prefix") {  // batch = the outer index over [B, N?] for 4-d masks
      const int64_t b = shape.size() == 4 ? outer / shape[1] : 0;
      const int64_t prefix = b < static_cast<int64_t>(fc.prefix.size()) ? fc.prefix[static_cast<size_t>(b)] : 0;
      masked = col > row + (cols - rows) && col >= prefix;
    }
    values[static_cast<size_t>(e)] = masked ? 1.0 : 0.0;
  }
  return values;
}

std::vector<int64_t> maskShape(const FaCase& fc) {
  if (fc.mask == "template")
    return ops::faMaskShape(fc, ops::faTemplateMaskOf(fc.sparseMode).value_or(ops::FaMaskForm::Template));
  const std::optional<ops::FaMaskForm> form = ops::faMaskFormFromName(fc.mask);
  return form ? ops::faMaskShape(fc, *form) : std::vector<int64_t>{1};
}

// The default view and values of the tensor named `key`.
std::function<TensorDefaults(const CaseInfo&)> faDefaults(const std::string& key, bool backward) {
  return [key, backward](const CaseInfo& info) {
    const FaCase fc = parseFaCase(info.json, backward);
    // FP8: the inputs' codes are written by writeFp8Inputs; every other floating tensor takes the out dtype.
    const bool fp8Input = std::find(kFp8Inputs.begin(), kFp8Inputs.end(), key) != kFp8Inputs.end();
    TensorDefaults t{fp8Input ? info.dtype : fc.outDtype, {}, info.seed, uniformValues(-2.0, 2.0)};
    if (const std::optional<LayoutTensor> layout = layoutTensorOf(fc, key)) {
      t.shape = ops::faLayoutShape(fc, layout->querySide, layout->heads, layout->dim);
    } else if (key.rfind("dScale", 0) == 0) {  // FP8: [B, N, ceil(S / 128), 1]
      const bool querySide = key == "dScaleQ" || key == "dScaleDy" || key == "dScaleO";
      t = {ACL_FLOAT, {1}, info.seed, uniformValues(1.0, 1.0)};
      if (fc.fp8) t.shape = {fc.b, querySide ? fc.n1 : fc.n2, golden::fp8Blocks(querySide ? fc.seqQ : fc.seqKv), 1};
    } else if (isStats(key)) {
      t.dtype = ACL_FLOAT;
      t.shape = ops::faStatisticsShape(fc);
    } else if (key == "pse") {
      t.shape = fc.hasPse() ? ops::faPseShape(fc, *ops::faPseFormFromName(fc.pse)) : std::vector<int64_t>{1};
      t.values = fc.slopes() ? uniformValues(0.0625, 1.0) : uniformValues(-1.0, 1.0);
      if (fc.slopes()) t.dtype = ACL_FLOAT;
    } else if (key == "dropMask") {
      t = {ACL_UINT8,
           {fc.dropout == "mask" ? static_cast<int64_t>(ops::faDropMaskBytes(fc)) : 1},
           info.seed,
           uniformValues(0, 255)};
    } else if (key == "attenMask") {
      t = {fc.maskDtype, maskShape(fc), info.seed, uniformValues(0, 1)};
    } else {
      throw HarnessError(std::string("flash attention suites (") + (backward ? "backward" : "forward") +
                         "): no defaults for tensor '" + key + "'");
    }
    return t;
  };
}

}  // namespace

std::vector<TensorRule> faTensorRules(bool backward, bool rope) {
  // The inputs, then after "|" the outputs (their order is the output digest's).
  std::istringstream keys(backward
                              ? "query key value dy pse dropMask attenMask softmaxMax softmaxSum attentionIn dScaleQ "
                                "dScaleK dScaleV dScaleDy dScaleO queryRope keyRope | dq dk dv dqRope dkRope"
                              : "query key value pse dropMask attenMask | softmaxMax softmaxSum attentionOut");
  std::vector<TensorRule> rules;
  bool outputs = false;
  for (std::string key; keys >> key;) {
    if (key == "|") {
      outputs = true;
    } else if (rope || key.find("Rope") == std::string::npos) {
      rules.push_back((outputs ? outputRule : inputRule)(key, faDefaults(key, backward)));
    }
  }
  return rules;
}

void writeDerivedInputs(OpCase& c, const FaCase& fc) {
  if (fc.hasMask()) {
    writeView(c, "attenMask", maskValues(fc, c.spec("attenMask").shape, c.spec("attenMask").numel(), c.info().seed));
  }
  if ((fc.pse == "BNHS" || fc.pse == "1NHS") && c.spec("pse").shape.size() == 4) {
    writeView(c, "pse", golden::alibiPseTable(c.spec("pse").shape, fc.n1));
  }
  if (fc.dropout == "mask" && !fc.expectsRejection) {
    const std::vector<uint8_t> bits = golden::flashAttentionPhiloxDropMask(faShapeProblem(fc));
    std::vector<double> values(static_cast<size_t>(c.spec("dropMask").numel()), 0.0);
    std::copy_n(bits.begin(), std::min(values.size(), bits.size()), values.begin());
    writeView(c, "dropMask", values);
  }
}

void writeFp8Inputs(OpCase& c, const FaCase& fc, const std::array<std::vector<float>, 4>& qkvDy) {
  const golden::Fp8Format format =
      c.spec("query").dtype == ACL_FLOAT8_E5M2 ? golden::Fp8Format::E5M2 : golden::Fp8Format::E4M3FN;
  const golden::FlashAttentionProblem p = faShapeProblem(fc);
  for (size_t i = 0; i < qkvDy.size(); ++i) {
    const LayoutTensor layout = *layoutTensorOf(fc, kFp8Inputs[i]);
    const golden::Fp8Quantized q = layout.querySide
                                       ? golden::fp8QuantizeQuerySide(p, format, qkvDy[i].data(), layout.dim)
                                       : golden::fp8QuantizeKeySide(p, format, qkvDy[i].data(), layout.dim);
    // The values are exact in the format: storing them writes the quantiser's codes.
    writeCanonical(c, fc, kFp8Inputs[i], {q.values.begin(), q.values.end()});
    writeView(c, kFp8Scales[i], {q.dScale.begin(), q.dScale.end()});
    if (i == 0) writeView(c, "dScaleO", {q.dScale.begin(), q.dScale.end()});
  }
}

void writeFp8Inputs(OpCase& c, const FaCase& fc) {
  std::array<std::vector<float>, 4> qkvDy;
  for (size_t i = 0; i < qkvDy.size(); ++i) {  // one stream per tensor
    SplitMix64 random(c.info().seed ^ (0x9e3779b97f4a7c15ull * (i + 1)));
    qkvDy[i].resize(canonicalIndex(fc, kFp8Inputs[i]).size());
    for (float& value : qkvDy[i]) value = static_cast<float>(4.0 * random.uniform() - 2.0);
  }
  writeFp8Inputs(c, fc, qkvDy);
}

aclTensor* faTensor(OpCase& c, const FaCase& fc, const std::string& key) {
  const bool absent = (key == "pse" && !fc.hasPse()) || (key == "dropMask" && fc.dropout != "mask") ||
                      (key == "attenMask" && !fc.hasMask()) || (key.rfind("dScale", 0) == 0 && !fc.fp8) ||
                      (key.find("Rope") != std::string::npos && fc.dRope == 0);
  return absent || std::find(fc.nulls.begin(), fc.nulls.end(), key) != fc.nulls.end() ? nullptr : c.acl(key);
}

std::vector<double> canonicalValues(OpCase& c, const FaCase& fc, const std::string& key, bool written) {
  const std::vector<unsigned char> dense = written ? c.tensor(key).dense() : c.dense(key);
  std::vector<double> values;
  for (const int64_t at : canonicalIndex(fc, key)) values.push_back(loadAsDouble(c.spec(key).dtype, dense.data(), at));
  return values;
}

FaOutput faOutput(const FaCase& fc, const std::string& key, const std::vector<double>& values) {
  FaOutput result{key, isStats(key), {}, {}};
  const std::vector<int64_t> index = canonicalIndex(fc, key);
  for (size_t k = 0; k < values.size() && k < index.size(); ++k) {  // the checked heads come first
    for (int64_t lane = 0; lane < (result.stats ? 8 : 1); ++lane) {
      result.values.push_back(values[k]);
      result.index.push_back(index[k] + lane);
    }
  }
  return result;
}

void writeCanonical(OpCase& c, const FaCase& fc, const std::string& key, const std::vector<double>& values) {
  std::vector<double> dense(static_cast<size_t>(c.spec(key).numel()), 0.0);
  const FaOutput placed = faOutput(fc, key, values);
  for (size_t k = 0; k < placed.index.size(); ++k) dense[static_cast<size_t>(placed.index[k])] = placed.values[k];
  writeView(c, key, dense);
}

}  // namespace gradkit::cli
