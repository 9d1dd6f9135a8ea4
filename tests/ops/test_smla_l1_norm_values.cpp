// aclnnSparseFlashMlaSoftmaxL1Norm values through the C API against golden::sparseFlashMlaSoftmaxL1Norm (fp64, the Cmp
// part of a problem without ori rows) under the double benchmark of the matmul ops (DECISIONS.md: RMS and max error no
// worse than twice the naive fp32 computation's), with the forward's own lse as softmaxLse: dense (HCA) under masks 0
// and 3 with residuals, sparse (CSA) with -1 padding, duplicates, dropped entries and top-k lengths under both masks,
// BSND and TND (TND dense wider than the keys: maxSeqlenK), FLOAT16 and BFLOAT16, N1 1 .. 128, padding rows
// (sequsedQ, TND rows after cuSeqlensQ[B]), used key lengths (sequsedK), rows that see nothing and unused slots
// (exactly +0), strided q / k / lse / output / INT32 views, rows of several key tiles. Then the bits: identical for
// 1, 2, 3 and 8 threads, for the Highway and scalar kernel tables on each tile path, each path within the benchmark.
#include <gtest/gtest.h>

#include <cstring>
#include <ostream>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "ops/smla_l1_values_util.h"

namespace gradkit::test::smla {
namespace {

struct Named {
  std::string name;
  L1Spec l;
};

void PrintTo(const Named& named, std::ostream* os) { *os << named.name; }

/** HCA over compressed keys of ratio 4, mask 3 (R = C * 4 + residual). */
L1Spec hca(const std::string& layout, aclDataType dtype = ACL_BF16) {
  L1Spec l;
  Spec& s = l.s;
  s.dtype = dtype;
  s.layoutQ = layout;
  if (layout == "BSND") s.qRows = {6, 6};
  s.cmpRows = layout == "BSND" ? std::vector<int64_t>{9, 9} : std::vector<int64_t>{7, 9};
  if (layout == "BSND") s.cmpUsed = {7, 9};
  s.residual = {2, 3};
  s.ratio = 4;
  s.cmpMode = 3;
  return l;
}

/** CSA: top-k entries of the visible compressed keys. */
L1Spec csa(const std::string& layout, int64_t k, IndexKind kind, aclDataType dtype = ACL_BF16) {
  L1Spec l = hca(layout, dtype);
  l.s.cmpK = k;
  l.s.cmpKind = kind;
  return l;
}

std::vector<Named> cases() {
  std::vector<Named> all;
  for (const char* layout : {"BSND", "TND"}) {
    for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
      const std::string tag = std::string(layout) + (dtype == ACL_BF16 ? " bf16" : " fp16");
      all.push_back({"HCA mask 3 " + tag, hca(layout, dtype)});
      all.push_back({"CSA valid " + tag, csa(layout, 5, IndexKind::Valid, dtype)});
      all.push_back({"CSA hostile " + tag, csa(layout, 6, IndexKind::Hostile, dtype)});
    }
    L1Spec dense0 = hca(layout);
    dense0.s.cmpMode = 0, dense0.s.residual.clear();
    all.push_back({std::string("dense mask 0 ") + layout, dense0});
    L1Spec lengths = csa(layout, 7, IndexKind::Uniform);
    lengths.s.cmpMode = 0, lengths.s.residual.clear(), lengths.s.cmpLengths = true;
    all.push_back({std::string("CSA mask 0 with top-k lengths ") + layout, lengths});
    L1Spec lengths3 = csa(layout, 7, IndexKind::Hostile);
    lengths3.s.cmpLengths = true;
    all.push_back({std::string("CSA mask 3 with top-k lengths too ") + layout, lengths3});
    L1Spec padded = csa(layout, 4, IndexKind::Hostile);
    padded.s.qUsed = layout == std::string("BSND") ? std::vector<int64_t>{4, 6} : std::vector<int64_t>{2, 5};
    padded.s.extraQRows = layout == std::string("TND") ? 3 : 0;
    padded.s.cmpUsed = {5, 9};
    all.push_back({std::string("padding rows and used keys ") + layout, padded});
    L1Spec strided = hca(layout);
    strided.s.stridedQ = true, strided.s.stridedKv = true, strided.s.stridedSmall = true;
    strided.stridedLse = true, strided.stridedL1 = true;
    all.push_back({std::string("strided views ") + layout, strided});
    L1Spec stridedSparse = csa(layout, 5, IndexKind::Hostile, ACL_FLOAT16);
    stridedSparse.s.kvElementStride = true, stridedSparse.s.stridedSmall = true, stridedSparse.stridedL1 = true;
    all.push_back({std::string("strided sparse ") + layout, stridedSparse});
  }
  L1Spec wide = hca("TND");
  wide.maxSeqlenK = 20;  // the output wider than every batch's keys: the rest is 0
  all.push_back({"TND dense maxSeqlenK 20", wide});
  L1Spec nothing = hca("TND");  // early rows of a causal mask see no compressed key
  nothing.s.qRows = {9, 2}, nothing.s.cmpRows = {2, 3}, nothing.s.residual = {1, 0};
  all.push_back({"rows that see nothing", nothing});
  for (int64_t n1 : {1, 3, 16, 128}) {
    L1Spec heads = csa("TND", 9, IndexKind::Uniform);
    heads.s.n1 = n1;
    all.push_back({"N1 " + std::to_string(n1), heads});
  }
  L1Spec tiles = hca("TND");  // one row of three key tiles (300 keys, the last tile 44)
  tiles.s.cmpMode = 0, tiles.s.residual.clear(), tiles.s.qRows = {2, 3}, tiles.s.cmpRows = {300, 131};
  tiles.s.n1 = 5;
  all.push_back({"three key tiles", tiles});
  L1Spec longTopk = csa("BSND", 300, IndexKind::Uniform);  // K over two tiles
  longTopk.s.cmpRows = {280, 280}, longTopk.s.cmpUsed = {250, 280}, longTopk.s.qRows = {3, 3};
  all.push_back({"top-k 300", longTopk});
  return all;
}

class SmlaL1Values : public ::testing::TestWithParam<Named> {};

TEST_P(SmlaL1Values, MatchesTheGolden) {
  L1Data d(GetParam().l);
  const L1Result r = runL1Api(d);
  EXPECT_TRUE(l1MatchesGolden(d, r));
}

INSTANTIATE_TEST_SUITE_P(Cases, SmlaL1Values, ::testing::ValuesIn(cases()));

TEST(SmlaL1Values, RowsSumToOneWhenTheLseIsTheForwards) {  // the forward's lse without sinks: a distribution per row
  L1Spec l = hca("TND");
  L1Data d(l);
  const L1Result r = runL1Api(d);
  ASSERT_EQ(r.status, ACLNN_SUCCESS) << r.message;
  for (int64_t t = 0; t < d.d.tokens; ++t) {
    double sum = 0;
    for (int64_t c = 0; c < d.width; ++c) {
      float v;
      std::memcpy(&v, &r.bits[static_cast<size_t>(t * d.width + c)], 4);
      sum += v;
    }
    if (sum != 0) {
      EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << t;
    }
  }
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

std::vector<L1Spec> bitsSpecs() {
  L1Spec sparse = csa("TND", 150, IndexKind::Hostile);
  sparse.s.qRows = {5, 9}, sparse.s.qUsed = {4, 9}, sparse.s.cmpRows = {170, 190}, sparse.s.residual = {2, 2};
  sparse.s.n1 = 16;
  L1Spec dense = hca("BSND");
  dense.s.cmpMode = 0, dense.s.residual.clear(), dense.s.cmpRows = {200, 200}, dense.s.n1 = 5;
  L1Spec fp16 = sparse;
  fp16.s.dtype = ACL_FLOAT16;
  return {sparse, dense, fp16};
}

TEST(SmlaL1Bits, SameBitsForAnyThreadCountThroughTheApi) {
  for (const L1Spec& l : bitsSpecs()) {
    L1Data d(l);
    setThreadCount(1);
    const L1Result one = runL1Api(d);
    ASSERT_EQ(one.status, ACLNN_SUCCESS) << one.message;
    for (int threads : {2, 3, 8}) {
      setThreadCount(threads);
      EXPECT_EQ(runL1Api(d).bits, one.bits) << threads << " threads";
    }
    setThreadCount(0);
  }
}

TEST(SmlaL1Bits, SameBitsForTheSimdAndScalarTablesOnEachPath) {
  for (const L1Spec& l : bitsSpecs()) {
    L1Data d(l);
    for (const Path& path : pathsFor(l.s.dtype)) {
      const L1Result scalar = runL1Plan(d, path.path, path.sums, kernels::kFaScalarKernels, 1);
      EXPECT_TRUE(l1MatchesGolden(d, scalar)) << path.name;
      for (int workers : {2, 3, 8}) {
        EXPECT_EQ(runL1Plan(d, path.path, path.sums, kernels::kFaScalarKernels, workers).bits, scalar.bits)
            << path.name << ", scalar table, " << workers << " workers";
      }
      forEachFmaTarget([&](int64_t target) {
        for (int workers : {1, 3}) {
          EXPECT_EQ(runL1Plan(d, path.path, path.sums, kernels::kFaSimdKernels, workers).bits, scalar.bits)
              << path.name << ", SIMD table on " << hwy::TargetName(target) << ", " << workers << " workers";
        }
      });
    }
  }
}

TEST(SmlaL1Bits, TheApiRunsThisProcesssTilePath) {
  for (const L1Spec& l : bitsSpecs()) {
    L1Data d(l);
    const TilePathChoice choice = chooseTilePath(ACL_BF16);
    const bool native = l.s.dtype == ACL_BF16 && choice.path == TilePath::NativeBf16;
    EXPECT_EQ(runL1Plan(d, native ? TilePath::NativeBf16 : TilePath::Highway,
                        native ? choice.tileSums : GemmSums::Sequential, kernels::kFaScalarKernels, 2)
                  .bits,
              runL1Api(d).bits);
  }
}

}  // namespace
}  // namespace gradkit::test::smla
