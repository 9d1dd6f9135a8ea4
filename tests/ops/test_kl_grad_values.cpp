// SparseLightningIndexerKLLossGrad values: the public API against the fp64 golden for both dtypes and layouts, both
// masks, cmpRatio with residuals, seqused, rows and keys no batch uses, junk indices and p outside the valid slots
// (tolerances measured below); the SIMD element kernels against the scalar ones bit for bit on every FMA target (with
// both sum orders of the bf16 products); the same bits for 1, 2, 3 and 8 threads; strided views equal to dense ones;
// every output element written.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "hwy/targets.h"
#include "ops/kl_grad_test_util.h"

namespace gradkit::test::kl_grad {
namespace {

using block_residuals::maxNormError;
using block_residuals::normwiseError;

std::string where(const KlCase& c) {
  return std::string(c.tnd ? "TND" : "BSND") + (c.dtype == ACL_BF16 ? " bf16" : " fp16") + " N1 " +
         std::to_string(c.heads) + " K " + std::to_string(c.topk) + " mask " + std::to_string(c.maskMode) + " cr " +
         std::to_string(c.cmpRatio);
}

/** The cases every test below runs. */
std::vector<KlCase> cases() {
  std::vector<KlCase> out;
  for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
    KlCase a;  // TND, three batches, causal cr 4 with residuals, two rows past cu[B]
    a.dtype = dtype, a.heads = 16, a.topk = 24, a.cmpRatio = 4;
    a.qLens = {20, 7, 33}, a.kLens = {5, 3, 9}, a.residual = {2, 0, 3}, a.extraQueryRows = 2, a.extraKeyRows = 3;
    out.push_back(a);
    KlCase b;  // BSND, no mask, K past the keys (slots -1), seqused on both sides
    b.tnd = false, b.dtype = dtype, b.heads = 5, b.topk = 70, b.maskMode = 0;
    b.qLens = {9, 9}, b.kLens = {80, 80}, b.usedQ = {9, 4}, b.usedK = {80, 61};
    out.push_back(b);
    KlCase c;  // TND causal cr 1 (the upstream example's rule), junk indices and p
    c.dtype = dtype, c.heads = 64, c.topk = 130, c.qLens = {40, 150}, c.kLens = {30, 140}, c.junk = true;
    out.push_back(c);
    KlCase d;  // BSND causal cr 2, seqused: a batch without queries, one without keys; N1 = 1
    d.tnd = false, d.dtype = dtype, d.heads = 1, d.topk = 8, d.cmpRatio = 2, d.qLens = {12, 12, 12},
    d.kLens = {7, 7, 7}, d.usedQ = {12, 0, 5}, d.usedK = {7, 3, 0}, d.residual = {1, 0, 1};
    out.push_back(d);
  }
  return out;
}

TEST(KlGradValues, MatchesGolden) {
  for (const KlCase& c : cases()) {
    KlData d(c);
    ASSERT_EQ(d.runApi(), ACLNN_SUCCESS) << where(c) << ": " << aclGetRecentErrMsg();
    const golden::KlGradients<double> g = d.golden();
    // Measured (normwise): dq, dk 0.0022-0.0026 bf16, 0.00028-0.00033 fp16 (dS and the outputs rounded to the io
    // dtype); dw 2e-7-1.3e-6; y 7e-8-5e-7 (max norm). The bounds leave about 1.5x.
    const double io = c.dtype == ACL_BF16 ? 0.004 : 0.0005;
    EXPECT_LT(normwiseError(d.dq.widened(), g.dq), io) << where(c);
    EXPECT_LT(normwiseError(d.dk.widened(), g.dk), io) << where(c);
    EXPECT_LT(normwiseError(d.dw.widened(), g.dw), 2e-6) << where(c);
    EXPECT_LT(maxNormError(d.softmaxOut.widened(), g.softmaxOut), 1e-6) << where(c);
    EXPECT_EQ(normwiseError(d.dk.widened(), g.dk) == 0, false) << "the comparison ran: " << where(c);
  }
}

TEST(KlGradValues, EveryOutputElementWritten) {
  // Outputs start as 0xA5 bytes; idle rows, idle keys, empty rows and unselected keys must read exactly 0.
  for (const KlCase& c : cases()) {
    KlData d(c);
    ASSERT_EQ(d.runApi(), ACLNN_SUCCESS) << where(c) << ": " << aclGetRecentErrMsg();
    const golden::KlGradients<double> g = d.golden();
    const auto check = [&](const Buffer& out, const std::vector<double>& gold, const char* name) {
      for (int64_t i = 0; i < out.size(); ++i) {
        const double v = out.get(i);
        ASSERT_FALSE(std::isnan(v)) << where(c) << " " << name << "[" << i << "]";
        if (gold[static_cast<size_t>(i)] == 0) {
          ASSERT_EQ(v, 0.0) << where(c) << " " << name << "[" << i << "]";
        }
      }
    };
    check(d.dq, g.dq, "dq");
    check(d.dk, g.dk, "dk");
    check(d.dw, g.dw, "dw");
    check(d.softmaxOut, g.softmaxOut, "softmaxOut");
  }
}

TEST(KlGradValues, SimdMatchesScalarOnEveryTarget) {
  for (const KlCase& c : cases()) {
    for (GemmSums sums : {GemmSums::Sequential, GemmSums::Bf16Pairs}) {
      if (sums == GemmSums::Bf16Pairs && c.dtype != ACL_BF16) continue;
      KlData scalar(c);
      scalar.runKernels(kernels::kKlGradScalarKernels, sums);
      forEachFmaTarget([&](int64_t target) {
        KlData simd(c);
        simd.runKernels(kernels::kKlGradSimdKernels, sums);
        const std::string at =
            std::string(hwy::TargetName(target)) + " " + where(c) + (sums == GemmSums::Bf16Pairs ? " pairs" : "");
        EXPECT_EQ(simd.dq, scalar.dq) << at;
        EXPECT_EQ(simd.dk, scalar.dk) << at;
        EXPECT_EQ(simd.dw, scalar.dw) << at;
        EXPECT_EQ(simd.softmaxOut, scalar.softmaxOut) << at;
      });
    }
  }
}

TEST(KlGradValues, SameBitsForAnyThreadCount) {
  for (const KlCase& c : cases()) {
    KlData one(c);
    setThreadCount(1);
    ASSERT_EQ(one.runApi(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    for (int threads : {2, 3, 8}) {
      setThreadCount(threads);
      KlData other(c);
      ASSERT_EQ(other.runApi(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
      EXPECT_EQ(other.dq, one.dq) << threads << " threads, " << where(c);
      EXPECT_EQ(other.dk, one.dk) << threads << " threads, " << where(c);
      EXPECT_EQ(other.dw, one.dw) << threads << " threads, " << where(c);
      EXPECT_EQ(other.softmaxOut, one.softmaxOut) << threads << " threads, " << where(c);
    }
    setThreadCount(0);
  }
}

TEST(KlGradValues, StridedViewsEqualDense) {
  for (const KlCase& c : cases()) {
    KlData dense(c), strided(c);
    ASSERT_EQ(dense.runApi(false), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    ASSERT_EQ(strided.runApi(true), ACLNN_SUCCESS) << aclGetRecentErrMsg();
    EXPECT_EQ(strided.dq, dense.dq) << where(c);
    EXPECT_EQ(strided.dk, dense.dk) << where(c);
    EXPECT_EQ(strided.dw, dense.dw) << where(c);
    EXPECT_EQ(strided.softmaxOut, dense.softmaxOut) << where(c);
  }
}

TEST(KlGradValues, ManyTasksPerBatch) {
  // 700 query rows: the dk scatter-add runs in 16 tasks (rows i mod 16) whose partials are summed in task order.
  KlCase c;
  c.heads = 4, c.topk = 32, c.qLens = {700}, c.kLens = {40}, c.cmpRatio = 1, c.maskMode = 0;
  KlData d(c);
  const kernels::KlGradProblem p = ops::klProblemOf(d.dims, d.seq, c.maskMode, c.cmpRatio, c.dtype);
  EXPECT_EQ(p.batches[0].chunks, 16);
  ASSERT_EQ(d.runApi(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  const golden::KlGradients<double> g = d.golden();
  EXPECT_LT(normwiseError(d.dk.widened(), g.dk), 1.0 / 128);
  EXPECT_LT(normwiseError(d.dq.widened(), g.dq), 1.0 / 128);
}

TEST(KlGradValues, UpstreamExampleRows) {
  // The doc program: TND 16 rows, 4 keys, N1 8, K 512, all ones, causal cr 1: rows 0-11 see nothing (softmaxOut 0),
  // rows 12-15 see 1..4 keys of equal scores (y = 1 / c) and p = 1/c: every gradient 0.
  KlCase c;
  c.dtype = ACL_FLOAT16, c.heads = 8, c.topk = 512, c.qLens = {16}, c.kLens = {4};
  KlData d(c);
  for (int64_t i = 0; i < d.q.size(); ++i) d.q.set(i, 1.0f);
  for (int64_t i = 0; i < d.k.size(); ++i) d.k.set(i, 1.0f);
  for (int64_t i = 0; i < d.w.size(); ++i) d.w.set(i, 1.0f);
  std::vector<int32_t> idx(16 * 512, -1);
  std::vector<float> p(16 * 512, 0.0f);
  for (int64_t t = 0; t < 16; ++t) {
    const int64_t valid = std::min<int64_t>(std::max<int64_t>(1, t + 1), 4);
    for (int64_t j = 0; j < valid; ++j) {
      idx[static_cast<size_t>(t * 512 + j)] = static_cast<int32_t>(j);
      p[static_cast<size_t>(t * 512 + j)] = 1.0f / static_cast<float>(valid);
    }
  }
  std::memcpy(d.indices.data(), idx.data(), idx.size() * 4);
  std::memcpy(d.target.data(), p.data(), p.size() * 4);
  ASSERT_EQ(d.runApi(), ACLNN_SUCCESS) << aclGetRecentErrMsg();
  for (int64_t j = 0; j < 5; ++j) EXPECT_EQ(d.softmaxOut.get(j), 0.0f);
  for (int64_t t = 12; t < 16; ++t) {
    const float c12 = static_cast<float>(t - 11);
    for (int64_t j = 0; j < t - 11; ++j) EXPECT_EQ(d.softmaxOut.get(t * 512 + j), 1.0f / c12) << t << " " << j;
  }
  for (int64_t i = 0; i < d.dq.size(); ++i) ASSERT_EQ(d.dq.get(i), 0.0f) << i;
  for (int64_t i = 0; i < d.dk.size(); ++i) ASSERT_EQ(d.dk.get(i), 0.0f) << i;
}

}  // namespace
}  // namespace gradkit::test::kl_grad
