// aclnnFlashAttentionScoreGradV4 with FLOAT8 inputs (spec fag.md 5.9, issue 13), through the C API: the chain's
// sanity against the fp64 non-FP8 golden on the de-quantised inputs (loose gate), non-finite scales, thread counts, a
// bench-like shape, and the FP8 argument rules (161001 / 161002, each naming its argument). The outputs against the
// FP8 golden chain under its gate (the spec 5.12 shapes FP8E5_03 and FP8E4_04, strided views, mask + pse + Philox
// dropout with GQA) are verify rows: the fp8_* cases of cases/flash_attention_score_grad.json.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/parallel.h"
#include "golden/flash_attention_fp8.h"
#include "tests/ops/fa_test_util.h"
#include "tests/ops/mhc_test_util.h"

namespace gradkit::test::fa {
namespace {

using golden::Fp8Format;
using golden::Fp8Quantized;

struct Fp8Case {
  std::string name;
  Case c;  // c.dtype: the out dtype (attentionIn, outputs, a pse table)
  Fp8Format format = Fp8Format::E5M2;

  aclDataType fp8Dtype() const { return format == Fp8Format::E5M2 ? ACL_FLOAT8_E5M2 : ACL_FLOAT8_E4M3FN; }
  int64_t outDtype() const { return c.dtype == ACL_BF16 ? 1 : 0; }
};

std::vector<float> toFloat(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

/** A case's data: the float inputs quantised per block, the FP8 forward, and what the op receives from it. */
struct Fp8Data {
  Fp8Case fc;
  Data data;
  Fp8Quantized q, k, v, dy;
  std::vector<double> attentionIn, max, sum;  // canonical, rounded as the op takes them
  golden::FlashAttentionFp8Inputs inputs;

  explicit Fp8Data(const Fp8Case& cs) : fc(cs), data(cs.c) {
    const golden::FlashAttentionProblem& p = data.problem;
    q = golden::fp8QuantizeQuerySide(p, fc.format, toFloat(data.q).data(), p.d);
    k = golden::fp8QuantizeKeySide(p, fc.format, toFloat(data.k).data(), p.d);
    v = golden::fp8QuantizeKeySide(p, fc.format, toFloat(data.v).data(), p.dv);
    dy = golden::fp8QuantizeQuerySide(p, fc.format, toFloat(data.dy).data(), p.dv);
    inputs = {fc.format,       q.values.data(), k.values.data(), v.values.data(),
              q.dScale.data(), k.dScale.data(), v.dScale.data()};
    const auto fwd = golden::flashAttentionFp8Forward(p, inputs);
    for (const double x : fwd.out) attentionIn.push_back(roundTo(fc.c.dtype, x));
    for (const double x : fwd.softmaxMax) max.push_back(static_cast<float>(x));
    for (const double x : fwd.softmaxSum) sum.push_back(static_cast<float>(x));
  }
  Fp8Data(const Fp8Data&) = delete;

  golden::FlashAttentionGradOutputs<double> golden() const {
    golden::FlashAttentionFp8GradInputs in;
    in.tensors = inputs;
    in.dy = dy.values.data();
    in.dScaleDy = dy.dScale.data();
    in.attentionIn = attentionIn.data();
    in.softmaxMax = max.data();
    in.softmaxSum = sum.data();
    return golden::flashAttentionFp8Backward(data.problem, in);
  }
};

/** A tensor of fp8 codes (row-major `dense` over `shape`), strided when asked, NaN codes in the gaps. */
compressor::Buffer<uint8_t> makeFp8(aclDataType dtype, const std::vector<int64_t>& shape,
                                    const std::vector<uint8_t>& dense, bool strided) {
  const std::vector<int64_t> strides = viewStrides(shape, strided);
  const int64_t offset = strided ? 5 : 0, elements = std::max<int64_t>(compressor::reach(shape, strides, offset), 1);
  compressor::Buffer<uint8_t> t(dtype, shape, strides, elements, 0x7f, offset);
  std::vector<int64_t> index(shape.size(), 0);
  for (const uint8_t code : dense) {
    t.at(index) = code;
    for (int64_t d = static_cast<int64_t>(shape.size()) - 1; d >= 0; --d) {
      if (++index[static_cast<size_t>(d)] < shape[static_cast<size_t>(d)]) break;
      index[static_cast<size_t>(d)] = 0;
    }
  }
  return t;
}

/** Canonical fp8 codes in a side's layout order. */
std::vector<uint8_t> layoutCodes(const Side& side, const std::vector<uint8_t>& canon) {
  std::vector<uint8_t> dense(static_cast<size_t>(product(side.shape())), 0);
  side.forEach([&](int64_t at, int64_t c) { dense[static_cast<size_t>(at)] = canon[static_cast<size_t>(c)]; });
  return dense;
}

std::vector<int64_t> scaleShape(const Case& c, bool query) {
  const int64_t rows = query ? c.s1 : c.s2;
  return {c.batch, query ? c.n1 : c.n2, (rows + 127) / 128, 1};
}

/** Every tensor of one GradV4 FP8 call; tests replace pointers to break a rule. */
struct Fp8Call {
  const Fp8Data& d;
  compressor::Buffer<uint8_t> q, k, v, dy;
  IoTensor o, maxT, sumT, sq, sk, sv, sdy, so, dq, dk, dv;
  Extras ex;
  // The arguments as passed (tests edit them).
  aclTensor *query, *key, *value, *grad, *attentionIn, *scaleQ, *scaleK, *scaleV, *scaleDy, *scaleO, *dqOut, *dkOut,
      *dvOut, *queryRope = nullptr, *keyRope = nullptr;
  std::string layout;
  int64_t outDtype;

  explicit Fp8Call(const Fp8Data& data) : d(data), ex(data.data) {
    const Case& c = d.data.c;
    const aclDataType f8 = d.fc.fp8Dtype();
    q = makeFp8(f8, d.data.qSide.shape(), layoutCodes(d.data.qSide, d.q.codes), false);
    k = makeFp8(f8, d.data.kSide.shape(), layoutCodes(d.data.kSide, d.k.codes), false);
    v = makeFp8(f8, d.data.vSide.shape(), layoutCodes(d.data.vSide, d.v.codes), false);
    dy = makeFp8(f8, d.data.oSide.shape(), layoutCodes(d.data.oSide, d.dy.codes), false);
    o = makeInput(c.dtype, d.data.oSide.shape(), layoutOrder(d.data.oSide, d.attentionIn), false);
    std::vector<double> maxDense, sumDense;
    for (size_t r = 0; r < d.max.size(); ++r) {
      for (int lane = 0; lane < 8; ++lane) {
        maxDense.push_back(d.max[r]);
        sumDense.push_back(d.sum[r]);
      }
    }
    maxT = makeInput(ACL_FLOAT, statsShape(c), maxDense, false);
    sumT = makeInput(ACL_FLOAT, statsShape(c), sumDense, false);
    const auto scales = [&](const std::vector<float>& s, bool querySide) {
      return makeInput(ACL_FLOAT, scaleShape(c, querySide), std::vector<double>(s.begin(), s.end()), false);
    };
    sq = scales(d.q.dScale, true);
    sk = scales(d.k.dScale, false);
    sv = scales(d.v.dScale, false);
    sdy = scales(d.dy.dScale, true);
    so = scales(d.q.dScale, true);  // as upstream's pytest: dScaleO = dScaleQ
    dq = makeOutput(c.dtype, d.data.qSide.shape(), false);
    dk = makeOutput(c.dtype, d.data.kSide.shape(), false);
    dv = makeOutput(c.dtype, d.data.vSide.shape(), false);
    query = q.tensor.get(), key = k.tensor.get(), value = v.tensor.get(), grad = dy.tensor.get();
    attentionIn = o.get();
    scaleQ = sq.get(), scaleK = sk.get(), scaleV = sv.get(), scaleDy = sdy.get(), scaleO = so.get();
    dqOut = dq.get(), dkOut = dk.get(), dvOut = dv.get();
    layout = c.layout;
    outDtype = d.fc.outDtype();
  }

  aclnnStatus plan(uint64_t* size, aclOpExecutor** executor) {
    const Case& c = d.data.c;
    std::string statsLayout;
    return aclnnFlashAttentionScoreGradV4GetWorkspaceSize(
        query, key, value, grad, ex.pseT(), nullptr, nullptr, ex.maskT(), maxT.get(), sumT.get(), nullptr, attentionIn,
        nullptr, queryRope, keyRope, scaleQ, scaleK, scaleV, scaleDy, scaleO, ex.prefix.get(), nullptr, nullptr,
        ex.qStart.get(), ex.kvStart.get(), c.scaleValue(), c.keepProb, c.pre, c.next, c.n1, layout.data(),
        statsLayout.data(), 0, c.sparseMode, c.pseType, c.seed, c.offset, outDtype, dqOut, dkOut, dvOut, nullptr,
        nullptr, nullptr, nullptr, size, executor);
  }

  /** GetWorkspaceSize alone (checks). */
  aclnnStatus check() {
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    return plan(&size, &executor);
  }

  BackwardResult run() {
    BackwardResult r;
    r.status = runBoth([&](uint64_t* size, aclOpExecutor** executor) { return plan(size, executor); },
                       aclnnFlashAttentionScoreGradV4);
    if (r.status != ACLNN_SUCCESS) return r;
    r.dq = canonical(d.data.qSide, dq);
    r.dk = canonical(d.data.kSide, dk);
    r.dv = canonical(d.data.vSide, dv);
    return r;
  }
};

/** Differences of one output: relative L2, max |diff| / max |golden|, and spec 5.11's share over its threshold. */
struct Diff {
  double relL2 = 0, relMax = 0, overShare = 0;
};

Diff diffOf(const std::vector<double>& ours, const std::vector<double>& want) {
  double num = 0, den = 0, top = 0, worst = 0;
  int64_t over = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double diff = std::fabs(ours[i] - want[i]);
    num += diff * diff;
    den += want[i] * want[i];
    top = std::max(top, std::fabs(want[i]));
    worst = std::max(worst, diff);
    const double threshold = std::max(std::max(std::fabs(ours[i]), std::fabs(want[i])) * 0.005, 2.4974346e-05);
    if (!(diff <= threshold)) ++over;
  }
  return {std::sqrt(num / std::max(den, 1e-300)), worst / std::max(top, 1e-300),
          static_cast<double>(over) / static_cast<double>(std::max<size_t>(want.size(), 1))};
}

std::vector<double> rounded(aclDataType dtype, std::vector<double> values) {
  for (double& x : values) x = roundTo(dtype, x);
  return values;
}

Fp8Case fp8e5Case() {  // spec 5.12 FP8E5_03
  Fp8Case fc;
  fc.name = "FP8E5_03";
  fc.format = Fp8Format::E5M2;
  Case& c = fc.c;
  c.layout = "BSND";
  c.dtype = ACL_FLOAT16;
  c.batch = 2, c.n1 = 2, c.n2 = 1, c.s1 = 125, c.s2 = 125, c.d = 128, c.dv = 128;
  c.pre = 65536, c.next = 65536;
  return fc;
}

Fp8Case fp8e4Case() {  // spec 5.12 FP8E4_04 (out dtype bf16: the seed's "bp16" typo fixed)
  Fp8Case fc = fp8e5Case();
  fc.name = "FP8E4_04";
  fc.format = Fp8Format::E4M3FN;
  fc.c.layout = "SBH";
  fc.c.dtype = ACL_BF16;
  fc.c.s1 = 129;
  return fc;
}

Fp8Case maskedCase() {  // causal template mask, a BN1S pse table, Philox dropout, GQA 4 / 2, D != D_V
  Fp8Case fc;
  fc.name = "masked";
  fc.format = Fp8Format::E4M3FN;
  Case& c = fc.c;
  c.layout = "BNSD";
  c.dtype = ACL_FLOAT16;
  c.batch = 1, c.n1 = 4, c.n2 = 2, c.s1 = 150, c.s2 = 140, c.d = 32, c.dv = 24;
  c.mask = "template", c.sparseMode = 3;
  c.pse = "BN1S", c.pseType = 1;
  c.keepProb = 0.9, c.philox = true, c.seed = 2, c.offset = 16;
  return fc;
}

// The chain against the exact gradient of the de-quantised inputs (fp64 golden, same statistics and attentionIn): the
// fp8 casts of P_d and dS leave a few percent, far from a wrong block scale (which would be off by factors).
TEST(FlashAttentionFp8Values, ChainCloseToTheFp64GoldenOnDequantisedInputs) {
  for (const Fp8Case& fc : {fp8e5Case(), fp8e4Case()}) {
    SCOPED_TRACE(fc.name);
    const Fp8Data data(fc);
    mhc::ScopedSoc soc("Ascend950");
    Fp8Call call(data);
    const BackwardResult r = call.run();
    ASSERT_EQ(r.status, ACLNN_SUCCESS) << recentError();
    const golden::FlashAttentionProblem& p = data.data.problem;
    const auto dequantised = [&](const Fp8Quantized& x, int64_t dim, bool query) {
      std::vector<double> out(x.values.size());
      const int64_t heads = query ? p.n1 : p.n2, blocks = golden::fp8Blocks(query ? p.s1 : p.s2);
      const int64_t rows = query ? fc.c.s1 : fc.c.s2;
      for (int64_t b = 0; b < p.batch; ++b)
        for (int64_t n = 0; n < heads; ++n)
          for (int64_t i = 0; i < rows; ++i) {
            const int64_t row = query ? p.qRow(b, n, i) : p.kvRow(b, n, i);
            const double s = x.dScale[static_cast<size_t>((b * heads + n) * blocks + i / 128)];
            for (int64_t c = 0; c < dim; ++c) out[row * dim + c] = x.values[row * dim + c] * s;
          }
      return out;
    };
    const std::vector<double> q = dequantised(data.q, p.d, true), k = dequantised(data.k, p.d, false);
    const std::vector<double> v = dequantised(data.v, p.dv, false), dy = dequantised(data.dy, p.dv, true);
    golden::FlashAttentionGradInputs<double> in{
        {q.data(), k.data(), v.data()}, dy.data(), data.attentionIn.data(), data.max.data(), data.sum.data()};
    const auto exact = golden::flashAttentionBackward(p, in);
    for (const auto& [name, ours, want] :
         {std::make_tuple("dq", &r.dq, &exact.dq), std::make_tuple("dk", &r.dk, &exact.dk),
          std::make_tuple("dv", &r.dv, &exact.dv)}) {
      const Diff d = diffOf(*ours, *want);
      std::printf("%s %s vs fp64 golden on de-quantised inputs: rel L2 %.4f\n", fc.name.c_str(), name, d.relL2);
      EXPECT_LT(d.relL2, 0.15) << name;
    }
  }
}

// De-quant scales are data: NaN, infinite or overflowing ones propagate into every gradient as NaN data does
// (status 0, the outputs written), instead of failing on the stream.
TEST(FlashAttentionFp8Values, NonFiniteOrOverflowingScalesPropagate) {
  const Fp8Data data(fp8e4Case());
  mhc::ScopedSoc soc("Ascend950");
  const Case& c = data.data.c;
  const auto filled = [&](bool query, double value) {
    const std::vector<int64_t> shape = scaleShape(c, query);
    return makeInput(ACL_FLOAT, shape, std::vector<double>(static_cast<size_t>(product(shape)), value), false);
  };
  const auto nonFinite = [](const std::vector<double>& out) {
    return std::any_of(out.begin(), out.end(), [](double x) { return !std::isfinite(x); });
  };
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (const auto& [q, k] : {std::pair{nan, 1.0}, {inf, 1.0}, {1e20, 1e20}}) {
    Fp8Call call(data);
    const IoTensor scaleQ = filled(true, q), scaleK = filled(false, k);
    call.scaleQ = scaleQ.get(), call.scaleK = scaleK.get();
    const BackwardResult r = call.run();
    ASSERT_EQ(r.status, ACLNN_SUCCESS) << "dScaleQ " << q << ", dScaleK " << k << ": " << recentError();
    EXPECT_TRUE(nonFinite(r.dq)) << "dq, dScaleQ " << q << ", dScaleK " << k;
    EXPECT_TRUE(nonFinite(r.dk)) << "dk, dScaleQ " << q << ", dScaleK " << k;
    EXPECT_TRUE(nonFinite(r.dv)) << "dv, dScaleQ " << q << ", dScaleK " << k;
  }
}

TEST(FlashAttentionFp8Values, SameBitsForAnyThreadCount) {
  Fp8Case fc = maskedCase();
  fc.c.s1 = 260, fc.c.s2 = 300;  // several key chunks and query blocks
  const Fp8Data data(fc);
  mhc::ScopedSoc soc("Ascend950");
  std::vector<BackwardResult> results;
  for (int threads : {1, 2, 3}) {
    setThreadCount(threads);
    Fp8Call call(data);
    results.push_back(call.run());
  }
  setThreadCount(0);
  for (const BackwardResult& r : results) ASSERT_EQ(r.status, ACLNN_SUCCESS);
  for (size_t t = 1; t < results.size(); ++t) {
    EXPECT_EQ(results[t].dq, results[0].dq);
    EXPECT_EQ(results[t].dk, results[0].dk);
    EXPECT_EQ(results[t].dv, results[0].dv);
  }
}

// A bench-like shape (B = 1, N1 = 4 / N2 = 1, S 384, D 128, BNSD, e4m3fn -> bf16) runs: finite, non-zero outputs that
// agree with the FP8 golden.
TEST(FlashAttentionFp8Values, BenchLikeShapeRuns) {
  Fp8Case fc = fp8e4Case();
  fc.c.layout = "BNSD";
  fc.c.batch = 1, fc.c.n1 = 4, fc.c.n2 = 1, fc.c.s1 = 384, fc.c.s2 = 384;
  const Fp8Data data(fc);
  mhc::ScopedSoc soc("Ascend950");
  Fp8Call call(data);
  const BackwardResult r = call.run();
  ASSERT_EQ(r.status, ACLNN_SUCCESS) << recentError();
  for (const std::vector<double>* out : {&r.dq, &r.dk, &r.dv}) {
    double top = 0;
    for (const double x : *out) {
      ASSERT_TRUE(std::isfinite(x));
      top = std::max(top, std::fabs(x));
    }
    EXPECT_GT(top, 0.0);
  }
  const auto g = data.golden();
  EXPECT_LT(diffOf(r.dv, rounded(ACL_BF16, g.dv)).relL2, 6e-3);
}

// ---------------------------------------------------------------------------------------------------------------
// The FP8 argument rules

class Fp8Checks : public ::testing::Test {
 protected:
  Fp8Checks() : data_(small()), soc_("Ascend950") {}
  static Fp8Case small() {
    Fp8Case fc = fp8e5Case();
    fc.c.s1 = 130, fc.c.s2 = 20, fc.c.d = fc.c.dv = 16;
    return fc;
  }
  void expectRejected(Fp8Call& call, aclnnStatus code, const std::string& argument) {
    EXPECT_EQ(call.check(), code);
    const std::string message = recentError();
    EXPECT_NE(message.find(argument), std::string::npos) << message;
  }
  Fp8Data data_;
  mhc::ScopedSoc soc_;
};

TEST_F(Fp8Checks, AValidCallPassesWithOrWithoutDScaleO) {
  Fp8Call call(data_);
  EXPECT_EQ(call.check(), ACLNN_SUCCESS) << recentError();
  call.scaleO = nullptr;  // not read: optional
  EXPECT_EQ(call.check(), ACLNN_SUCCESS) << recentError();
}

TEST_F(Fp8Checks, MissingScalesAreNullPointers) {
  Fp8Call call(data_);
  call.scaleK = nullptr;
  expectRejected(call, ACLNN_ERR_PARAM_NULLPTR, "dScaleKOptional");
}

TEST_F(Fp8Checks, ScaleShapesAndDtypes) {
  Fp8Call call(data_);
  call.scaleQ = call.sk.get();  // [B, N2, 1, 1] where [B, N1, 2, 1] is due
  expectRejected(call, ACLNN_ERR_PARAM_INVALID, "dScaleQOptional");
  Fp8Call wrongO(data_);
  wrongO.scaleO = wrongO.sv.get();
  expectRejected(wrongO, ACLNN_ERR_PARAM_INVALID, "dScaleOOptional");
  Fp8Call halfScale(data_);
  IoTensor half = makeInput(ACL_FLOAT16, scaleShape(data_.data.c, true), std::vector<double>(8, 1.0), false);
  halfScale.scaleDy = half.get();
  expectRejected(halfScale, ACLNN_ERR_PARAM_INVALID, "dScaleDyOptional");
}

TEST_F(Fp8Checks, OutDtypeDecidesAttentionInAndOutputs) {
  Fp8Call call(data_);
  call.outDtype = 1;  // BFLOAT16 expected, FLOAT16 given
  expectRejected(call, ACLNN_ERR_PARAM_INVALID, "attentionInOptional");
  Fp8Call bad(data_);
  bad.outDtype = 2;
  expectRejected(bad, ACLNN_ERR_PARAM_INVALID, "outDtype");
  Fp8Call fp8Out(data_);
  fp8Out.dqOut = fp8Out.q.tensor.get();
  expectRejected(fp8Out, ACLNN_ERR_PARAM_INVALID, "dqOut");
  Fp8Call mixed(data_);
  IoTensor halfDy = makeInput(ACL_FLOAT16, data_.data.oSide.shape(), data_.attentionIn, false);
  mixed.grad = halfDy.get();
  expectRejected(mixed, ACLNN_ERR_PARAM_INVALID, "dy");
}

TEST_F(Fp8Checks, TndAndRopeAreNotFp8) {
  Fp8Call rope(data_);
  rope.queryRope = rope.q.tensor.get();
  rope.keyRope = rope.k.tensor.get();
  expectRejected(rope, ACLNN_ERR_PARAM_INVALID, "queryRopeOptional");

  Fp8Case fc = small();
  fc.c.layout = "TND";
  fc.c.seqQ = {3, 5}, fc.c.seqKv = {4, 4};
  Case& c = fc.c;
  const Side qSide{&c, true, c.n1, c.d}, kSide{&c, false, c.n2, c.d};
  auto q = makeFp8(ACL_FLOAT8_E5M2, qSide.shape(), std::vector<uint8_t>(product(qSide.shape()), 0x3c), false);
  auto k = makeFp8(ACL_FLOAT8_E5M2, kSide.shape(), std::vector<uint8_t>(product(kSide.shape()), 0x3c), false);
  IoTensor o = makeInput(ACL_FLOAT16, qSide.shape(), {}, false), dq = makeOutput(ACL_FLOAT16, qSide.shape(), false);
  IoTensor dk = makeOutput(ACL_FLOAT16, kSide.shape(), false);
  IoTensor stats = makeInput(ACL_FLOAT, {8, c.n1, 8}, {}, false);
  IoTensor sq = makeInput(ACL_FLOAT, {2, c.n1, 1, 1}, {}, false), sk = makeInput(ACL_FLOAT, {2, c.n2, 1, 1}, {}, false);
  IntArrayPtr seqQ = intArray({3, 8}), seqKv = intArray({4, 8});
  std::string layout = "TND", statsLayout;
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  EXPECT_EQ(aclnnFlashAttentionScoreGradV4GetWorkspaceSize(
                q.tensor.get(), k.tensor.get(), k.tensor.get(), q.tensor.get(), nullptr, nullptr, nullptr, nullptr,
                stats.get(), stats.get(), nullptr, o.get(), nullptr, nullptr, nullptr, sq.get(), sk.get(), sk.get(),
                sq.get(), nullptr, nullptr, seqQ.get(), seqKv.get(), nullptr, nullptr, 0.25, 1.0, 65536, 65536, c.n1,
                layout.data(), statsLayout.data(), 0, 0, 1, 0, 0, 0, dq.get(), dk.get(), dk.get(), nullptr, nullptr,
                nullptr, nullptr, &size, &executor),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recentError().find("inputLayout"), std::string::npos) << recentError();
}

TEST_F(Fp8Checks, ScalesNeedFp8InputsAndFp8NeedsGradV4) {
  // A FLOAT16 GradV4 call with de-quant scales: the scales belong to FP8 inputs only.
  Case c = small().c;
  c.dtype = ACL_FLOAT16;
  const Data plain(c);
  Extras ex(plain);
  IoTensor q = makeInput(ACL_FLOAT16, plain.qSide.shape(), layoutOrder(plain.qSide, plain.q), false);
  IoTensor k = makeInput(ACL_FLOAT16, plain.kSide.shape(), layoutOrder(plain.kSide, plain.k), false);
  IoTensor o = makeInput(ACL_FLOAT16, plain.oSide.shape(), layoutOrder(plain.oSide, plain.dy), false);
  IoTensor stats = makeInput(ACL_FLOAT, statsShape(c), std::vector<double>(product(statsShape(c)), 1.0), false);
  IoTensor dq = makeOutput(ACL_FLOAT16, plain.qSide.shape(), false),
           dk = makeOutput(ACL_FLOAT16, plain.kSide.shape(), false);
  Fp8Call fp8(data_);
  std::string layout = c.layout, statsLayout;
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  EXPECT_EQ(aclnnFlashAttentionScoreGradV4GetWorkspaceSize(
                q.get(), k.get(), k.get(), o.get(), nullptr, nullptr, nullptr, nullptr, stats.get(), stats.get(),
                nullptr, o.get(), nullptr, nullptr, nullptr, fp8.scaleQ, nullptr, nullptr, nullptr, nullptr, nullptr,
                nullptr, nullptr, nullptr, nullptr, 0.25, 1.0, 65536, 65536, c.n1, layout.data(), statsLayout.data(), 0,
                0, 1, 0, 0, 0, dq.get(), dk.get(), dk.get(), nullptr, nullptr, nullptr, nullptr, &size, &executor),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recentError().find("dScaleQOptional"), std::string::npos) << recentError();
  // FP8 inputs through GradV2 (no FP8 path there): the query dtype is rejected.
  EXPECT_EQ(aclnnFlashAttentionScoreGradV2GetWorkspaceSize(
                fp8.query, fp8.key, fp8.value, fp8.grad, nullptr, nullptr, nullptr, nullptr, fp8.maxT.get(),
                fp8.sumT.get(), nullptr, fp8.attentionIn, nullptr, nullptr, nullptr, 0.25, 1.0, 65536, 65536,
                data_.data.c.n1, layout.data(), 0, 0, 1, fp8.dqOut, fp8.dkOut, fp8.dvOut, nullptr, &size, &executor),
            ACLNN_ERR_PARAM_INVALID);
  EXPECT_NE(recentError().find("query"), std::string::npos) << recentError();
}

}  // namespace
}  // namespace gradkit::test::fa
