#include "suites/flash_attention_suite_common.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "harness/error.h"
#include "harness/fill.h"
#include "harness/peer.h"
#include "suites/mhc_suite_common.h"

namespace gradkit::cli {
namespace {

using nlohmann::json;

constexpr int64_t kTemplateSide = 2048;        // the compressed mask templates of spec 2.7
constexpr int64_t kPrefixTemplateRows = 3072;  // mode 6
constexpr int64_t kAlibiRows = 1024;           // the compressed ALiBi pse of spec 2.9
constexpr int64_t kFp8ScaleRows = 128;         // FP8: rows of one de-quant scale block (spec 5.9)

int64_t positive(const json& testCase, const char* key, int64_t fallback) {
  const int64_t value = testCase.value(key, fallback);
  if (value < 0) throw HarnessError(std::string("'") + key + "' must be >= 0");
  return value;
}

std::vector<int64_t> cumulative(const std::vector<int64_t>& lengths) {
  std::vector<int64_t> ends;
  int64_t total = 0;
  for (const int64_t length : lengths) ends.push_back(total += length);
  return ends;
}

std::vector<int64_t> lengthsOf(const std::vector<int64_t>& ends) {
  std::vector<int64_t> lengths;
  int64_t previous = 0;
  for (const int64_t end : ends) {
    lengths.push_back(std::max<int64_t>(end - previous, 0));
    previous = std::max(previous, end);
  }
  return lengths;
}

bool templateMode(int64_t mode) { return mode == 2 || mode == 3 || mode == 4 || mode == 6 || mode == 7 || mode == 8; }

void parseSizes(const json& t, FaCase& fc) {
  fc.n1 = positive(t, "N1", 1);
  fc.n2 = positive(t, "N2", fc.n1);
  fc.d = positive(t, "D", 16);
  fc.dv = positive(t, "DV", fc.d);
  fc.headNum = t.value("head_num", fc.n1);
  if (fc.tnd) {
    if (t.contains("actual_seq_q")) {
      fc.cumQ = t["actual_seq_q"].get<std::vector<int64_t>>();
      fc.seqQ = lengthsOf(fc.cumQ);
    } else {
      fc.seqQ = t.at("seq_q").get<std::vector<int64_t>>();
      fc.cumQ = cumulative(fc.seqQ);
    }
    if (t.contains("actual_seq_kv")) {
      fc.cumKv = t["actual_seq_kv"].get<std::vector<int64_t>>();
      fc.seqKv = lengthsOf(fc.cumKv);
    } else {
      fc.seqKv = t.value("seq_kv", fc.seqQ);
      fc.cumKv = cumulative(fc.seqKv);
    }
    fc.batch = static_cast<int64_t>(fc.seqQ.size());
    if (!fc.expectsRejection && fc.seqKv.size() != fc.seqQ.size()) {
      throw HarnessError("'seq_kv' must hold as many lengths as 'seq_q'");
    }
    for (const int64_t length : fc.seqQ) {
      if (length < 0) throw HarnessError("'seq_q' lengths must be >= 0");
    }
    fc.s1 = fc.seqQ.empty() ? 0 : *std::max_element(fc.seqQ.begin(), fc.seqQ.end());
    fc.s2 = fc.seqKv.empty() ? 0 : *std::max_element(fc.seqKv.begin(), fc.seqKv.end());
    const auto last = [](const std::vector<int64_t>& ends) {
      return ends.empty() ? int64_t{0} : std::max<int64_t>(0, *std::max_element(ends.begin(), ends.end()));
    };
    fc.tokensQ = positive(t, "T1", last(fc.cumQ));
    fc.tokensKv = positive(t, "T2", last(fc.cumKv));
  } else {
    fc.batch = positive(t, "B", 1);
    fc.s1 = positive(t, "S1", 1);
    fc.s2 = positive(t, "S2", fc.s1);
    fc.seqQ.assign(static_cast<size_t>(fc.batch), fc.s1);
    fc.seqKv.assign(static_cast<size_t>(fc.batch), fc.s2);
  }
}

void parseSemantics(const json& t, FaCase& fc) {
  fc.scale = t.value("scale", fc.d > 0 ? 1.0 / std::sqrt(static_cast<double>(fc.d)) : 1.0);
  fc.keepProb = t.value("keep_prob", 1.0);
  fc.dropout = t.value("dropout", std::string(fc.keepProb < 1.0 ? "mask" : "none"));
  if (fc.dropout != "none" && fc.dropout != "mask" && fc.dropout != "philox") {
    throw HarnessError("'dropout' must be \"none\", \"mask\" or \"philox\"");
  }
  fc.dropSeed = t.value("drop_seed", int64_t{2});
  fc.dropOffset = t.value("drop_offset", int64_t{0});
  fc.sparseMode = t.value("sparse_mode", int64_t{0});
  fc.preTokens = t.value("pre_tokens", int64_t{2147483647});
  fc.nextTokens = t.value("next_tokens", int64_t{2147483647});
  fc.prefix = t.value("prefix", std::vector<int64_t>{});
  const std::string defaultMask = templateMode(fc.sparseMode) ? "template" : fc.sparseMode == 5 ? "B1SS" : "none";
  fc.mask = t.value("mask", defaultMask);
  static const std::vector<std::string> masks{"none", "SS", "11SS", "B1SS", "BNSS", "template"};
  if (std::find(masks.begin(), masks.end(), fc.mask) == masks.end()) throw HarnessError("'mask': unknown form");
  const std::string defaultValues = fc.mask == "template" ? "template"
                                    : fc.sparseMode == 5  ? "causal_prefix"
                                                          : "random";
  fc.maskValues = t.value("mask_values", defaultValues);
  static const std::vector<std::string> values{"random", "causal_prefix", "template", "ones"};
  if (std::find(values.begin(), values.end(), fc.maskValues) == values.end()) {
    throw HarnessError("'mask_values': unknown kind");
  }
  fc.maskDtype = parseDtypeOrThrow(t.value("mask_dtype", std::string("bool")), "mask_dtype");
  fc.maskDensity = t.value("mask_density", 0.3);
  fc.pse = t.value("pse_shape", std::string("none"));
  static const std::vector<std::string> pses{"none", "BNSS", "BN1S", "1NSS", "BNHS", "1NHS", "BN", "N"};
  if (std::find(pses.begin(), pses.end(), fc.pse) == pses.end()) throw HarnessError("'pse_shape': unknown form");
  fc.pseType = t.value("pse_type", int64_t{fc.slopes() ? 2 : 1});
  if (t.contains("q_start_idx")) fc.qStartIdx = {t["q_start_idx"].get<int64_t>()};
  if (t.contains("kv_start_idx")) fc.kvStartIdx = {t["kv_start_idx"].get<int64_t>()};
  fc.innerPrecise = t.value("inner_precise", int64_t{0});
  fc.softmaxLayout = t.value("softmax_layout", std::string());
}

// A bool-valued tensor element from its dense bytes (bool and uint8 are one byte).
std::shared_ptr<std::vector<uint8_t>> denseBytes(OpCase& c, const std::string& key) {
  const std::vector<unsigned char>& bytes = c.dense(key);
  return std::make_shared<std::vector<uint8_t>>(bytes.begin(), bytes.end());
}

std::vector<double> maskValues(const FaCase& fc, const std::vector<int64_t>& shape, uint64_t seed) {
  int64_t numel = 1;
  for (const int64_t dim : shape) numel *= dim;
  std::vector<double> values(static_cast<size_t>(numel), 0.0);
  const int64_t rows = shape.size() >= 2 ? shape[shape.size() - 2] : 1, cols = shape.back();
  SplitMix64 random(seed ^ 0x6d61736b76616c73ull);
  for (int64_t e = 0; e < numel; ++e) {
    const int64_t col = e % cols, row = (e / cols) % rows, outer = e / (rows * cols);
    bool masked = false;
    if (fc.maskValues == "random") {
      masked = random.uniform() < fc.maskDensity;
    } else if (fc.maskValues == "ones") {
      masked = true;
    } else if (fc.maskValues == "template") {
      masked = row < kTemplateSide ? col > row : col >= kTemplateSide / 2;
    } else {  // causal_prefix: batch = the outer index over [B, N?] for 4-d masks
      const int64_t heads = shape.size() == 4 ? shape[1] : 1;
      const int64_t b = shape.size() == 4 ? outer / heads : 0;
      const int64_t prefix = b < static_cast<int64_t>(fc.prefix.size()) ? fc.prefix[static_cast<size_t>(b)] : 0;
      masked = col > row + (cols - rows) && col >= prefix;
    }
    values[static_cast<size_t>(e)] = masked ? 1.0 : 0.0;
  }
  return values;
}

// The ALiBi table [Bp, N1, 1024, C]: slope_n * min(0, (c - C) - (r - R)), constant along diagonals (spec 2.9).
std::vector<double> alibiTable(const std::vector<int64_t>& shape, int64_t n1) {
  const std::vector<double> slopes = golden::alibiSlopes(n1);
  const int64_t rows = shape[2], cols = shape[3];
  std::vector<double> values(static_cast<size_t>(shape[0] * shape[1] * rows * cols));
  for (int64_t e = 0; e < static_cast<int64_t>(values.size()); ++e) {
    const int64_t col = e % cols, row = (e / cols) % rows, head = (e / (rows * cols)) % shape[1];
    const double distance = std::min<double>(0.0, static_cast<double>((col - cols) - (row - rows)));
    values[static_cast<size_t>(e)] = slopes[static_cast<size_t>(head)] * distance;
  }
  return values;
}

// The problem's shape and dropout only (enough for the Philox drop mask).
golden::FlashAttentionProblem shapeProblem(const FaCase& fc) {
  golden::FlashAttentionProblem p;
  p.batch = fc.batch;
  p.n1 = std::max<int64_t>(fc.n1, 1);
  p.n2 = std::max<int64_t>(fc.n2, 1);
  p.d = fc.d;
  p.dv = fc.dv;
  p.s1 = fc.seqQ;
  p.s2 = fc.seqKv;
  p.s2.resize(p.s1.size(), 0);
  p.scale = static_cast<float>(fc.scale);
  p.keepProb = static_cast<float>(fc.keepProb);
  p.seed = static_cast<uint64_t>(fc.dropSeed);
  p.offset = static_cast<uint64_t>(fc.dropOffset);
  return p;
}

int64_t dropElements(const FaCase& fc) {
  int64_t total = 0;
  for (size_t b = 0; b < fc.seqQ.size() && b < fc.seqKv.size(); ++b) total += fc.n1 * fc.seqQ[b] * fc.seqKv[b];
  return total;
}

// The attenMask lookup of a dense [.., rows, cols] mask with broadcast leading dims.
std::function<bool(int64_t, int64_t, int64_t, int64_t)> maskLookup(std::shared_ptr<std::vector<uint8_t>> bytes,
                                                                   std::vector<int64_t> shape) {
  const int64_t rows = shape[shape.size() - 2], cols = shape.back();
  const int64_t batches = shape.size() == 4 ? shape[0] : 1, heads = shape.size() == 4 ? shape[1] : 1;
  return [bytes, rows, cols, batches, heads](int64_t b, int64_t n, int64_t row, int64_t col) {
    if (row < 0 || col < 0 || row >= rows || col >= cols) return false;
    const int64_t outer = (batches == 1 ? 0 : b) * heads + (heads == 1 ? 0 : n);
    return (*bytes)[static_cast<size_t>((outer * rows + row) * cols + col)] != 0;
  };
}

// The pse of types 0/1 from the pse tensor's values: plain tables or the expanded ALiBi form.
std::function<double(int64_t, int64_t, int64_t, int64_t)> pseLookup(const FaCase& fc,
                                                                    std::shared_ptr<std::vector<double>> values,
                                                                    std::vector<int64_t> shape) {
  const int64_t batches = shape[0], heads = shape[1], rows = shape[2], cols = shape[3];
  if (fc.pse == "BNHS" || fc.pse == "1NHS") {
    // Expanded per (b, n1) on first use and kept for the rows that follow (the golden walks heads in order).
    struct Cache {
      int64_t b = -1, n = -1, s2 = 0;
      std::vector<double> block;
    };
    auto cache = std::make_shared<Cache>();
    const std::vector<int64_t> s1 = fc.seqQ, s2 = fc.seqKv;
    return [values, cache, batches, heads, rows, cols, s1, s2](int64_t b, int64_t n, int64_t i, int64_t j) {
      if (cache->b != b || cache->n != n) {
        const double* table = values->data() + ((batches == 1 ? 0 : b) * heads + n) * rows * cols;
        cache->block =
            golden::expandAlibiPse(table, rows, cols, s1[static_cast<size_t>(b)], s2[static_cast<size_t>(b)]);
        cache->b = b;
        cache->n = n;
        cache->s2 = s2[static_cast<size_t>(b)];
      }
      return cache->block[static_cast<size_t>(i * cache->s2 + j)];
    };
  }
  return [values, batches, heads, rows, cols](int64_t b, int64_t n, int64_t i, int64_t j) {
    const int64_t outer = (batches == 1 ? 0 : b) * heads + (heads == 1 ? 0 : n);
    return (*values)[static_cast<size_t>((outer * rows + (rows == 1 ? 0 : i)) * cols + j)];
  };
}

}  // namespace

bool FaCase::isNull(const std::string& key) const { return std::find(nulls.begin(), nulls.end(), key) != nulls.end(); }

std::vector<int64_t> FaCase::shape(bool querySide, int64_t heads, int64_t dim) const {
  const int64_t s = querySide ? s1 : s2;
  if (layout == "BNSD") return {batch, heads, s, dim};
  if (layout == "BSND") return {batch, s, heads, dim};
  if (layout == "BSH") return {batch, s, heads * dim};
  if (layout == "SBH") return {s, batch, heads * dim};
  return {querySide ? tokensQ : tokensKv, heads, dim};
}

std::vector<int64_t> FaCase::fp8ScaleShape(bool querySide) const {
  const int64_t rows = querySide ? s1 : s2;
  return {batch, querySide ? n1 : n2, (rows + kFp8ScaleRows - 1) / kFp8ScaleRows, 1};
}

std::vector<int64_t> FaCase::statsShape() const {
  if (tnd) return {tokensQ, n1, 8};
  return {batch, n1, s1, 8};
}

FaCase parseFaCase(const json& t, bool backward) {
  FaCase fc;
  fc.expectsRejection = t.value("expect_status", 0) != 0;
  fc.layout = t.value("layout", std::string("BNSD"));
  static const std::vector<std::string> layouts{"BNSD", "BSND", "BSH", "SBH", "TND"};
  if (std::find(layouts.begin(), layouts.end(), fc.layout) == layouts.end() && !fc.expectsRejection) {
    throw HarnessError("'layout' must be BNSD, BSND, BSH, SBH or TND");
  }
  fc.tnd = fc.layout == "TND";
  parseSizes(t, fc);
  parseSemantics(t, fc);
  const aclDataType dtype = parseDtypeOrThrow(t.value("dtype", std::string("fp32")), "case dtype");
  fc.fp8 = dtype == ACL_FLOAT8_E5M2 || dtype == ACL_FLOAT8_E4M3FN;
  fc.outDtype = fc.fp8 ? parseDtypeOrThrow(t.value("out_dtype", std::string("fp16")), "out_dtype") : dtype;
  if (fc.fp8 && !fc.expectsRejection) {
    if (!backward || fc.tnd) throw HarnessError("FP8 cases: backward (GradV4) with a padded layout only");
    if (fc.outDtype != ACL_FLOAT16 && fc.outDtype != ACL_BF16) throw HarnessError("'out_dtype' must be fp16 or bf16");
    if (t.value("auto", false)) throw HarnessError("FP8 cases have no 'auto' mode (no FP8 forward)");
  }
  const char* defaultApi = fc.fp8     ? "GradV4"
                           : backward ? (fc.tnd ? "UnpaddingV2" : "GradV2")
                                      : (fc.tnd ? "VarLenScoreV2" : "ScoreV2");
  fc.api = t.value("api", std::string(defaultApi));
  // The V1 entry points and the VarLen / Unpadding V4 ones have no pseType: always 1 (spec 2.2).
  static const std::vector<std::string> pseTypeOne{"Score", "VarLenScore", "VarLenScoreV4",
                                                   "Grad",  "Unpadding",   "UnpaddingV4"};
  if (std::find(pseTypeOne.begin(), pseTypeOne.end(), fc.api) != pseTypeOne.end()) fc.pseType = 1;
  fc.nulls = t.value("null", std::vector<std::string>{});
  fc.autoForward = t.value("auto", false);
  fc.checkHeads = t.value("check_heads", int64_t{-1});
  fc.peer = t.value("peer", true);
  return fc;
}

std::function<TensorDefaults(const CaseInfo&)> faDefaults(const std::string& key, bool backward) {
  return [key, backward](const CaseInfo& info) {
    const FaCase fc = parseFaCase(info.json, backward);
    // FP8: the inputs' codes are written by writeFp8Inputs; every other floating tensor takes the out dtype.
    const bool fp8Input = key == "query" || key == "key" || key == "value" || key == "dy";
    TensorDefaults t{fp8Input ? info.dtype : fc.outDtype, {}, info.seed, uniformValues(-2.0, 2.0)};
    if (key.rfind("dScale", 0) == 0) {
      t.dtype = ACL_FLOAT;
      t.values = uniformValues(1.0, 1.0);
      t.shape = !fc.fp8 ? std::vector<int64_t>{1}
                        : fc.fp8ScaleShape(key == "dScaleQ" || key == "dScaleDy" || key == "dScaleO");
    } else if (key == "query" || key == "dq") {
      t.shape = fc.shape(true, fc.n1, fc.d);
    } else if (key == "key" || key == "dk") {
      t.shape = fc.shape(false, fc.n2, fc.d);
    } else if (key == "value" || key == "dv") {
      t.shape = fc.shape(false, fc.n2, fc.dv);
    } else if (key == "dy" || key == "attentionIn" || key == "attentionOut") {
      t.shape = fc.shape(true, fc.n1, fc.dv);
    } else if (key == "softmaxMax" || key == "softmaxSum") {
      t.dtype = ACL_FLOAT;
      t.shape = fc.statsShape();
    } else if (key == "pse") {
      t.values = uniformValues(-1.0, 1.0);
      const int64_t s2 = fc.s2;
      if (fc.pse == "BNSS") {
        t.shape = {fc.batch, fc.n1, fc.s1, s2};
      } else if (fc.pse == "BN1S") {
        t.shape = {fc.batch, fc.n1, 1, s2};
      } else if (fc.pse == "1NSS") {
        t.shape = {1, fc.n1, fc.s1, s2};
      } else if (fc.pse == "BNHS" || fc.pse == "1NHS") {
        t.shape = {fc.pse == "BNHS" ? fc.batch : 1, fc.n1, kAlibiRows, s2};
      } else if (fc.slopes()) {
        t.dtype = ACL_FLOAT;
        t.shape = fc.pse == "BN" ? std::vector<int64_t>{fc.batch, fc.n1} : std::vector<int64_t>{fc.n1};
        t.values = uniformValues(0.0625, 1.0);
      } else {
        t.shape = {1};
      }
    } else if (key == "dropMask") {
      t.dtype = ACL_UINT8;
      t.shape = {fc.dropout == "mask" ? (dropElements(fc) + 7) / 8 : 1};
      t.values = uniformValues(0, 255);
    } else if (key == "attenMask") {
      t.dtype = fc.maskDtype;
      t.values = uniformValues(0, 1);
      if (fc.mask == "SS") {
        t.shape = {fc.s1, fc.s2};
      } else if (fc.mask == "11SS") {
        t.shape = {1, 1, fc.s1, fc.s2};
      } else if (fc.mask == "B1SS") {
        t.shape = {fc.batch, 1, fc.s1, fc.s2};
      } else if (fc.mask == "BNSS") {
        t.shape = {fc.batch, fc.n1, fc.s1, fc.s2};
      } else if (fc.mask == "template") {
        t.shape = {fc.sparseMode == 6 ? kPrefixTemplateRows : kTemplateSide, kTemplateSide};
      } else {
        t.shape = {1};
      }
    } else {
      throw HarnessError(std::string("flash attention suites (") + (backward ? "backward" : "forward") +
                         "): no defaults for tensor '" + key + "'");
    }
    return t;
  };
}

void writeDerivedInputs(OpCase& c, const FaCase& fc) {
  if (fc.hasMask()) writeView(c, "attenMask", maskValues(fc, c.spec("attenMask").shape, c.info().seed));
  if ((fc.pse == "BNHS" || fc.pse == "1NHS") && c.spec("pse").shape.size() == 4) {
    writeView(c, "pse", alibiTable(c.spec("pse").shape, fc.n1));
  }
  if (fc.dropout == "mask" && !fc.expectsRejection) {
    const std::vector<uint8_t> bits = golden::flashAttentionPhiloxDropMask(shapeProblem(fc));
    std::vector<double> values(static_cast<size_t>(c.spec("dropMask").numel()), 0.0);
    for (size_t i = 0; i < values.size() && i < bits.size(); ++i) values[i] = bits[i];
    writeView(c, "dropMask", values);
  }
}

aclTensor* faTensor(OpCase& c, const FaCase& fc, const std::string& key) {
  if (fc.isNull(key)) return nullptr;
  if (key == "pse" && !fc.hasPse()) return nullptr;
  if (key == "dropMask" && fc.dropout != "mask") return nullptr;
  if (key == "attenMask" && !fc.hasMask()) return nullptr;
  if (key.rfind("dScale", 0) == 0 && !fc.fp8) return nullptr;
  return c.acl(key);
}

std::vector<int64_t> canonicalIndex(const FaCase& fc, bool querySide, int64_t heads, int64_t dim) {
  const std::vector<int64_t>& lengths = querySide ? fc.seqQ : fc.seqKv;
  const int64_t padded = querySide ? fc.s1 : fc.s2;
  std::vector<int64_t> index;
  int64_t before = 0;
  for (int64_t b = 0; b < fc.batch; ++b) {
    const int64_t rows = lengths[static_cast<size_t>(b)];
    for (int64_t n = 0; n < heads; ++n) {
      for (int64_t s = 0; s < rows; ++s) {
        int64_t row = 0;  // the dense index of element 0 of (b, n, s), divided by dim
        if (fc.layout == "BNSD") {
          row = (b * heads + n) * padded + s;
        } else if (fc.layout == "SBH") {
          row = (s * fc.batch + b) * heads + n;
        } else if (fc.tnd) {
          row = (before + s) * heads + n;
        } else {  // BSND, BSH
          row = (b * padded + s) * heads + n;
        }
        for (int64_t e = 0; e < dim; ++e) index.push_back(row * dim + e);
      }
    }
    before += rows;
  }
  return index;
}

std::vector<double> canonicalValues(OpCase& c, const FaCase& fc, const std::string& key, bool querySide, int64_t heads,
                                    int64_t dim) {
  const std::vector<double> dense = denseValues(c, key);
  const std::vector<int64_t> index = canonicalIndex(fc, querySide, heads, dim);
  std::vector<double> values(index.size());
  for (size_t k = 0; k < index.size(); ++k) values[k] = dense[static_cast<size_t>(index[k])];
  return values;
}

std::vector<double> toLayout(const FaCase& fc, const std::vector<double>& canonical, bool querySide, int64_t heads,
                             int64_t dim) {
  const std::vector<int64_t> shape = fc.shape(querySide, heads, dim);
  int64_t numel = 1;
  for (const int64_t d : shape) numel *= d;
  std::vector<double> dense(static_cast<size_t>(numel), 0.0);
  const std::vector<int64_t> index = canonicalIndex(fc, querySide, heads, dim);
  for (size_t k = 0; k < index.size() && k < canonical.size(); ++k) dense[static_cast<size_t>(index[k])] = canonical[k];
  return dense;
}

std::vector<int64_t> statsIndex(const FaCase& fc) {
  std::vector<int64_t> index;
  int64_t before = 0;
  for (int64_t b = 0; b < fc.batch; ++b) {
    const int64_t rows = fc.seqQ[static_cast<size_t>(b)];
    for (int64_t n = 0; n < fc.n1; ++n) {
      for (int64_t i = 0; i < rows; ++i) {
        if (!fc.tnd) {
          index.push_back(((b * fc.n1 + n) * fc.s1 + i) * 8);
        } else if (fc.softmaxLayout == "same_as_input") {
          index.push_back(((before + i) * fc.n1 + n) * 8);
        } else {
          index.push_back((fc.n1 * before + n * rows + i) * 8);
        }
      }
    }
    before += rows;
  }
  return index;
}

std::vector<double> statsToLayout(const FaCase& fc, const std::vector<double>& perRow) {
  const std::vector<int64_t> shape = fc.statsShape();
  std::vector<double> dense(static_cast<size_t>(shape[0] * shape[1] * shape[2] * (shape.size() == 4 ? shape[3] : 1)),
                            0.0);
  const std::vector<int64_t> index = statsIndex(fc);
  for (size_t k = 0; k < index.size() && k < perRow.size(); ++k) {
    for (int64_t lane = 0; lane < 8; ++lane) dense[static_cast<size_t>(index[k] + lane)] = perRow[k];
  }
  return dense;
}

std::vector<double> statsFromLayout(const FaCase& fc, const std::vector<double>& dense) {
  const std::vector<int64_t> index = statsIndex(fc);
  std::vector<double> perRow(index.size());
  for (size_t k = 0; k < index.size(); ++k) perRow[k] = dense[static_cast<size_t>(index[k])];
  return perRow;
}

int64_t faCheckedHeads(const FaCase& fc) { return fc.checkHeads < 0 ? fc.n1 : std::min(fc.checkHeads, fc.n1); }

golden::FlashAttentionProblem faGoldenProblem(OpCase& c, const FaCase& fc, int64_t heads) {
  golden::FlashAttentionProblem p = shapeProblem(fc);
  if (heads > 0 && heads < fc.n1) {
    if (fc.batch != 1 || fc.n1 != fc.n2) throw HarnessError("check_heads needs B = 1 and N1 = N2");
    p.n1 = p.n2 = heads;
  }
  if (fc.hasMask()) {
    p.hasMask = true;
    p.sparseMode = fc.sparseMode;
    p.preTokens = fc.preTokens;
    p.nextTokens = fc.nextTokens;
    p.prefix = fc.prefix;
    if (fc.mask != "template") {
      const std::vector<int64_t> shape = c.spec("attenMask").shape;
      p.attenMask = maskLookup(denseBytes(c, "attenMask"), shape);
      p.maskRows = shape[shape.size() - 2];
      p.maskCols = shape.back();
    }
  }
  if (fc.hasPse()) {
    p.hasPse = true;
    p.pseType = fc.pseType;
    const std::vector<double> values = denseValues(c, "pse");
    if (fc.slopes()) {
      const int64_t perBatch = fc.pse == "BN" ? fc.n1 : 0;
      for (int64_t b = 0; b < (fc.pse == "BN" ? fc.batch : 1); ++b) {
        for (int64_t n = 0; n < p.n1; ++n) p.slopes.push_back(static_cast<float>(values[b * perBatch + n]));
      }
    } else {
      p.pse = pseLookup(fc, std::make_shared<std::vector<double>>(values), c.spec("pse").shape);
    }
    if (!fc.qStartIdx.empty()) p.qStartIdx = fc.qStartIdx[0];
    if (!fc.kvStartIdx.empty()) p.kvStartIdx = fc.kvStartIdx[0];
  }
  if (fc.dropout == "mask") {
    // The bytes live as long as the case: dense() keeps them.
    p.dropMask = reinterpret_cast<const uint8_t*>(c.dense("dropMask").data());
  }
  return p;
}

double faUnmaskedPairs(OpCase& c, const FaCase& fc) {
  const golden::FlashAttentionProblem p = faGoldenProblem(c, fc);
  const bool perHead = fc.mask == "BNSS";
  double pairs = 0.0;
  for (int64_t b = 0; b < fc.batch; ++b) {
    for (int64_t n = 0; n < (perHead ? fc.n1 : 1); ++n) {
      double count = 0.0;
      for (int64_t i = 0; i < p.s1[static_cast<size_t>(b)]; ++i) {
        for (int64_t j = 0; j < p.s2[static_cast<size_t>(b)]; ++j) {
          if (!golden::flashAttentionMasked(p, b, n, i, j)) count += 1.0;
        }
      }
      pairs += perHead ? count : count * static_cast<double>(fc.n1);
    }
  }
  return pairs;
}

bool resetPeakRss() {
  std::ofstream clear("/proc/self/clear_refs");
  clear << "5";
  return static_cast<bool>(clear.flush());
}

namespace {

// A "Vm...:   123 kB" line of /proc/self/status in bytes, 0 when absent.
double statusBytes(const std::string& field) {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind(field, 0) == 0) return std::stod(line.substr(field.size())) * 1024.0;
  }
  return 0.0;
}

}  // namespace

double peakRssBytes() { return statusBytes("VmHWM:"); }
double currentRssBytes() { return statusBytes("VmRSS:"); }

OpCall::Peer faTorchPeer(const FaCase& fc, const std::string& dtypeText, bool backward) {
  OpCall::Peer peer;
  peer.script = "flash_attention.py";
  peer.files = {{"query", "q"}, {"key", "k"}, {"value", "v"}};
  if (backward) peer.files.push_back({"dy", "dy"});
  if (fc.dropout == "mask") peer.files.push_back({"dropMask", "drop_mask"});
  if (fc.hasPse()) peer.files.push_back({"pse", "pse"});
  std::ostringstream scale;
  scale.precision(17);
  scale << fc.scale;
  std::ostringstream keep;
  keep.precision(17);
  keep << fc.keepProb;
  const bool causal = fc.hasMask() && (fc.sparseMode == 2 || (fc.sparseMode == 3 && fc.s1 == fc.s2));
  peer.args = {"--dtype",     dtypeText,
               "--mode",      backward ? "backward" : "forward",
               "--layout",    fc.layout,
               "--heads",     std::to_string(fc.n1),
               "--kv-heads",  std::to_string(fc.n2),
               "--scale",     scale.str(),
               "--keep-prob", keep.str(),
               "--pse",       fc.pse,
               "--pse-type",  std::to_string(fc.pseType)};
  if (causal) peer.args.push_back("--causal");
  peer.torch = currentTorchPython() ? PeerTorch::Current : PeerTorch::Debian;
  return peer;
}

}  // namespace gradkit::cli
