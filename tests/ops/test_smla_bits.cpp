// aclnnSparseFlashMla's bits: identical for 1, 2, 3 and 8 threads (through the C API and through the plan with that
// many workers), identical for the Highway kernel table on every FMA target this CPU runs and the plain scalar table
// (what GRADKIT_FORCE_SCALAR=1 selects), on each tile path (Highway: fp32 P; native bf16 with sequential or paired
// sums: P rounded to bf16; GRADKIT_TILE picks one per process, the plan's problem here), each path within the double
// benchmark of its own naive chain, and the paths told apart (they give other bits).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/parallel.h"
#include "ops/smla_values_util.h"

namespace gradkit::test::smla {
namespace {

/** Rows of one to three key tiles with odd tails, heads beyond one vector, every kind of part. */
std::vector<Spec> specs() {
  std::vector<Spec> all;
  Spec csa;  // CSA on paged KV: a band of 128 + up to 40 hostile top-k rows, padding rows
  csa.layoutKv = "PA_BBND";
  csa.n1 = 16;
  csa.qRows = {5, 9}, csa.qUsed = {4, 9};
  csa.oriRows = {150, 190}, csa.oriUsed = {150, 190};
  csa.cmpRows = {37, 47}, csa.cmpUsed = {37, 47}, csa.residual = {2, 2};
  csa.blockSize = 16, csa.ratio = 4, csa.cmpMode = 3, csa.cmpK = 40, csa.cmpKind = IndexKind::Hostile;
  all.push_back(csa);
  Spec dense;  // SWA mask 0 over 300 rows: three tiles, the last of 44
  dense.oriMode = 0, dense.winLeft = -1, dense.winRight = -1;
  dense.qRows = {3, 2}, dense.oriRows = {300, 131};
  dense.n1 = 5;
  dense.seed = 3;
  all.push_back(dense);
  Spec sparse;  // ori + cmp sparse on BSND with strided views and a -inf sink
  sparse.layoutQ = "BSND", sparse.layoutKv = "BSND";
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
  return s.layoutQ + "/" + s.layoutKv + (s.dtype == ACL_BF16 ? " bf16" : " fp16") + " n1 " + std::to_string(s.n1);
}

struct Path {
  const char* name;
  TilePath path;
  GemmSums sums;
};

std::vector<Path> pathsFor(aclDataType dtype) {
  std::vector<Path> paths{{"highway", TilePath::Highway, GemmSums::Sequential}};
  if (dtype == ACL_BF16) {
    paths.push_back({"native", TilePath::NativeBf16, GemmSums::Sequential});
    paths.push_back({"native-pairs", TilePath::NativeBf16, GemmSums::Bf16Pairs});
  }
  return paths;
}

void expectSameBits(const Result& a, const Result& b, const std::string& what) {
  ASSERT_EQ(a.status, ACLNN_SUCCESS) << a.message;
  ASSERT_EQ(b.status, ACLNN_SUCCESS) << b.message;
  EXPECT_EQ(a.outBits, b.outBits) << what << ": attnOut";
  EXPECT_EQ(a.lseBits, b.lseBits) << what << ": softmaxLse";
}

TEST(SmlaBits, SameBitsForAnyThreadCountThroughTheApi) {
  for (const Spec& s : specs()) {
    Data d(s);
    setThreadCount(1);
    const Result one = runApi(d);
    for (int threads : {2, 3, 8}) {
      setThreadCount(threads);
      expectSameBits(runApi(d), one, nameOf(s) + ", " + std::to_string(threads) + " threads");
    }
    setThreadCount(0);
  }
}

TEST(SmlaBits, EachTilePathIsDeterministicAndMatchesItsChain) {
  for (const Spec& s : specs()) {
    Data d(s);
    for (const Path& p : pathsFor(s.dtype)) {
      const std::string where = nameOf(s) + ", " + p.name;
      const Result scalar = runPlan(d, p.path, p.sums, kernels::kFaScalarKernels, 1);
      EXPECT_TRUE(matchesGolden(d, scalar, p.path == TilePath::NativeBf16)) << where;
      for (int workers : {1, 2, 3, 8}) {
        expectSameBits(runPlan(d, p.path, p.sums, kernels::kFaScalarKernels, workers), scalar,
                       where + ", scalar table, " + std::to_string(workers) + " workers");
      }
      forEachFmaTarget([&](int64_t target) {
        for (int workers : {1, 3}) {
          expectSameBits(
              runPlan(d, p.path, p.sums, kernels::kFaSimdKernels, workers), scalar,
              where + ", SIMD table on " + hwy::TargetName(target) + ", " + std::to_string(workers) + " workers");
        }
      });
    }
  }
}

TEST(SmlaBits, TheApiRunsThisProcesssTilePath) {
  for (const Spec& s : specs()) {
    Data d(s);
    const TilePathChoice choice = chooseTilePath(ACL_BF16);
    const bool native = s.dtype == ACL_BF16 && choice.path == TilePath::NativeBf16;
    const Result api = runApi(d);
    expectSameBits(runPlan(d, native ? TilePath::NativeBf16 : TilePath::Highway,
                           native ? choice.tileSums : GemmSums::Sequential, kernels::kFaScalarKernels, 2),
                   api, nameOf(s));
  }
}

TEST(SmlaBits, TheTilePathsGiveOtherBits) {
  // bf16 P (native) against fp32 P (Highway): the forced path is the one that runs.
  Data d(specs()[1]);
  const Result highway = runPlan(d, TilePath::Highway, GemmSums::Sequential, kernels::kFaScalarKernels, 1);
  const Result native = runPlan(d, TilePath::NativeBf16, GemmSums::Sequential, kernels::kFaScalarKernels, 1);
  const Result pairs = runPlan(d, TilePath::NativeBf16, GemmSums::Bf16Pairs, kernels::kFaScalarKernels, 1);
  EXPECT_NE(highway.outBits, native.outBits);
  EXPECT_NE(native.lseBits, pairs.lseBits);  // the scores' sums run in another order (out rounds it away here)
}

}  // namespace
}  // namespace gradkit::test::smla
