#include "suites/flash_attention_seed_context.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "harness/elements.h"
#include "harness/error.h"
#include "harness/fill.h"
#include "harness/tensor_spec.h"

namespace gradkit::cli {
namespace {

constexpr int64_t kTemplateSide = 2048;  // the compressed mask template of modes 2, 3, 4, 7, 8 (spec 2.7)
constexpr int64_t kAlibiRows = 1024;     // the compressed ALiBi pse (spec 2.9)
constexpr double kPi = 3.14159265358979323846;

/** Standard normal values (Box-Muller over SplitMix64: the same on every platform, unlike std::normal_distribution). */
class NormalStream {
 public:
  explicit NormalStream(uint64_t seed) : random_(seed) {}
  double next() {
    if (spare_) {
      spare_ = false;
      return second_;
    }
    const double u1 = 1.0 - random_.uniform(), u2 = random_.uniform();  // u1 in (0, 1]
    const double radius = std::sqrt(-2.0 * std::log(u1));
    second_ = radius * std::sin(2.0 * kPi * u2);
    spare_ = true;
    return radius * std::cos(2.0 * kPi * u2);
  }
  double uniform() { return random_.uniform(); }

 private:
  SplitMix64 random_;
  bool spare_ = false;
  double second_ = 0.0;
};

// `rows` rows of `dim` normal values cast to `dtype` (FP8: kept in fp32, quantised later by the FP8 path).
std::vector<double> normalRows(NormalStream& normal, int64_t rows, int64_t dim, aclDataType dtype) {
  const aclDataType cast = (dtype == ACL_FLOAT8_E5M2 || dtype == ACL_FLOAT8_E4M3FN) ? ACL_FLOAT : dtype;
  std::vector<double> values(static_cast<size_t>(rows * dim));
  for (double& value : values) value = roundToDtype(cast, normal.next());
  return values;
}

// Splits rows of `full` columns at `split`: the first part replaces `head`, the rest goes to `tail`.
void splitColumns(std::vector<double>& head, std::vector<double>& tail, int64_t full, int64_t split) {
  const int64_t rows = static_cast<int64_t>(head.size()) / full;
  std::vector<double> first(static_cast<size_t>(rows * split)), rest(static_cast<size_t>(rows * (full - split)));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < full; ++c) {
      const double value = head[static_cast<size_t>(r * full + c)];
      if (c < split) {
        first[static_cast<size_t>(r * split + c)] = value;
      } else {
        rest[static_cast<size_t>(r * (full - split) + c - split)] = value;
      }
    }
  }
  head = std::move(first);
  tail = std::move(rest);
}

int64_t numelOf(const std::vector<int64_t>& shape) {
  int64_t numel = 1;
  for (const int64_t dim : shape) numel *= dim;
  return numel;
}

bool templateMode(int64_t mode) { return mode == 2 || mode == 3 || mode == 4 || mode == 7 || mode == 8; }

// The attention mask (spec 5.5): mode 0 the band of pre / next tokens (upper + lower triangles), mode 1 random
// 0 / 1 (TND: zeros), modes 2, 3, 4, 7, 8 the [2048, 2048] strict upper triangle template the operator expects.
void buildMask(SeedContext& c, NormalStream& normal) {
  const SeedCase& sc = c.sc;
  if (!sc.hasMask()) return;
  SeedPlainTensor& mask = c.attenMask;
  mask.dtype = sc.maskDtypeText == "BOOL" ? ACL_BOOL : ACL_UINT8;
  if (templateMode(sc.sparseMode)) {
    mask.shape = {kTemplateSide, kTemplateSide};
  } else if (sc.sparseMode == 0 || sc.sparseMode == 1) {
    if (sc.maskShape == "SS") mask.shape = {sc.s1, sc.s2};
    if (sc.maskShape == "11SS") mask.shape = {1, 1, sc.s1, sc.s2};
    if (sc.maskShape == "B1SS") mask.shape = {sc.batch, 1, sc.s1, sc.s2};
    if (sc.maskShape == "BNSS") mask.shape = {sc.batch, sc.n1, sc.s1, sc.s2};
  } else {
    throw HarnessError("seed case " + sc.name + ": sparse_mode " + std::to_string(sc.sparseMode) + " not supported");
  }
  const int64_t rows = mask.shape[mask.shape.size() - 2], cols = mask.shape.back();
  mask.values.assign(static_cast<size_t>(numelOf(mask.shape)), 0.0);
  for (int64_t e = 0; e < static_cast<int64_t>(mask.values.size()); ++e) {
    const int64_t i = (e / cols) % rows, j = e % cols;
    bool masked = false;
    if (templateMode(sc.sparseMode)) {
      masked = j > i;
    } else if (sc.sparseMode == 0) {
      masked = j >= i + sc.nextTokens + 1 || j <= i - sc.preTokens - 1;
    } else {
      masked = !sc.tnd() && normal.uniform() < 0.5;
    }
    mask.values[static_cast<size_t>(e)] = masked ? 1.0 : 0.0;
  }
  golden::FlashAttentionProblem& p = c.problem;
  p.hasMask = true;
  p.sparseMode = sc.sparseMode;
  p.preTokens = sc.preTokens;
  p.nextTokens = sc.nextTokens;
  if (sc.sparseMode == 0 || sc.sparseMode == 1) {
    auto values = std::make_shared<std::vector<double>>(mask.values);
    const int64_t batches = mask.shape.size() == 4 ? mask.shape[0] : 1;
    const int64_t heads = mask.shape.size() == 4 ? mask.shape[1] : 1;
    p.attenMask = [values, batches, heads, rows, cols](int64_t b, int64_t n, int64_t i, int64_t j) {
      const int64_t outer = (batches == 1 ? 0 : b) * heads + (heads == 1 ? 0 : n);
      return (*values)[static_cast<size_t>((outer * rows + i) * cols + j)] != 0.0;
    };
    p.maskRows = rows;
    p.maskCols = cols;
  }
}

// The ALiBi table the seed builds for pse types 0 / 1 (spec 5.6): [Sx, Sy] holding slope_n * (c - r) on and below
// the diagonal, 0 above, with the standard ALiBi slopes; the operator gets its last 1024 rows and last S2 columns
// (TND: the whole [1024, S2max] table). Returns [heads][1024][cols].
std::vector<double> alibiTables(const SeedCase& sc, int64_t cols, aclDataType dtype) {
  const std::vector<double> slopes = golden::alibiSlopes(sc.n1);
  const int64_t sx = sc.tnd() ? kAlibiRows : std::max(sc.s1, kAlibiRows);
  const int64_t sy = sc.tnd() ? sc.s2 : std::max(sc.s2, kAlibiRows);
  std::vector<double> tables(static_cast<size_t>(sc.n1 * kAlibiRows * cols));
  for (int64_t n = 0; n < sc.n1; ++n) {
    for (int64_t row = 0; row < kAlibiRows; ++row) {
      for (int64_t col = 0; col < cols; ++col) {
        const int64_t r = sx - kAlibiRows + row, c = sy - cols + col;
        const double value = c <= r ? static_cast<double>(c - r) * slopes[static_cast<size_t>(n)] : 0.0;
        tables[static_cast<size_t>((n * kAlibiRows + row) * cols + col)] = roundToDtype(dtype, value);
      }
    }
  }
  return tables;
}

// The pse (spec 5.6): random tables (BN1S, 1NSS, BNSS), ALiBi tables (BNHS, 1NHS) or, for types 2 / 3, the slopes
// 1 / ((b + 1)(n1 + 1)) (BN) or 1 / (n1 + 1) (N) from which the operator generates -slope * |i - j| (or its sqrt).
void buildPse(SeedContext& c, NormalStream& normal) {
  const SeedCase& sc = c.sc;
  if (!sc.hasPse()) return;
  golden::FlashAttentionProblem& p = c.problem;
  SeedPlainTensor& pse = c.pse;
  p.hasPse = true;
  p.pseType = sc.pseType;
  if (sc.slopes()) {
    pse.dtype = ACL_FLOAT;
    pse.shape = sc.pseShape == "BN" ? std::vector<int64_t>{sc.batch, sc.n1} : std::vector<int64_t>{sc.n1};
    for (int64_t b = 0; b < (sc.pseShape == "BN" ? sc.batch : 1); ++b) {
      for (int64_t n = 0; n < sc.n1; ++n) {
        const double slope =
            roundToDtype(ACL_FLOAT, 1.0 / static_cast<double>((sc.pseShape == "BN" ? b + 1 : 1) * (n + 1)));
        pse.values.push_back(slope);
        p.slopes.push_back(static_cast<float>(slope));
      }
    }
    return;
  }
  // Tables come in the inputs' dtype; FP8 cases use their output dtype.
  pse.dtype = sc.fp8() ? sc.outDtype : sc.dtype;
  const int64_t tables = (sc.pseShape == "BN1S" || sc.pseShape == "BNSS" || sc.pseShape == "BNHS") ? sc.batch : 1;
  if (sc.pseShape == "BNHS" || sc.pseShape == "1NHS") {
    pse.shape = {tables, sc.n1, kAlibiRows, sc.s2};
    const std::vector<double> one = alibiTables(sc, sc.s2, pse.dtype);
    for (int64_t b = 0; b < tables; ++b) pse.values.insert(pse.values.end(), one.begin(), one.end());
    // The golden reads the same table as the operator, expanded per (b, n1) (spec 2.9's row mapping).
    auto expanded = std::make_shared<std::vector<std::vector<double>>>();
    for (int64_t b = 0; b < sc.batch; ++b) {
      for (int64_t n = 0; n < sc.n1; ++n) {
        const double* table = pse.values.data() + ((tables == 1 ? 0 : b) * sc.n1 + n) * kAlibiRows * sc.s2;
        expanded->push_back(golden::expandAlibiPse(table, kAlibiRows, sc.s2, sc.seqQ[static_cast<size_t>(b)],
                                                   sc.seqKv[static_cast<size_t>(b)]));
      }
    }
    const std::vector<int64_t> s2 = sc.seqKv;
    const int64_t n1 = sc.n1;
    p.pse = [expanded, s2, n1](int64_t b, int64_t n, int64_t i, int64_t j) {
      return (*expanded)[static_cast<size_t>(b * n1 + n)][static_cast<size_t>(i * s2[static_cast<size_t>(b)] + j)];
    };
    return;
  }
  const int64_t rows = sc.pseShape == "BN1S" ? 1 : sc.s1;
  pse.shape = {tables, sc.n1, rows, sc.s2};
  pse.values = normalRows(normal, tables * sc.n1 * rows, sc.s2, pse.dtype);
  auto values = std::make_shared<std::vector<double>>(pse.values);
  const int64_t n1 = sc.n1, cols = sc.s2;
  p.pse = [values, tables, n1, rows, cols](int64_t b, int64_t n, int64_t i, int64_t j) {
    const int64_t outer = (tables == 1 ? 0 : b) * n1 + n;
    return (*values)[static_cast<size_t>((outer * rows + (rows == 1 ? 0 : i)) * cols + j)];
  };
}

}  // namespace

double roundToDtype(aclDataType dtype, double value) {
  unsigned char bytes[8] = {};
  storeFromDouble(dtype, bytes, 0, value);
  return loadAsDouble(dtype, bytes, 0);
}

SeedContext makeSeedContext(const SeedCase& sc) {
  SeedContext c;
  c.sc = sc;
  c.fc = sc.layoutCase();
  golden::FlashAttentionProblem& p = c.problem;
  p.batch = sc.batch;
  p.n1 = sc.n1;
  p.n2 = sc.n2;
  p.d = sc.dQk();
  p.dv = sc.dv;
  p.dRope = sc.dRope();
  p.s1 = sc.seqQ;
  p.s2 = sc.seqKv;
  p.scale = static_cast<float>(sc.scale());
  p.keepProb = static_cast<float>(sc.keepProb);
  p.seed = static_cast<uint64_t>(sc.seed);
  p.offset = static_cast<uint64_t>(sc.offset);

  // One stream per case (its name and data_seed), drawn in the seed's order: q, k, v, dy, then pse, then mask.
  NormalStream normal(sc.dataSeed ^ hashName(sc.name));
  c.q = normalRows(normal, p.qRows(), sc.d, sc.dtype);
  c.k = normalRows(normal, p.kvRows(), sc.d, sc.dtype);
  c.v = normalRows(normal, p.kvRows(), sc.dv, sc.dtype);
  c.dy = normalRows(normal, p.qRows(), sc.dv, sc.dtype);
  if (sc.rope) {
    splitColumns(c.q, c.qRope, sc.d, SeedCase::kRopeSplit);
    splitColumns(c.k, c.kRope, sc.d, SeedCase::kRopeSplit);
  }
  buildPse(c, normal);
  buildMask(c, normal);
  golden::checkFlashAttentionProblem(p);
  if (sc.fp8()) {
    if (sc.rope || sc.tnd()) throw HarnessError("seed case " + sc.name + ": FP8 takes padded layouts and no rope");
    c.fp8Format = sc.dtype == ACL_FLOAT8_E5M2 ? golden::Fp8Format::E5M2 : golden::Fp8Format::E4M3FN;
    const auto floats = [](const std::vector<double>& values) {
      return std::vector<float>(values.begin(), values.end());
    };
    c.fp8Q = golden::fp8QuantizeQuerySide(p, c.fp8Format, floats(c.q).data(), p.d);
    c.fp8K = golden::fp8QuantizeKeySide(p, c.fp8Format, floats(c.k).data(), p.d);
    c.fp8V = golden::fp8QuantizeKeySide(p, c.fp8Format, floats(c.v).data(), p.dv);
    c.fp8Dy = golden::fp8QuantizeQuerySide(p, c.fp8Format, floats(c.dy).data(), p.dv);
  }
  return c;
}

namespace {

std::vector<double> roundedAll(std::vector<double> values, aclDataType dtype) {
  for (double& value : values) value = roundToDtype(dtype, value);
  return values;
}

// The FP8 golden (spec 5.9): forward on the quantised inputs, backward from its out and statistics (rounded as the
// operator receives them for grads, unrounded for chainGrads).
void runSeedFp8Golden(SeedContext& c) {
  golden::FlashAttentionFp8Inputs in;
  in.format = c.fp8Format;
  in.q = c.fp8Q.values.data();
  in.k = c.fp8K.values.data();
  in.v = c.fp8V.values.data();
  in.dScaleQ = c.fp8Q.dScale.data();
  in.dScaleK = c.fp8K.dScale.data();
  in.dScaleV = c.fp8V.dScale.data();
  c.forward = golden::flashAttentionFp8Forward(c.problem, in);
  golden::FlashAttentionFp8GradInputs grad;
  grad.tensors = in;
  grad.dy = c.fp8Dy.values.data();
  grad.dScaleDy = c.fp8Dy.dScale.data();
  grad.attentionIn = c.forward.out.data();
  grad.softmaxMax = c.forward.softmaxMax.data();
  grad.softmaxSum = c.forward.softmaxSum.data();
  c.chainGrads = golden::flashAttentionFp8Backward(c.problem, grad);
  const std::vector<double> out = roundedAll(c.forward.out, c.sc.outDtype);
  const std::vector<double> max = roundedAll(c.forward.softmaxMax, ACL_FLOAT);
  const std::vector<double> sum = roundedAll(c.forward.softmaxSum, ACL_FLOAT);
  grad.attentionIn = out.data();
  grad.softmaxMax = max.data();
  grad.softmaxSum = sum.data();
  c.grads = golden::flashAttentionFp8Backward(c.problem, grad);
}

}  // namespace

void runSeedGolden(SeedContext& c) {
  if (c.sc.fp8()) return runSeedFp8Golden(c);
  golden::FlashAttentionInputs<double> in;
  in.q = c.q.data();
  in.k = c.k.data();
  in.v = c.v.data();
  if (c.sc.rope) {
    in.qRope = c.qRope.data();
    in.kRope = c.kRope.data();
  }
  c.forward = golden::flashAttentionForward<double>(c.problem, in);
  golden::FlashAttentionGradInputs<double> grad;
  grad.tensors = in;
  grad.dy = c.dy.data();
  grad.attentionIn = c.forward.out.data();
  grad.softmaxMax = c.forward.softmaxMax.data();
  grad.softmaxSum = c.forward.softmaxSum.data();
  c.chainGrads = golden::flashAttentionBackward<double>(c.problem, grad);
  const std::vector<double> out = roundedAll(c.forward.out, c.sc.dtype);
  const std::vector<double> max = roundedAll(c.forward.softmaxMax, ACL_FLOAT);
  const std::vector<double> sum = roundedAll(c.forward.softmaxSum, ACL_FLOAT);
  grad.attentionIn = out.data();
  grad.softmaxMax = max.data();
  grad.softmaxSum = sum.data();
  c.grads = golden::flashAttentionBackward<double>(c.problem, grad);
}

std::string seedFirstKeepBits(const SeedContext& c, int64_t count) {
  std::string bits;
  const int64_t columns = std::min<int64_t>(count, c.sc.seqKv.empty() ? 0 : c.sc.seqKv[0]);
  for (int64_t j = 0; j < columns; ++j) bits += golden::flashAttentionKept(c.problem, 0, 0, 0, j) ? '1' : '0';
  return bits;
}

}  // namespace gradkit::cli
