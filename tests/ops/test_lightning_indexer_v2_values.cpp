// LightningIndexerV2's values: the selection's order rules (ties to the lower index, NaN first, +0 above -0, -1 / -inf
// padding, offsets), the worked example of docs/lightning_indexer_v2.md through the public API, the SIMD kernel
// table against the scalar one on every FMA target this CPU runs (bit for bit) for both dtypes and both sums orders,
// the golden (fp64, written from the formulas) for BSND / TND / PA_BBND, strided views equal to dense ones with nothing
// written outside them, the same bytes for 1, 2, 3 and 8 threads, returnValue 0 leaving sparseValues untouched, the
// metadata tensor's contents never read, and aclnnLightningIndexerV2Metadata's image.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "aclnnop/aclnn_lightning_indexer_v2.h"
#include "aclnnop/aclnn_lightning_indexer_v2_metadata.h"
#include "core/parallel.h"
#include "golden/lightning_indexer_v2.h"
#include "gradkit/float_convert.h"
#include "ops/lightning_indexer/kernels/liv2_kernel.h"
#include "ops/lightning_indexer/kernels/liv2_topk.h"
#include "ops/mhc_test_util.h"
#include "ops/placed_tensor.h"

namespace gradkit::test::liv2 {
namespace {

using mhc::ScopedSoc;
using mhc::TensorPool;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int64_t kD = 128;

// ---- the selection ------------------------------------------------------------------------------------------------

std::vector<int32_t> select(const std::vector<float>& scores, int64_t topk, int64_t offset = 0,
                            std::vector<float>* values = nullptr) {
  std::vector<uint64_t> a(scores.size() + 1), b(scores.size() + 1);
  std::vector<int32_t> indices(static_cast<size_t>(topk));
  std::vector<float> v(static_cast<size_t>(topk));
  kernels::liv2SelectTopk(scores.data(), static_cast<int64_t>(scores.size()), topk, offset, indices.data(), v.data(),
                          {a.data(), b.data()});
  if (values != nullptr) *values = v;
  return indices;
}

TEST(LiV2Select, TiesGoToTheLowerIndex) {  // docs/lightning_indexer_v2.md: ties to the lower index
  EXPECT_EQ(select({2, 5, 5, 1}, 1), (std::vector<int32_t>{1}));
  EXPECT_EQ(select({2, 5, 5, 1}, 2), (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(select({7, 7, 7, 7, 7}, 3), (std::vector<int32_t>{0, 1, 2}));
}

TEST(LiV2Select, TotalOrderPaddingAndOffset) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> values;
  // NaN (any payload) first by index, then +inf, the numbers, +0 above -0, -inf last.
  EXPECT_EQ(select({1.0f, -nan, kInf, -0.0f, 0.0f, nan, -kInf, -2.0f}, 10, 100, &values),
            (std::vector<int32_t>{101, 105, 102, 100, 104, 103, 107, 106, -1, -1}));
  EXPECT_TRUE(std::isnan(values[0]) && std::isnan(values[1]));
  EXPECT_EQ(values[2], kInf);
  EXPECT_EQ(values[3], 1.0f);
  EXPECT_FALSE(std::signbit(values[4]));
  EXPECT_TRUE(std::signbit(values[5]));
  EXPECT_EQ(values[6], -2.0f);
  EXPECT_EQ(values[7], -kInf);
  EXPECT_EQ(values[8], -kInf);
  EXPECT_EQ(select({}, 3), (std::vector<int32_t>{-1, -1, -1}));
}

TEST(LiV2Select, AgreesWithTheGoldenOnRandomRows) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const auto count = static_cast<size_t>(rng() % 700);
    const int64_t topk = 1 + rng() % 600;
    std::vector<float> scores(count);
    for (float& s : scores) s = static_cast<float>(static_cast<int>(rng() % 64) - 32) * 0.25f;  // many ties
    std::vector<double> wide(scores.begin(), scores.end());
    const std::vector<int64_t> expected = golden::lightningIndexerV2Select(wide, topk);
    const std::vector<int32_t> got = select(scores, topk);
    for (size_t j = 0; j < got.size(); ++j) {
      ASSERT_EQ(got[j], j < expected.size() ? expected[j] : -1) << "trial " << trial << " slot " << j;
    }
  }
}

// ---- calls through the public API
// ------------------------------------------------------------------------------------

uint16_t bits16(aclDataType dtype, float value) {
  return dtype == ACL_FLOAT16 ? floatToHalf(value) : floatToBf16(value);
}
float value16(aclDataType dtype, uint16_t bits) { return dtype == ACL_FLOAT16 ? halfToFloat(bits) : bf16ToFloat(bits); }

/** A BSND or TND/TND call on host data (random unless set), run through both phases. */
struct Data {
  bool tnd = false, strided = false;
  aclDataType dtype = ACL_BF16;
  int64_t batch = 2, s1 = 9, s2 = 40, heads = 4, topk = 12, maskMode = 3, cmpRatio = 2, returnValue = 1;
  std::vector<int32_t> cuQ, cuK, residual{1, 0}, offsets;
  std::vector<uint16_t> q, k;
  std::vector<float> w;
  std::vector<int32_t> metadata = std::vector<int32_t>(1024, 0);
  bool passMetadata = true;

  int64_t rows() const { return tnd ? cuQ.back() : batch * s1; }
  int64_t keys() const { return tnd ? cuK.back() : batch * s2; }

  void randomize(uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    q.resize(static_cast<size_t>(rows() * heads * kD));
    k.resize(static_cast<size_t>(keys() * kD));
    w.resize(static_cast<size_t>(rows() * heads));
    for (uint16_t& x : q) x = bits16(dtype, u(rng));
    for (uint16_t& x : k) x = bits16(dtype, u(rng));
    for (float& x : w) x = u(rng);
  }

  struct Result {
    aclnnStatus status = -1;
    std::vector<int32_t> indices;
    std::vector<float> values;
    bool gapsIntact = true;
  };

  Result run() const {
    const std::vector<int64_t> lead = tnd ? std::vector<int64_t>{rows()} : std::vector<int64_t>{batch, s1};
    const auto shape = [&lead](std::initializer_list<int64_t> tail) {
      std::vector<int64_t> s = lead;
      s.insert(s.end(), tail);
      return s;
    };
    Placed tq(dtype, shape({heads, kD}), q.data(), strided);
    Placed tk(dtype, tnd ? std::vector<int64_t>{keys(), 1, kD} : std::vector<int64_t>{batch, s2, 1, kD}, k.data(),
              strided);
    Placed tw(ACL_FLOAT, shape({heads}), w.data(), strided);
    Placed tcq(ACL_INT32, {static_cast<int64_t>(cuQ.size())}, cuQ.data(), strided);
    Placed tck(ACL_INT32, {static_cast<int64_t>(cuK.size())}, cuK.data(), strided);
    Placed tres(ACL_INT32, {static_cast<int64_t>(residual.size())}, residual.data(), strided);
    Placed toff(ACL_INT32, shape({1}), offsets.empty() ? nullptr : offsets.data(), strided);
    Placed tmeta(ACL_INT32, {1024}, metadata.data(), strided);
    Placed ti(ACL_INT32, shape({1, topk}), nullptr, strided);
    Placed tv(ACL_FLOAT, shape({1, topk}), nullptr, strided);
    const bool useResidual = cmpRatio != 1 && maskMode != 0;
    char layout[8];
    std::strcpy(layout, tnd ? "TND" : "BSND");
    uint64_t size = 0;
    aclOpExecutor* executor = nullptr;
    Result r;
    r.status = aclnnLightningIndexerV2GetWorkspaceSize(
        tq.get(), tk.get(), tw.get(), tnd ? tcq.get() : nullptr, tnd ? tck.get() : nullptr, nullptr, nullptr,
        useResidual ? tres.get() : nullptr, nullptr, offsets.empty() ? nullptr : toff.get(),
        passMetadata ? tmeta.get() : nullptr, topk, -1, layout, layout, maskMode, cmpRatio, returnValue, ti.get(),
        tv.get(), &size, &executor);
    if (r.status != ACLNN_SUCCESS) {
      ADD_FAILURE() << aclGetRecentErrMsg();
      return r;
    }
    std::vector<uint64_t> workspace(size / 8 + 1);
    aclrtStream stream = nullptr;
    aclrtCreateStream(&stream);
    EXPECT_EQ(aclnnLightningIndexerV2(workspace.data(), size, executor, stream), ACLNN_SUCCESS);
    EXPECT_EQ(aclrtSynchronizeStream(stream), ACL_SUCCESS);
    aclrtDestroyStream(stream);
    r.indices = ti.gather<int32_t>();
    r.values = tv.gather<float>();
    r.gapsIntact = ti.gapsIntact() && tv.gapsIntact();
    return r;
  }

  golden::LightningIndexerV2Problem problem() const {
    golden::LightningIndexerV2Problem p;
    p.heads = heads;
    p.topk = topk;
    p.cmpRatio = cmpRatio;
    p.maskMode = maskMode;
    p.rows = rows();
    for (int64_t b = 0; b < batch; ++b) {
      const auto ub = static_cast<size_t>(b);
      const int64_t first = tnd ? cuQ[ub] : b * s1, used = tnd ? cuQ[ub + 1] - cuQ[ub] : s1;
      const int64_t keysB = tnd ? cuK[ub + 1] - cuK[ub] : s2;
      p.batches.push_back({first, used, keysB, cmpRatio != 1 && maskMode != 0 ? residual[ub] : 0});
    }
    return p;
  }

  int64_t firstKey(int64_t b) const { return tnd ? cuK[static_cast<size_t>(b)] : b * s2; }
};

// The fp64 golden of `d` against its result: every used row's count exact, the set equal up to keys within 1e-5
// relative of the K-th score, sorted, values within 1e-5 relative (of the row's largest |score|) of the fp64 scores.
void expectMatchesGolden(const Data& d, const Data::Result& r, const std::string& what) {
  std::vector<double> q(d.q.size()), k(d.k.size()), w(d.w.begin(), d.w.end());
  for (size_t i = 0; i < q.size(); ++i) q[i] = value16(d.dtype, d.q[i]);
  for (size_t i = 0; i < k.size(); ++i) k[i] = value16(d.dtype, d.k[i]);
  const golden::LightningIndexerV2Problem p = d.problem();
  const golden::LightningIndexerV2Keys<double> keys = [&](int64_t b, int64_t s) {
    return k.data() + (d.firstKey(b) + s) * kD;
  };
  const auto scores = golden::lightningIndexerV2Scores<double>(p, q.data(), w.data(), keys);
  for (int64_t row = 0; row < d.rows(); ++row) {
    const std::vector<double>& g = scores[static_cast<size_t>(row)];
    const std::vector<int64_t> expected = golden::lightningIndexerV2Select(g, d.topk);
    const int64_t offset = d.offsets.empty() ? 0 : d.offsets[static_cast<size_t>(row)];
    double scale = 0.0;
    for (double x : g) scale = std::max(scale, std::fabs(x));
    const double tolerance = 1e-5 * scale;
    std::set<int64_t> mine;
    for (int64_t j = 0; j < d.topk; ++j) {
      const size_t at = static_cast<size_t>(row * d.topk + j);
      if (j >= static_cast<int64_t>(expected.size())) {
        ASSERT_EQ(r.indices[at], -1) << what << " row " << row << " slot " << j;
        if (d.returnValue == 1) {
          ASSERT_EQ(r.values[at], -kInf) << what << " row " << row << " slot " << j;
        }
        continue;
      }
      const int64_t key = r.indices[at] - offset;
      ASSERT_TRUE(key >= 0 && key < static_cast<int64_t>(g.size())) << what << " row " << row << " slot " << j;
      mine.insert(key);
      if (d.returnValue == 1) {
        EXPECT_NEAR(r.values[at], g[static_cast<size_t>(key)], tolerance) << what;
      }
      if (j > 0) {
        const int64_t before = r.indices[at - 1] - offset;
        EXPECT_GE(g[static_cast<size_t>(before)], g[static_cast<size_t>(key)] - tolerance) << what << " row " << row;
      }
    }
    const double last = expected.empty() ? 0.0 : g[static_cast<size_t>(expected.back())];
    for (int64_t x : expected) {
      if (mine.count(x) == 0) {
        EXPECT_NEAR(g[static_cast<size_t>(x)], last, tolerance)
            << what << " row " << row << ": key " << x << " left out";
      }
    }
  }
}

TEST(LiV2Values, WorkedExampleOfTheSpec) {
  // docs/lightning_indexer_v2.md's worked example: N1 = 2, q heads (1, 0) and (0, 1) (the rest of D zero), w = (1, 2),
  // keys k0 = (1, 1), k1 = (2, -1); cr 4, Sk 2, residual 1, three rows, causal, K = 2:
  // rows [0, -1] [3, -inf], [0, 1] [3, 2], [0, 1] [3, 2].
  for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
    Data d;
    d.dtype = dtype;
    d.batch = 1, d.s1 = 3, d.s2 = 2, d.heads = 2, d.topk = 2, d.cmpRatio = 4, d.residual = {1};
    d.q.assign(static_cast<size_t>(3 * 2 * kD), 0);
    d.k.assign(static_cast<size_t>(2 * kD), 0);
    for (int64_t row = 0; row < 3; ++row) {
      d.q[static_cast<size_t>((row * 2 + 0) * kD + 0)] = bits16(dtype, 1.0f);
      d.q[static_cast<size_t>((row * 2 + 1) * kD + 1)] = bits16(dtype, 1.0f);
    }
    d.k[0] = d.k[1] = d.k[kD] = bits16(dtype, 1.0f);
    d.k[kD] = bits16(dtype, 2.0f);
    d.k[kD + 1] = bits16(dtype, -1.0f);
    d.w = {1, 2, 1, 2, 1, 2};
    const Data::Result r = d.run();
    EXPECT_EQ(r.indices, (std::vector<int32_t>{0, -1, 0, 1, 0, 1}));
    EXPECT_EQ(r.values, (std::vector<float>{3, -kInf, 3, 2, 3, 2}));
  }
}

TEST(LiV2Values, MatchTheGolden) {
  for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
    for (int64_t mode : {0, 3}) {
      Data bsnd;
      bsnd.dtype = dtype;
      bsnd.maskMode = mode;
      bsnd.randomize(11);
      expectMatchesGolden(bsnd, bsnd.run(), "BSND mode " + std::to_string(mode));
      Data tnd;
      tnd.tnd = true;
      tnd.dtype = dtype;
      tnd.maskMode = mode;
      tnd.cmpRatio = 3;
      tnd.residual = {2, 0, 1};
      tnd.batch = 3;
      tnd.cuQ = {0, 13, 13, 30};
      tnd.cuK = {0, 7, 50, 90};
      tnd.topk = 20;
      tnd.randomize(12);
      tnd.offsets.resize(static_cast<size_t>(tnd.rows()));
      for (size_t i = 0; i < tnd.offsets.size(); ++i) tnd.offsets[i] = static_cast<int32_t>(i * 3);
      expectMatchesGolden(tnd, tnd.run(), "TND mode " + std::to_string(mode));
    }
  }
}

TEST(LiV2Values, StridedViewsEqualDenseOnes) {
  for (aclDataType dtype : {ACL_BF16, ACL_FLOAT16}) {
    Data d;
    d.dtype = dtype;
    d.randomize(3);
    d.offsets.assign(static_cast<size_t>(d.rows()), 5);
    const Data::Result dense = d.run();
    d.strided = true;
    const Data::Result strided = d.run();
    EXPECT_EQ(dense.indices, strided.indices);
    EXPECT_EQ(std::memcmp(dense.values.data(), strided.values.data(), dense.values.size() * sizeof(float)), 0);
    EXPECT_TRUE(strided.gapsIntact);
  }
}

TEST(LiV2Values, SameBytesForAnyThreadCount) {
  Data d;
  d.batch = 3, d.s1 = 70, d.s2 = 300, d.heads = 16, d.topk = 64, d.residual = {0, 1, 1};
  d.randomize(5);
  setThreadCount(1);
  const Data::Result one = d.run();
  for (int threads : {2, 3, 8}) {
    setThreadCount(threads);
    const Data::Result other = d.run();
    EXPECT_EQ(one.indices, other.indices) << threads;
    EXPECT_EQ(std::memcmp(one.values.data(), other.values.data(), one.values.size() * sizeof(float)), 0) << threads;
  }
  setThreadCount(0);
}

TEST(LiV2Values, ReturnValueZeroMetadataAndProfiles) {
  Data d;
  d.randomize(9);
  const Data::Result reference = d.run();
  d.returnValue = 0;
  const Data::Result noValues = d.run();
  EXPECT_EQ(noValues.indices, reference.indices);
  for (float v : noValues.values) {  // Placed fills an output's view with 0x7F bytes: untouched
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    EXPECT_EQ(bits, 0x7F7F7F7Fu);
  }
  d.returnValue = 1;
  for (int32_t& word : d.metadata) word = -12345;  // contents never read
  EXPECT_EQ(d.run().indices, reference.indices);
  ScopedSoc soc("Ascend910B");
  d.passMetadata = false;  // optional and ignored on A2
  EXPECT_EQ(d.run().indices, reference.indices);
}

// ---- the kernel tables ----------------------------------------------------------------------------------------------

struct KernelCase {
  aclDataType dtype;
  GemmSums sums;
};

std::vector<unsigned char> runKernels(const KernelCase& kc, const kernels::LiV2Kernels& table, int threads) {
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  kernels::LiV2Problem p;
  p.heads = 7, p.topk = 33, p.cmpRatio = 3, p.maskMode = 3, p.queryRows = 50, p.dtype = kc.dtype, p.sums = kc.sums;
  p.batches = {{0, 20, 18, 0, 150, 2}, {20, 30, 30, 150, 77, 0}};
  std::vector<uint16_t> q(static_cast<size_t>(50 * 7 * kD)), k(static_cast<size_t>(227 * kD));
  std::vector<float> w(50 * 7);
  for (uint16_t& x : q) x = bits16(kc.dtype, u(rng));
  for (uint16_t& x : k) x = bits16(kc.dtype, u(rng));
  for (float& x : w) x = u(rng);
  std::vector<int32_t> indices(static_cast<size_t>(50 * 33));
  std::vector<float> values(indices.size());
  p.q = q.data(), p.k = k.data(), p.w = w.data(), p.indices = indices.data(), p.values = values.data();
  const kernels::LiV2Schedule s = kernels::liv2Schedule(p, threads, table);
  std::vector<uint64_t> scratch(kernels::liv2ScratchBytes(s) / 8 + 1);
  kernels::liv2Run(p, s, scratch.data());
  std::vector<unsigned char> bytes(indices.size() * 4 + values.size() * 4);
  std::memcpy(bytes.data(), indices.data(), indices.size() * 4);
  std::memcpy(bytes.data() + indices.size() * 4, values.data(), values.size() * 4);
  return bytes;
}

TEST(LiV2Kernels, SimdTablesMatchTheScalarOneBitForBit) {
  for (const KernelCase& kc : {KernelCase{ACL_BF16, GemmSums::Sequential}, KernelCase{ACL_BF16, GemmSums::Bf16Pairs},
                               KernelCase{ACL_FLOAT16, GemmSums::Sequential}}) {
    const std::vector<unsigned char> scalar = runKernels(kc, kernels::kLiV2ScalarKernels, 1);
    forEachFmaTarget([&](int64_t target) {
      EXPECT_EQ(runKernels(kc, kernels::kLiV2SimdKernels, 3), scalar) << hwy::TargetName(target);
    });
  }
}

TEST(LiV2Kernels, RowsBeyondTheUsedOnesHoldOnlyPlaceholders) {
  kernels::LiV2Problem p;
  p.heads = 1, p.topk = 4, p.queryRows = 5, p.dtype = ACL_BF16;
  p.batches = {{1, 3, 1, 0, 2, 0}};  // row 0 no batch, row 1 used, rows 2-3 past seqused, row 4 no batch
  std::vector<uint16_t> q(static_cast<size_t>(5 * kD), floatToBf16(1.0f)),
      k(static_cast<size_t>(2 * kD), floatToBf16(1.0f));
  std::vector<float> w(5, 1.0f), values(20, 0.0f);
  std::vector<int32_t> indices(20, 7);
  p.q = q.data(), p.k = k.data(), p.w = w.data(), p.indices = indices.data(), p.values = values.data();
  const kernels::LiV2Schedule s = kernels::liv2Schedule(p, 2, kernels::kLiV2SimdKernels);
  std::vector<uint64_t> scratch(kernels::liv2ScratchBytes(s) / 8 + 1);
  kernels::liv2Run(p, s, scratch.data());
  EXPECT_EQ(indices,
            (std::vector<int32_t>{-1, -1, -1, -1, 0, 1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1}));
  EXPECT_EQ(values[4], 128.0f);
  EXPECT_EQ(values[0], -kInf);
  EXPECT_EQ(values[19], -kInf);
}

// ---- the metadata op ------------------------------------------------------------------------------------------------

std::vector<int32_t> metadataImage(int64_t batch, int64_t s1, int64_t s2, int64_t heads, std::vector<int32_t> residual,
                                   int64_t maskMode, int64_t cmpRatio) {
  TensorPool pool;
  aclTensor* meta = pool.make(ACL_INT32, {1024});
  aclTensor* res = nullptr;
  if (!residual.empty()) {
    res = pool.make(ACL_INT32, {static_cast<int64_t>(residual.size())});
    std::memcpy(res->data, residual.data(), residual.size() * 4);
  }
  char bsnd[] = "BSND";
  uint64_t size = 0;
  aclOpExecutor* executor = nullptr;
  EXPECT_EQ(
      aclnnLightningIndexerV2MetadataGetWorkspaceSize(nullptr, nullptr, nullptr, nullptr, res, heads, 1, 128, 32, batch,
                                                      s1, s2, bsnd, bsnd, maskMode, cmpRatio, meta, &size, &executor),
      ACLNN_SUCCESS)
      << aclGetRecentErrMsg();
  aclrtStream stream = nullptr;
  aclrtCreateStream(&stream);
  EXPECT_EQ(aclnnLightningIndexerV2Metadata(nullptr, size, executor, stream), ACLNN_SUCCESS);
  aclrtSynchronizeStream(stream);
  aclrtDestroyStream(stream);
  std::vector<int32_t> words(1024);
  std::memcpy(words.data(), meta->data, 4096);
  return words;
}

TEST(LiV2Metadata, CoreRangesTileTheGrid) {
  // Upstream's example call with its residual: the cube cores' ranges follow each other without gaps or overlaps and
  // end at (B * N2, 0, 0); the disabled rows and the unused words stay 0.
  for (const char* name : {"Ascend950", "Ascend910B"}) {
    ScopedSoc soc(name);
    const std::vector<int32_t> w = metadataImage(2, 64, 32, 16, {2, 2}, 3, 4);
    int64_t used = 0;
    while (used < 36 && w[static_cast<size_t>(used * 8)] == 1) ++used;
    ASSERT_GE(used, 1) << name;
    for (int64_t core = 1; core < used; ++core) {
      for (int f = 0; f < 3; ++f)
        EXPECT_EQ(w[static_cast<size_t>(core * 8 + 1 + f)], w[static_cast<size_t>((core - 1) * 8 + 4 + f)]);
    }
    EXPECT_EQ(w[static_cast<size_t>((used - 1) * 8 + 4)], 2) << name;
    for (size_t i = static_cast<size_t>(used * 8); i < 288; ++i) EXPECT_EQ(w[i], 0) << name << " word " << i;
    for (size_t i = 864; i < 1024; ++i) EXPECT_EQ(w[i], 0) << name << " word " << i;
  }
}

}  // namespace
}  // namespace gradkit::test::liv2
