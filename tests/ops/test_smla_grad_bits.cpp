// aclnnSparseFlashMlaGrad's bits: identical for 1, 2, 3 and 8 threads (through the C API and through the plan with
// that many workers), identical for the Highway kernel table (on every Highway target with FMA this CPU runs) and the
// plain scalar table on each tile path (Highway:
// fp32 P and dS; native bf16 with sequential or paired sums: P and dS rounded to bf16), each path within the double
// benchmark of its own naive chain.
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "hwy/targets.h"
#include "ops/op_test_util.h"
#include "ops/smla_grad_util.h"

namespace gradkit::test::smla {
namespace {

std::vector<Spec> specs() {
  std::vector<Spec> all;
  Spec csa;  // CSA: a band of 128 + up to 40 hostile top-k rows, padding rows, odd tails
  csa.n1 = 16;
  csa.qRows = {5, 40}, csa.qUsed = {4, 40};
  csa.oriRows = {150, 190};
  csa.cmpRows = {37, 47}, csa.residual = {2, 2};
  csa.ratio = 4, csa.cmpMode = 3, csa.cmpK = 40, csa.cmpKind = IndexKind::Hostile;
  all.push_back(csa);
  Spec dense;  // SWA mask 0 over 300 rows: three tiles, the last of 44
  dense.oriMode = 0, dense.winLeft = -1, dense.winRight = -1;
  dense.qRows = {3, 2}, dense.oriRows = {300, 131};
  dense.n1 = 5, dense.seed = 3;
  all.push_back(dense);
  Spec sparse;  // ori + cmp sparse, BSND, strided views, a -inf sink
  sparse.layoutQ = sparse.layoutKv = "BSND";
  sparse.qRows = {7, 7}, sparse.oriRows = {140, 140}, sparse.oriUsed = {133, 140};
  sparse.cmpRows = {35, 35}, sparse.residual = {1, 0}, sparse.ratio = 4, sparse.cmpMode = 3;
  sparse.oriMode = 3, sparse.winLeft = -1, sparse.winRight = -1;
  sparse.oriK = 130, sparse.oriKind = IndexKind::Hostile, sparse.cmpK = 9, sparse.cmpKind = IndexKind::Uniform;
  sparse.n1 = 3, sparse.sinks = {0.25f, -std::numeric_limits<float>::infinity(), -0.5f};
  sparse.stridedQ = true, sparse.stridedOut = true, sparse.stridedKv = true;
  all.push_back(sparse);
  for (size_t k = 0, n = all.size(); k < n; ++k) {
    Spec fp16 = all[k];
    fp16.dtype = ACL_FLOAT16;
    all.push_back(fp16);
  }
  return all;
}

std::string nameOf(const Spec& s) {
  return s.layoutQ + (s.dtype == ACL_BF16 ? " bf16" : " fp16") + " n1 " + std::to_string(s.n1);
}

struct Path {
  const char* name;
  TilePath path;
  GemmSums sums;
};

TEST(SmlaGradBits, ThreadCountsGiveTheSameBits) {
  for (const Spec& s : specs()) {
    GradData g(s);
    setThreadCount(1);
    const GradResult one = runGradApi(g);
    ASSERT_EQ(one.status, ACLNN_SUCCESS) << one.message;
    for (int threads : {2, 3, 8}) {
      setThreadCount(threads);
      EXPECT_TRUE(sameBits(one, runGradApi(g))) << nameOf(s) << ", " << threads << " threads (API)";
      const TilePathChoice choice = s.dtype == ACL_BF16 ? chooseTilePath(ACL_BF16) : TilePathChoice{};
      EXPECT_TRUE(sameBits(one, runGradPlan(g, {}, choice.path, choice.tileSums, kernels::faKernels(), threads)))
          << nameOf(s) << ", " << threads << " workers (plan)";
    }
    setThreadCount(0);
  }
}

TEST(SmlaGradBits, SimdEqualsScalarOnEveryPath) {
  const std::vector<Path> paths = {{"highway", TilePath::Highway, GemmSums::Sequential},
                                   {"native", TilePath::NativeBf16, GemmSums::Sequential},
                                   {"native-pairs", TilePath::NativeBf16, GemmSums::Bf16Pairs}};
  for (const Spec& s : specs()) {
    GradData g(s);
    for (const Path& path : paths) {
      if (path.path == TilePath::NativeBf16 && s.dtype != ACL_BF16) continue;  // native runs bf16 inputs only
      const GradResult scalar = runGradPlan(g, {}, path.path, path.sums, kernels::kFaScalarKernels, 3);
      EXPECT_TRUE(gradMatchesGolden(g, scalar, {}, path.path == TilePath::NativeBf16)) << nameOf(s) << " " << path.name;
      forEachFmaTarget([&](int64_t target) {
        const GradResult simd = runGradPlan(g, {}, path.path, path.sums, kernels::kFaSimdKernels, 2);
        EXPECT_TRUE(sameBits(simd, scalar)) << nameOf(s) << " on " << path.name << ", " << hwy::TargetName(target);
      });
    }
  }
}

}  // namespace
}  // namespace gradkit::test::smla
