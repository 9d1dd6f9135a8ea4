// Flash attention value tests: a case (layout, dtype, shapes, mask, pse, dropout), its random data in the golden's
// canonical order, the layout tensors made from it (dense or strided), both phases of the entry points, and the
// fp64 golden (golden/flash_attention.h) to compare with.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "aclnnop/aclnn_flash_attention_score.h"
#include "aclnnop/aclnn_flash_attention_score_grad.h"
#include "golden/flash_attention.h"
#include "gradkit/float_convert.h"
#include "tests/ops/compressor_test_util.h"
#include "tests/ops/op_test_util.h"

namespace gradkit::test::fa {

using compressor::Buffer;
using compressor::paddedStrides;
using compressor::reach;

/** One flash attention call. Masks and pse name upstream's shapes (spec fag.md 2.7, 2.9). */
struct Case {
  std::string layout = "BNSD";  // BNSD, BSND, BSH, SBH, TND
  aclDataType dtype = ACL_FLOAT;
  int64_t batch = 1, n1 = 2, n2 = 1, s1 = 12, s2 = 12, d = 16, dv = 16;
  std::vector<int64_t> seqQ, seqKv;  // TND: per-batch lengths (batch = their count)
  double scale = 0;                  // 0: 1 / sqrt(d)
  int64_t sparseMode = 0, pre = 2147483647, next = 2147483647;
  std::string mask = "none";  // none, SS, 11SS, B1SS, BNSS (random bits), template (modes 2-4, 7, 8), prefix (6)
  std::vector<int64_t> prefix;
  int64_t pseType = 1;
  std::string pse = "none";  // none, BNSS, BN1S, 1NSS, BNHS / 1NHS (1024-row ALiBi), N / BN (slopes)
  int64_t qStartIdx = 0, kvStartIdx = 0;
  double keepProb = 1.0;
  bool philox = false;  // backward through GradV4 (Ascend950) drawing the mask from seed / offset
  int64_t seed = 2, offset = 0;
  bool strided = false;  // inputs and outputs as padded, offset views
  bool statsSameAsInput = false;
  uint32_t dataSeed = 1;

  bool tnd() const { return layout == "TND"; }
  int64_t batches() const { return tnd() ? static_cast<int64_t>(seqQ.size()) : batch; }
  int64_t lenQ(int64_t b) const { return tnd() ? seqQ[static_cast<size_t>(b)] : s1; }
  int64_t lenKv(int64_t b) const { return tnd() ? seqKv[static_cast<size_t>(b)] : s2; }
  int64_t before(const std::vector<int64_t>& lengths, int64_t b) const {
    int64_t sum = 0;
    for (int64_t c = 0; c < b; ++c) sum += lengths[static_cast<size_t>(c)];
    return sum;
  }
  int64_t tokensQ() const { return tnd() ? before(seqQ, batches()) : batch * s1; }
  int64_t tokensKv() const { return tnd() ? before(seqKv, batches()) : batch * s2; }
  int64_t maxQ() const { return tnd() ? *std::max_element(seqQ.begin(), seqQ.end()) : s1; }
  int64_t maxKv() const { return tnd() ? *std::max_element(seqKv.begin(), seqKv.end()) : s2; }
  float scaleValue() const { return static_cast<float>(scale != 0 ? scale : 1.0 / std::sqrt(double(d))); }
  bool dropout() const { return keepProb < 1.0; }
};

/** Rounds to the case's io dtype and back. */
inline double roundTo(aclDataType dtype, double value) {
  if (dtype == ACL_FLOAT16) return halfToFloat(doubleToHalf(value));
  if (dtype == ACL_BF16) return bf16ToFloat(doubleToBf16(value));
  return static_cast<float>(value);
}

/** A layout tensor of one side (query: rows S1 per batch, else S2) with `heads` heads of `dim`. */
struct Side {
  const Case* c;
  bool query;
  int64_t heads, dim;

  int64_t rows(int64_t b) const { return query ? c->lenQ(b) : c->lenKv(b); }
  int64_t maxRows() const { return query ? c->s1 : c->s2; }
  std::vector<int64_t> shape() const {
    const std::string& l = c->layout;
    if (l == "BNSD") return {c->batch, heads, maxRows(), dim};
    if (l == "BSND") return {c->batch, maxRows(), heads, dim};
    if (l == "BSH") return {c->batch, maxRows(), heads * dim};
    if (l == "SBH") return {maxRows(), c->batch, heads * dim};
    return {query ? c->tokensQ() : c->tokensKv(), heads, dim};
  }
  /** Row-major index in shape() of (b, n, s, x). */
  int64_t index(int64_t b, int64_t n, int64_t s, int64_t x) const {
    const std::string& l = c->layout;
    const int64_t S = maxRows(), B = c->batch;
    if (l == "BNSD") return ((b * heads + n) * S + s) * dim + x;
    if (l == "BSND") return ((b * S + s) * heads + n) * dim + x;
    if (l == "BSH") return (b * S + s) * heads * dim + n * dim + x;
    if (l == "SBH") return (s * B + b) * heads * dim + n * dim + x;
    const int64_t t = c->before(query ? c->seqQ : c->seqKv, b) + s;
    return (t * heads + n) * dim + x;
  }
  /** The golden's canonical row of (b, n, s). */
  int64_t canonicalRow(int64_t b, int64_t n, int64_t s) const {
    int64_t before = 0;
    for (int64_t p = 0; p < b; ++p) before += rows(p);
    return heads * before + n * rows(b) + s;
  }
  int64_t canonicalRows() const {
    int64_t all = 0;
    for (int64_t b = 0; b < c->batches(); ++b) all += rows(b);
    return heads * all;
  }
  template <class Fn>
  void forEach(Fn fn) const {
    for (int64_t b = 0; b < c->batches(); ++b)
      for (int64_t n = 0; n < heads; ++n)
        for (int64_t s = 0; s < rows(b); ++s)
          for (int64_t x = 0; x < dim; ++x) fn(index(b, n, s, x), canonicalRow(b, n, s) * dim + x);
  }
};

/** A tensor of any dtype over owned memory (fp32 in `f`, 16-bit types in `h`). */
struct IoTensor {
  aclDataType dtype = ACL_FLOAT;
  Buffer<float> f;
  Buffer<uint16_t> h;
  aclTensor* get() const { return dtype == ACL_FLOAT ? f.tensor.get() : h.tensor.get(); }
};

inline std::vector<int64_t> viewStrides(const std::vector<int64_t>& shape, bool strided) {
  return strided ? paddedStrides(shape, 3) : rowMajorStrides(shape);
}

/** A tensor holding `dense` (row-major values of `shape`), strided when asked; sentinel NaN in the gaps. */
inline IoTensor makeInput(aclDataType dtype, const std::vector<int64_t>& shape, const std::vector<double>& dense,
                          bool strided) {
  IoTensor t;
  t.dtype = dtype;
  const std::vector<int64_t> strides = viewStrides(shape, strided);
  const int64_t offset = strided ? 5 : 0, elements = std::max<int64_t>(reach(shape, strides, offset), 1);
  std::vector<int64_t> index(shape.size(), 0);
  if (dtype == ACL_FLOAT) {
    t.f = Buffer<float>(dtype, shape, strides, elements, NAN, offset);
  } else {
    t.h = Buffer<uint16_t>(dtype, shape, strides, elements, 0x7E55, offset);
  }
  for (size_t k = 0; k < dense.size(); ++k) {
    if (dtype == ACL_FLOAT) {
      t.f.at(index) = static_cast<float>(dense[k]);
    } else {
      t.h.at(index) = dtype == ACL_FLOAT16 ? doubleToHalf(dense[k]) : doubleToBf16(dense[k]);
    }
    for (int64_t dim = static_cast<int64_t>(shape.size()) - 1; dim >= 0; --dim) {
      if (++index[static_cast<size_t>(dim)] < shape[static_cast<size_t>(dim)]) break;
      index[static_cast<size_t>(dim)] = 0;
    }
  }
  return t;
}

/** An output tensor filled with a NaN sentinel. */
inline IoTensor makeOutput(aclDataType dtype, const std::vector<int64_t>& shape, bool strided) {
  return makeInput(dtype, shape, {}, strided);
}

/** The row-major values of a tensor's view as doubles. */
inline std::vector<double> valuesOf(const IoTensor& t) {
  std::vector<double> out;
  if (t.dtype == ACL_FLOAT) {
    for (float v : t.f.dense()) out.push_back(v);
  } else {
    for (uint16_t v : t.h.dense()) out.push_back(t.dtype == ACL_FLOAT16 ? halfToFloat(v) : bf16ToFloat(v));
  }
  return out;
}

/** Values of a layout tensor rearranged into the golden's canonical order. */
inline std::vector<double> canonical(const Side& side, const IoTensor& t) {
  const std::vector<double> dense = valuesOf(t);
  std::vector<double> out(static_cast<size_t>(side.canonicalRows() * side.dim), NAN);
  side.forEach([&](int64_t at, int64_t canon) { out[static_cast<size_t>(canon)] = dense[static_cast<size_t>(at)]; });
  return out;
}

/** Canonical values placed into a layout's row-major order (padding rows of a layout stay 0). */
inline std::vector<double> layoutOrder(const Side& side, const std::vector<double>& canon) {
  std::vector<double> dense(static_cast<size_t>(product(side.shape())), 0.0);
  side.forEach([&](int64_t at, int64_t c) { dense[static_cast<size_t>(at)] = canon[static_cast<size_t>(c)]; });
  return dense;
}

/** Everything a case needs: data (canonical, rounded to the dtype), golden problem, and the masks / pse tensors. */
struct Data {
  Case c;
  Side qSide, kSide, vSide, oSide;
  std::vector<double> q, k, v, dy;
  std::vector<uint8_t> maskBytes;  // the attenMask tensor, row-major
  std::vector<int64_t> maskShape;
  std::vector<double> pseValues;  // the pse tensor, row-major
  std::vector<int64_t> pseShape;
  std::vector<uint8_t> dropBytes;  // packed external mask
  golden::FlashAttentionProblem problem;

  explicit Data(const Case& cs)
      : c(cs),
        qSide{&c, true, c.n1, c.d},
        kSide{&c, false, c.n2, c.d},
        vSide{&c, false, c.n2, c.dv},
        oSide{&c, true, c.n1, c.dv} {
    std::mt19937 rng(c.dataSeed);
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    const auto fill = [&](const Side& s, std::vector<double>& out, double amplitude) {
      out.resize(static_cast<size_t>(s.canonicalRows() * s.dim));
      for (double& x : out) x = roundTo(c.dtype, amplitude * uniform(rng));
    };
    fill(qSide, q, 2.0);
    fill(kSide, k, 2.0);
    fill(vSide, v, 1.0);
    fill(oSide, dy, 1.0);

    golden::FlashAttentionProblem& p = problem;
    p.batch = c.batches();
    p.n1 = c.n1;
    p.n2 = c.n2;
    p.d = c.d;
    p.dv = c.dv;
    for (int64_t b = 0; b < c.batches(); ++b) {
      p.s1.push_back(c.lenQ(b));
      p.s2.push_back(c.lenKv(b));
    }
    p.scale = c.scaleValue();
    p.keepProb = static_cast<float>(c.keepProb);
    p.sparseMode = c.sparseMode;
    p.preTokens = c.pre;
    p.nextTokens = c.next;
    p.prefix = c.prefix;

    makeMask(rng);
    makePse(rng);
    if (c.dropout()) {
      if (c.philox) {
        p.seed = static_cast<uint64_t>(c.seed);
        p.offset = static_cast<uint64_t>(c.offset);
      } else {
        dropBytes.resize(static_cast<size_t>((p.dropElements() + 7) / 8));
        for (uint8_t& byte : dropBytes) byte = static_cast<uint8_t>(rng());
        p.dropMask = dropBytes.data();
      }
    }
  }
  Data(const Data&) = delete;

  void makeMask(std::mt19937& rng) {
    if (c.mask == "none") return;
    problem.hasMask = true;
    const int64_t rows = c.maxQ(), cols = c.maxKv();
    if (c.mask == "template") {
      maskShape = {2048, 2048};
    } else if (c.mask == "prefix") {
      maskShape = {3072, 2048};
    } else if (c.mask == "SS") {
      maskShape = {rows, cols};
    } else if (c.mask == "11SS") {
      maskShape = {1, 1, rows, cols};
    } else if (c.mask == "B1SS") {
      maskShape = {c.batch, 1, rows, cols};
    } else {
      maskShape = {c.batch, c.n1, rows, cols};
    }
    maskBytes.assign(static_cast<size_t>(product(maskShape)), 0);
    const bool random = c.mask != "template" && c.mask != "prefix";
    if (random) {
      for (uint8_t& m : maskBytes) m = (rng() % 4 == 0) ? 1 : 0;  // a quarter masked
    }
    golden::setMaskTensor(problem, std::make_shared<std::vector<uint8_t>>(maskBytes), maskShape);
  }

  void makePse(std::mt19937& rng) {
    if (c.pse == "none") return;
    golden::FlashAttentionProblem& p = problem;
    p.hasPse = true;
    p.pseType = c.pseType;
    p.qStartIdx = c.qStartIdx;
    p.kvStartIdx = c.kvStartIdx;
    std::uniform_real_distribution<double> uniform(-1.0, 1.0);
    if (c.pse == "N" || c.pse == "BN") {
      pseShape = c.pse == "N" ? std::vector<int64_t>{c.n1} : std::vector<int64_t>{c.batch, c.n1};
      for (int64_t e = 0; e < product(pseShape); ++e) {
        pseValues.push_back(static_cast<float>(0.05 + 0.1 * (uniform(rng) + 1.0)));
        p.slopes.push_back(static_cast<float>(pseValues.back()));
      }
      return;
    }
    const bool alibi = c.pse == "BNHS" || c.pse == "1NHS";
    const int64_t rows = alibi ? 1024 : (c.pse == "BN1S" ? 1 : c.maxQ());
    const int64_t cols = c.maxKv();
    const int64_t lead = (c.pse == "1NSS" || c.pse == "1NHS") ? 1 : c.batch;
    pseShape = {lead, c.n1, rows, cols};
    pseValues.resize(static_cast<size_t>(product(pseShape)));
    for (double& x : pseValues) x = roundTo(c.dtype, uniform(rng));
    golden::setPseTensor(p, std::make_shared<std::vector<double>>(pseValues), pseShape, alibi);
  }
};

/** The softmax statistics tensors' shape and the flat index of (canonical row r, lane). */
inline std::vector<int64_t> statsShape(const Case& c) {
  return c.tnd() ? std::vector<int64_t>{c.tokensQ(), c.n1, 8} : std::vector<int64_t>{c.batch, c.n1, c.s1, 8};
}
inline int64_t statsIndex(const Case& c, int64_t b, int64_t n, int64_t i, int64_t canonicalRow) {
  if (c.tnd() && c.statsSameAsInput) return ((c.before(c.seqQ, b) + i) * c.n1 + n) * 8;
  return canonicalRow * 8;
}

struct IntArrayDeleter {
  void operator()(aclIntArray* a) const { aclDestroyIntArray(a); }
};
using IntArrayPtr = std::unique_ptr<aclIntArray, IntArrayDeleter>;

inline IntArrayPtr intArray(const std::vector<int64_t>& values) {
  return IntArrayPtr(aclCreateIntArray(values.data(), values.size()));
}

/** Cumulative end offsets without a leading 0 (spec 2.3). */
inline std::vector<int64_t> cumulative(const std::vector<int64_t>& lengths) {
  std::vector<int64_t> ends;
  int64_t sum = 0;
  for (int64_t n : lengths) ends.push_back(sum += n);
  return ends;
}

/** The optional inputs both directions share (mask, pse, drop mask, int arrays), as tensors. */
struct Extras {
  IoTensor pse;
  bool hasMask = false, hasPse = false, hasDrop = false;
  IntArrayPtr prefix, seqQ, seqKv, qStart, kvStart;

  explicit Extras(const Data& data) {
    const Case& c = data.c;
    if (!data.maskShape.empty()) {
      hasMask = true;
      maskStorage = data.maskBytes;
      maskTensor = makeView(maskStorage.data(), c.mask == "SS" ? ACL_BOOL : ACL_UINT8, data.maskShape);
    }
    if (!data.pseShape.empty()) {
      hasPse = true;
      const bool slopes = c.pse == "N" || c.pse == "BN";
      pse = makeInput(slopes ? ACL_FLOAT : c.dtype, data.pseShape, data.pseValues, false);
    }
    if (!data.dropBytes.empty()) {
      hasDrop = true;
      dropStorage = data.dropBytes;
      dropTensor = makeView(dropStorage.data(), ACL_UINT8, {static_cast<int64_t>(dropStorage.size())});
    }
    if (!c.prefix.empty()) prefix = intArray(c.prefix);
    if (c.tnd()) {
      seqQ = intArray(cumulative(c.seqQ));
      seqKv = intArray(cumulative(c.seqKv));
    }
    if (c.qStartIdx != 0 || c.kvStartIdx != 0) {
      qStart = intArray({c.qStartIdx});
      kvStart = intArray({c.kvStartIdx});
    }
  }
  aclTensor* maskT() const { return hasMask ? maskTensor.get() : nullptr; }
  aclTensor* pseT() const { return hasPse ? pse.get() : nullptr; }
  aclTensor* dropT() const { return hasDrop ? dropTensor.get() : nullptr; }

 private:
  std::vector<uint8_t> maskStorage, dropStorage;
  TensorPtr maskTensor, dropTensor;
};

/** Runs both phases of a planned call on the default stream; the first phase's status. */
template <class Plan, class Run>
aclnnStatus runBoth(Plan plan, Run run) {
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  const aclnnStatus status = plan(&size, &executor);
  if (status != ACLNN_SUCCESS) return status;
  std::vector<unsigned char> workspace(static_cast<size_t>(size));
  EXPECT_EQ(run(size > 0 ? workspace.data() : nullptr, size, executor, nullptr), ACLNN_SUCCESS) << recentError();
  EXPECT_EQ(aclrtSynchronizeStream(nullptr), ACL_SUCCESS) << recentError();
  return status;
}

/** The forward's outputs in the golden's canonical order (statistics: lane 0, every lane checked equal). */
struct ForwardResult {
  aclnnStatus status = ACLNN_SUCCESS;
  std::vector<double> out, max, sum;
  bool lanesEqual = true;
};

inline ForwardResult runForward(const Data& data) {
  const Case& c = data.c;
  Extras ex(data);
  IoTensor q = makeInput(c.dtype, data.qSide.shape(), layoutOrder(data.qSide, data.q), c.strided);
  IoTensor k = makeInput(c.dtype, data.kSide.shape(), layoutOrder(data.kSide, data.k), c.strided);
  IoTensor v = makeInput(c.dtype, data.vSide.shape(), layoutOrder(data.vSide, data.v), c.strided);
  IoTensor out = makeOutput(c.dtype, data.oSide.shape(), c.strided);
  IoTensor max = makeOutput(ACL_FLOAT, statsShape(c), c.strided);
  IoTensor sum = makeOutput(ACL_FLOAT, statsShape(c), c.strided);
  std::string layout = c.layout;
  std::string statsLayout = c.statsSameAsInput ? "same_as_input" : "";
  ForwardResult r;
  const double keep = c.keepProb;
  if (!c.tnd()) {
    r.status = runBoth(
        [&](uint64_t* size, aclOpExecutor** executor) {
          return aclnnFlashAttentionScoreV2GetWorkspaceSize(
              q.get(), k.get(), v.get(), ex.pseT(), ex.dropT(), nullptr, ex.maskT(), ex.prefix.get(), ex.qStart.get(),
              ex.kvStart.get(), c.scaleValue(), keep, c.pre, c.next, c.n1, layout.data(), 0, c.sparseMode, c.pseType,
              max.get(), sum.get(), nullptr, out.get(), size, executor);
        },
        aclnnFlashAttentionScoreV2);
  } else if (c.statsSameAsInput) {
    r.status = runBoth(
        [&](uint64_t* size, aclOpExecutor** executor) {
          return aclnnFlashAttentionVarLenScoreV4GetWorkspaceSize(
              q.get(), k.get(), v.get(), ex.pseT(), ex.dropT(), nullptr, ex.maskT(), ex.prefix.get(), ex.seqQ.get(),
              ex.seqKv.get(), c.scaleValue(), keep, c.pre, c.next, c.n1, layout.data(), 0, c.sparseMode,
              statsLayout.data(), max.get(), sum.get(), nullptr, out.get(), size, executor);
        },
        aclnnFlashAttentionVarLenScoreV4);
  } else {
    r.status = runBoth(
        [&](uint64_t* size, aclOpExecutor** executor) {
          return aclnnFlashAttentionVarLenScoreV2GetWorkspaceSize(
              q.get(), k.get(), v.get(), ex.pseT(), ex.dropT(), nullptr, ex.maskT(), ex.prefix.get(), ex.seqQ.get(),
              ex.seqKv.get(), ex.qStart.get(), ex.kvStart.get(), c.scaleValue(), keep, c.pre, c.next, c.n1,
              layout.data(), 0, c.sparseMode, c.pseType, max.get(), sum.get(), nullptr, out.get(), size, executor);
        },
        aclnnFlashAttentionVarLenScoreV2);
  }
  if (r.status != ACLNN_SUCCESS) return r;
  r.out = canonical(data.oSide, out);
  const std::vector<double> maxAll = valuesOf(max), sumAll = valuesOf(sum);
  for (int64_t b = 0; b < c.batches(); ++b) {
    for (int64_t n = 0; n < c.n1; ++n) {
      for (int64_t i = 0; i < c.lenQ(b); ++i) {
        const int64_t at = statsIndex(c, b, n, i, data.qSide.canonicalRow(b, n, i));
        r.max.push_back(maxAll[static_cast<size_t>(at)]);
        r.sum.push_back(sumAll[static_cast<size_t>(at)]);
        for (int64_t lane = 1; lane < 8; ++lane) {
          const auto l = static_cast<size_t>(at + lane);
          if (!(maxAll[l] == r.max.back() && sumAll[l] == r.sum.back())) r.lanesEqual = false;
        }
      }
    }
  }
  return r;
}

/** The backward's outputs in canonical order. */
struct BackwardResult {
  aclnnStatus status = ACLNN_SUCCESS;
  std::vector<double> dq, dk, dv;
};

/** The backward fed with `attentionIn` and the statistics (canonical order, already rounded as the op takes them). */
inline BackwardResult runBackward(const Data& data, const std::vector<double>& attentionIn,
                                  const std::vector<double>& max, const std::vector<double>& sum) {
  const Case& c = data.c;
  Extras ex(data);
  IoTensor q = makeInput(c.dtype, data.qSide.shape(), layoutOrder(data.qSide, data.q), c.strided);
  IoTensor k = makeInput(c.dtype, data.kSide.shape(), layoutOrder(data.kSide, data.k), c.strided);
  IoTensor v = makeInput(c.dtype, data.vSide.shape(), layoutOrder(data.vSide, data.v), c.strided);
  IoTensor dy = makeInput(c.dtype, data.oSide.shape(), layoutOrder(data.oSide, data.dy), c.strided);
  IoTensor o = makeInput(c.dtype, data.oSide.shape(), layoutOrder(data.oSide, attentionIn), c.strided);
  std::vector<double> maxDense(static_cast<size_t>(product(statsShape(c))), 0.0), sumDense = maxDense;
  size_t row = 0;
  for (int64_t b = 0; b < c.batches(); ++b) {
    for (int64_t n = 0; n < c.n1; ++n) {
      for (int64_t i = 0; i < c.lenQ(b); ++i, ++row) {
        const int64_t at = statsIndex(c, b, n, i, data.qSide.canonicalRow(b, n, i));
        for (int64_t lane = 0; lane < 8; ++lane) {
          maxDense[static_cast<size_t>(at + lane)] = max[row];
          sumDense[static_cast<size_t>(at + lane)] = sum[row];
        }
      }
    }
  }
  IoTensor maxT = makeInput(ACL_FLOAT, statsShape(c), maxDense, c.strided);
  IoTensor sumT = makeInput(ACL_FLOAT, statsShape(c), sumDense, c.strided);
  IoTensor dq = makeOutput(c.dtype, data.qSide.shape(), c.strided);
  IoTensor dk = makeOutput(c.dtype, data.kSide.shape(), c.strided);
  IoTensor dv = makeOutput(c.dtype, data.vSide.shape(), c.strided);
  std::string layout = c.layout;
  std::string statsLayout = c.statsSameAsInput ? "same_as_input" : "";
  BackwardResult r;
  const double keep = c.keepProb;
  if (c.philox) {
    r.status = runBoth(
        [&](uint64_t* size, aclOpExecutor** executor) {
          return aclnnFlashAttentionScoreGradV4GetWorkspaceSize(
              q.get(), k.get(), v.get(), dy.get(), ex.pseT(), nullptr, nullptr, ex.maskT(), maxT.get(), sumT.get(),
              nullptr, o.get(), nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, ex.prefix.get(),
              ex.seqQ.get(), ex.seqKv.get(), ex.qStart.get(), ex.kvStart.get(), c.scaleValue(), keep, c.pre, c.next,
              c.n1, layout.data(), statsLayout.data(), 0, c.sparseMode, c.pseType, c.seed, c.offset, 0, dq.get(),
              dk.get(), dv.get(), nullptr, nullptr, nullptr, nullptr, size, executor);
        },
        aclnnFlashAttentionScoreGradV4);
  } else if (!c.tnd()) {
    r.status = runBoth(
        [&](uint64_t* size, aclOpExecutor** executor) {
          return aclnnFlashAttentionScoreGradV2GetWorkspaceSize(
              q.get(), k.get(), v.get(), dy.get(), ex.pseT(), ex.dropT(), nullptr, ex.maskT(), maxT.get(), sumT.get(),
              nullptr, o.get(), ex.prefix.get(), ex.qStart.get(), ex.kvStart.get(), c.scaleValue(), keep, c.pre, c.next,
              c.n1, layout.data(), 0, c.sparseMode, c.pseType, dq.get(), dk.get(), dv.get(), nullptr, size, executor);
        },
        aclnnFlashAttentionScoreGradV2);
  } else if (c.statsSameAsInput) {
    r.status = runBoth(
        [&](uint64_t* size, aclOpExecutor** executor) {
          return aclnnFlashAttentionUnpaddingScoreGradV4GetWorkspaceSize(
              q.get(), k.get(), v.get(), dy.get(), ex.pseT(), ex.dropT(), nullptr, ex.maskT(), maxT.get(), sumT.get(),
              nullptr, o.get(), ex.prefix.get(), ex.seqQ.get(), ex.seqKv.get(), c.scaleValue(), keep, c.pre, c.next,
              c.n1, layout.data(), 0, c.sparseMode, dq.get(), dk.get(), dv.get(), nullptr, statsLayout.data(), size,
              executor);
        },
        aclnnFlashAttentionUnpaddingScoreGradV4);
  } else {
    r.status = runBoth(
        [&](uint64_t* size, aclOpExecutor** executor) {
          return aclnnFlashAttentionUnpaddingScoreGradV2GetWorkspaceSize(
              q.get(), k.get(), v.get(), dy.get(), ex.pseT(), ex.dropT(), nullptr, ex.maskT(), maxT.get(), sumT.get(),
              nullptr, o.get(), ex.prefix.get(), ex.seqQ.get(), ex.seqKv.get(), ex.qStart.get(), ex.kvStart.get(),
              c.scaleValue(), keep, c.pre, c.next, c.n1, layout.data(), 0, c.sparseMode, c.pseType, dq.get(), dk.get(),
              dv.get(), nullptr, size, executor);
        },
        aclnnFlashAttentionUnpaddingScoreGradV2);
  }
  if (r.status != ACLNN_SUCCESS) return r;
  r.dq = canonical(data.qSide, dq);
  r.dk = canonical(data.kSide, dk);
  r.dv = canonical(data.vSide, dv);
  return r;
}

}  // namespace gradkit::test::fa
