// Flash attention values through the C API: every layout, dtype, sparse mode, pse form, dropout source, GQA, D != D_V,
// TND with empty batches, strided tensors and both statistics layouts, against the fp64 golden. The forward is
// compared with the golden forward; the backward is fed the golden forward's out and statistics (rounded as the op
// takes them) and compared with the golden backward under the double-benchmark gate (DECISIONS.md).
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "core/tile_path.h"
#include "tests/ops/fa_test_util.h"
#include "tests/ops/mhc_test_util.h"

namespace gradkit::test::fa {
namespace {

struct Named {
  std::string name;
  Case c;
};

Case base(const std::string& layout, aclDataType dtype = ACL_FLOAT) {
  Case c;
  c.layout = layout;
  c.dtype = dtype;
  if (c.tnd()) {
    c.seqQ = {9, 0, 14};
    c.seqKv = {11, 5, 14};
  }
  return c;
}

std::vector<Named> cases() {
  std::vector<Named> all;
  for (const char* layout : {"BNSD", "BSND", "BSH", "SBH", "TND"}) {
    all.push_back({std::string(layout) + "_fp32", base(layout)});
  }
  all.push_back({"BNSD_bf16", base("BNSD", ACL_BF16)});
  all.push_back({"BSND_fp16", base("BSND", ACL_FLOAT16)});
  all.push_back({"TND_bf16", base("TND", ACL_BF16)});
  {
    Case c = base("BSH");
    c.batch = 2, c.n1 = 4, c.n2 = 2, c.s1 = 10, c.s2 = 17, c.d = 24, c.dv = 8;
    all.push_back({"gqa_dv_lt_d", c});
  }
  {
    Case c = base("BNSD");
    c.s1 = 70, c.s2 = 75, c.d = 8, c.dv = 8, c.n1 = 1;  // more than one tile each way
    all.push_back({"tiles", c});
  }
  {
    Case c = base("BNSD");
    c.batch = 2, c.mask = "SS", c.sparseMode = 0, c.pre = 3, c.next = 2;
    all.push_back({"mode0_SS_band", c});
  }
  {
    Case c = base("BSND");
    c.batch = 2, c.mask = "BNSS", c.sparseMode = 1;
    all.push_back({"mode1_BNSS", c});
  }
  {
    Case c = base("BNSD");
    c.mask = "template", c.sparseMode = 2, c.s1 = 12, c.s2 = 9;
    all.push_back({"mode2", c});
  }
  {
    Case c = base("BNSD");
    c.mask = "template", c.sparseMode = 3, c.s1 = 14, c.s2 = 9;  // S1 > S2: fully masked rows
    all.push_back({"mode3_invalid_rows", c});
  }
  {
    Case c = base("SBH");
    c.mask = "template", c.sparseMode = 4, c.pre = 4, c.next = 1, c.s1 = 10, c.s2 = 13;
    all.push_back({"mode4_band", c});
  }
  {  // INT64_MAX tokens mean "no limit": the band edges d0 + next and pre - d0 saturate instead of overflowing
    Case c = base("BSND");
    c.mask = "template", c.sparseMode = 4, c.pre = INT64_MAX, c.next = INT64_MAX, c.s1 = 10, c.s2 = 13;
    all.push_back({"mode4_unbounded_tokens", c});
  }
  {
    Case c = base("BNSD");
    c.mask = "template", c.sparseMode = 4, c.pre = -2, c.next = INT64_MAX, c.s1 = 13, c.s2 = 10;
    all.push_back({"mode4_next_unbounded", c});
  }
  {
    Case c = base("BNSD");
    c.batch = 2, c.mask = "B1SS", c.sparseMode = 5, c.prefix = {3, 5};
    all.push_back({"mode5_full_mask", c});
  }
  {
    Case c = base("BNSD");
    c.batch = 2, c.mask = "prefix", c.sparseMode = 6, c.prefix = {4, 0}, c.s1 = 12, c.s2 = 12;
    all.push_back({"mode6_prefix", c});
  }
  {
    Case c = base("TND");
    c.mask = "template", c.sparseMode = 3;
    all.push_back({"TND_mode3", c});
  }
  {
    Case c = base("TND");
    c.mask = "template", c.sparseMode = 7, c.pre = 20, c.next = 0, c.seqQ = {6, 9}, c.seqKv = {8, 9};
    all.push_back({"TND_mode7", c});
  }
  {
    Case c = base("TND");
    c.mask = "template", c.sparseMode = 7, c.pre = INT64_MAX, c.next = 0, c.seqQ = {6, 9}, c.seqKv = {8, 9};
    all.push_back({"TND_mode7_unbounded_pre", c});
  }
  {
    Case c = base("TND");
    c.mask = "template", c.sparseMode = 8, c.pre = INT64_MAX, c.next = INT64_MAX, c.seqQ = {6, 9}, c.seqKv = {8, 9};
    all.push_back({"TND_mode8_unbounded_tokens", c});
  }
  {
    Case c = base("TND");
    c.mask = "template", c.sparseMode = 8, c.pre = 20, c.next = 3, c.seqQ = {6, 9}, c.seqKv = {8, 9};
    all.push_back({"TND_mode8", c});
  }
  {
    Case c = base("BNSD");
    c.pse = "BNSS", c.pseType = 1, c.batch = 2;
    all.push_back({"pse1_BNSS", c});
  }
  {
    Case c = base("BSND");
    c.pse = "BN1S", c.pseType = 0, c.batch = 2;
    all.push_back({"pse0_BN1S", c});
  }
  {
    Case c = base("BNSD", ACL_BF16);
    c.pse = "1NSS", c.pseType = 1, c.batch = 2;
    all.push_back({"pse1_1NSS_bf16", c});
  }
  {
    Case c = base("BNSD");
    c.pse = "N", c.pseType = 2, c.n1 = 3, c.qStartIdx = 2, c.kvStartIdx = 5;
    all.push_back({"pse2_slopes_N", c});
  }
  {
    Case c = base("BSH");
    c.pse = "BN", c.pseType = 3, c.batch = 2;
    all.push_back({"pse3_slopes_BN", c});
  }
  {
    Case c = base("BNSD");
    c.pse = "BNHS", c.pseType = 1, c.n1 = 1, c.s1 = 1030, c.s2 = 1030, c.d = 4, c.dv = 4;
    c.mask = "template", c.sparseMode = 3;
    all.push_back({"pse_alibi_1024_rows", c});
  }
  {
    Case c = base("TND");
    c.pse = "1NHS", c.pseType = 1, c.seqQ = {5, 7}, c.seqKv = {5, 7}, c.mask = "template", c.sparseMode = 3;
    all.push_back({"TND_pse_alibi", c});
  }
  {
    Case c = base("BNSD");
    c.keepProb = 0.8, c.batch = 2, c.s2 = 21;
    all.push_back({"dropout_packed", c});
  }
  {
    Case c = base("TND");
    c.keepProb = 0.7;
    all.push_back({"TND_dropout_packed", c});
  }
  {
    Case c = base("BSND");
    c.strided = true, c.mask = "11SS", c.sparseMode = 0, c.n1 = 4, c.n2 = 2;
    all.push_back({"strided", c});
  }
  {
    Case c = base("TND");
    c.statsSameAsInput = true, c.strided = true;
    all.push_back({"TND_same_as_input", c});
  }
  return all;
}

class FlashAttentionValues : public ::testing::TestWithParam<Named> {};

/** The golden problem of the chain this process computes: on the native-bf16 path (core/tile_path.h), bf16 P and dS
 *  go into the products, so the forward is compared with that chain in fp64 and the backward's naive benchmark
 *  follows it (as the verify suite does). */
golden::FlashAttentionProblem chainOf(const Data& data) {
  golden::FlashAttentionProblem p = data.problem;
  p.bf16ProductOperands = data.c.dtype == ACL_BF16 && chooseTilePath(ACL_BF16).path == TilePath::NativeBf16;
  return p;
}

double outTolerance(aclDataType dtype, double golden) {
  return (dtype == ACL_FLOAT ? 0.0 : compressor::ioUlp(dtype, golden)) + 2e-5 * (1.0 + std::fabs(golden));
}

TEST_P(FlashAttentionValues, ForwardMatchesTheGolden) {
  const Data data(GetParam().c);
  const Case& c = data.c;
  const ForwardResult r = runForward(data);
  ASSERT_EQ(r.status, ACLNN_SUCCESS) << recentError();
  golden::FlashAttentionInputs<double> in{data.q.data(), data.k.data(), data.v.data()};
  const auto g = golden::flashAttentionForward(chainOf(data), in);
  ASSERT_EQ(r.out.size(), g.out.size());
  EXPECT_TRUE(r.lanesEqual);
  int64_t bad = 0;
  for (size_t i = 0; i < g.out.size() && bad < 5; ++i) {
    if (!(std::fabs(r.out[i] - g.out[i]) <= outTolerance(c.dtype, g.out[i]))) {
      ADD_FAILURE() << "out[" << i << "] = " << r.out[i] << ", golden " << g.out[i];
      ++bad;
    }
  }
  for (size_t i = 0; i < g.softmaxMax.size() && bad < 5; ++i) {
    const bool maxOk = std::fabs(r.max[i] - g.softmaxMax[i]) <= 1e-5 * (1.0 + std::fabs(g.softmaxMax[i]));
    const bool sumOk = std::fabs(r.sum[i] - g.softmaxSum[i]) <= 1e-5 * std::fabs(g.softmaxSum[i]);
    if (!maxOk || !sumOk) {
      ADD_FAILURE() << "row " << i << ": max " << r.max[i] << " sum " << r.sum[i] << ", golden " << g.softmaxMax[i]
                    << " " << g.softmaxSum[i];
      ++bad;
    }
  }
}

/** Rounds every value to `dtype`. */
std::vector<double> rounded(aclDataType dtype, std::vector<double> values) {
  for (double& x : values) x = roundTo(dtype, x);
  return values;
}

TEST_P(FlashAttentionValues, BackwardMatchesTheGoldenUnderTheDoubleBenchmark) {
  const Data data(GetParam().c);
  const Case& c = data.c;
  golden::FlashAttentionInputs<double> in{data.q.data(), data.k.data(), data.v.data()};
  const auto fwd = golden::flashAttentionForward(data.problem, in);
  // What the op is given: out in the io dtype, the statistics in fp32.
  const std::vector<double> out = rounded(c.dtype, fwd.out);
  const std::vector<double> max = rounded(ACL_FLOAT, fwd.softmaxMax), sum = rounded(ACL_FLOAT, fwd.softmaxSum);

  std::unique_ptr<mhc::ScopedSoc> soc;
  if (c.philox) soc = std::make_unique<mhc::ScopedSoc>("Ascend950");
  const BackwardResult r = runBackward(data, out, max, sum);
  ASSERT_EQ(r.status, ACLNN_SUCCESS) << recentError();

  golden::FlashAttentionGradInputs<double> gin{in, data.dy.data(), out.data(), max.data(), sum.data()};
  const auto exact = golden::flashAttentionBackward(data.problem, gin);
  const auto toFloat = [](const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); };
  const std::vector<float> qf = toFloat(data.q), kf = toFloat(data.k), vf = toFloat(data.v), dyf = toFloat(data.dy),
                           of = toFloat(out), mf = toFloat(max), sf = toFloat(sum);
  golden::FlashAttentionGradInputs<float> nin{
      {qf.data(), kf.data(), vf.data()}, dyf.data(), of.data(), mf.data(), sf.data()};
  const auto naive = golden::flashAttentionBackward(chainOf(data), nin);
  const auto check = [&](const char* name, const std::vector<double>& ours, const std::vector<double>& g,
                         const std::vector<float>& n) {
    ASSERT_EQ(ours.size(), g.size()) << name;
    std::vector<double> naiveRounded(n.begin(), n.end());
    naiveRounded = rounded(c.dtype, naiveRounded);
    double scale = 0;
    for (double x : g) scale = std::max(scale, std::fabs(x));
    EXPECT_TRUE(compressor::withinBenchmark(compressor::errorsOf(ours, g), compressor::errorsOf(naiveRounded, g), 2.0,
                                            1e-6 * scale + 1e-12))
        << name;
  };
  check("dq", r.dq, exact.dq, naive.dq);
  check("dk", r.dk, exact.dk, naive.dk);
  check("dv", r.dv, exact.dv, naive.dv);
}

INSTANTIATE_TEST_SUITE_P(Cases, FlashAttentionValues, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Named>& param) { return param.param.name; });

Case philoxCase(const std::string& layout) {
  Case c = base(layout);
  c.keepProb = 0.9, c.philox = true, c.seed = 2, c.offset = 48;
  c.s2 = 19;  // rows padded to 32 stream bytes
  return c;
}

TEST(FlashAttentionGradV4, PhiloxDropoutMatchesTheGoldenStream) {
  for (const char* layout : {"BNSD", "TND"}) {
    SCOPED_TRACE(layout);
    const Data data(philoxCase(layout));
    golden::FlashAttentionInputs<double> in{data.q.data(), data.k.data(), data.v.data()};
    const auto fwd = golden::flashAttentionForward(data.problem, in);
    const std::vector<double> out = rounded(ACL_FLOAT, fwd.out);
    const std::vector<double> max = rounded(ACL_FLOAT, fwd.softmaxMax), sum = rounded(ACL_FLOAT, fwd.softmaxSum);
    mhc::ScopedSoc soc("Ascend950");
    const BackwardResult r = runBackward(data, out, max, sum);
    ASSERT_EQ(r.status, ACLNN_SUCCESS) << recentError();
    golden::FlashAttentionGradInputs<double> gin{in, data.dy.data(), out.data(), max.data(), sum.data()};
    const auto g = golden::flashAttentionBackward(data.problem, gin);
    for (size_t i = 0; i < g.dv.size(); ++i) ASSERT_NEAR(r.dv[i], g.dv[i], 1e-5 * (1 + std::fabs(g.dv[i]))) << i;
    for (size_t i = 0; i < g.dq.size(); ++i) ASSERT_NEAR(r.dq[i], g.dq[i], 1e-5 * (1 + std::fabs(g.dq[i]))) << i;
  }
}

TEST(FlashAttentionValues, SameBitsForAnyThreadCount) {
  Case c = base("BNSD");
  c.n1 = 4, c.n2 = 2, c.s1 = 70, c.s2 = 66, c.mask = "template", c.sparseMode = 3, c.keepProb = 0.9;
  const Data data(c);
  std::vector<ForwardResult> fwd;
  std::vector<BackwardResult> bwd;
  golden::FlashAttentionInputs<double> in{data.q.data(), data.k.data(), data.v.data()};
  const auto g = golden::flashAttentionForward(data.problem, in);
  for (int threads : {1, 2, 3}) {
    setThreadCount(threads);
    fwd.push_back(runForward(data));
    bwd.push_back(runBackward(data, rounded(ACL_FLOAT, g.out), rounded(ACL_FLOAT, g.softmaxMax),
                              rounded(ACL_FLOAT, g.softmaxSum)));
  }
  setThreadCount(0);
  for (size_t t = 1; t < fwd.size(); ++t) {
    EXPECT_EQ(fwd[t].out, fwd[0].out);
    EXPECT_EQ(fwd[t].max, fwd[0].max);
    EXPECT_EQ(fwd[t].sum, fwd[0].sum);
    EXPECT_EQ(bwd[t].dq, bwd[0].dq);
    EXPECT_EQ(bwd[t].dk, bwd[0].dk);
    EXPECT_EQ(bwd[t].dv, bwd[0].dv);
  }
}

TEST(FlashAttentionValues, FullyMaskedRowsFollowTheInvalidRowRule) {
  Case c = base("BNSD");
  c.mask = "template", c.sparseMode = 3, c.s1 = 10, c.s2 = 4;  // rows 0..5 see no key
  const Data data(c);
  const ForwardResult r = runForward(data);
  ASSERT_EQ(r.status, ACLNN_SUCCESS) << recentError();
  for (int64_t n = 0; n < c.n1; ++n) {
    for (int64_t i = 0; i < 6; ++i) {
      const size_t row = static_cast<size_t>(n * c.s1 + i);
      EXPECT_EQ(r.max[row], -static_cast<double>(FLT_MAX));
      EXPECT_EQ(r.sum[row], static_cast<double>(FLT_MAX));
      for (int64_t x = 0; x < c.dv; ++x)
        EXPECT_EQ(r.out[row * static_cast<size_t>(c.dv) + static_cast<size_t>(x)], 0.0);
    }
  }
}

}  // namespace
}  // namespace gradkit::test::fa
